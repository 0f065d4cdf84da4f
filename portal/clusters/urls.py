"""The Kubernetes pages, routed under ``vdc/<str:vdc>/``; a cluster's name is its path."""

from django.urls import path

from portal.clusters import views

urlpatterns = [
    path("kubernetes/", views.cluster_list, name="cluster-list"),
    path("kubernetes/new/", views.cluster_create, name="cluster-create"),
    path("kubernetes/<str:cluster>/", views.cluster_detail, name="cluster-detail"),
    path("kubernetes/<str:cluster>/scale/", views.cluster_scale, name="cluster-scale"),
    path("kubernetes/<str:cluster>/upgrade/", views.cluster_upgrade, name="cluster-upgrade"),
    path("kubernetes/<str:cluster>/delete/", views.cluster_delete, name="cluster-delete"),
    path("kubernetes/<str:cluster>/kubeconfig/", views.cluster_kubeconfig, name="cluster-kubeconfig"),
]
