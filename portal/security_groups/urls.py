"""The security-group pages and a VM's groups, routed under ``vdc/<str:vdc>/`` (a VM's under its own
path, two segments deep so that the VM pages' ``<action>/`` does not take them)."""

from django.urls import path

from portal.security_groups import views

urlpatterns = [
    path("security-groups/", views.group_list, name="security-group-list"),
    path("security-groups/new/", views.group_create, name="security-group-create"),
    path("security-groups/<str:group>/edit/", views.group_edit, name="security-group-edit"),
    path("security-groups/<str:group>/delete/", views.group_delete, name="security-group-delete"),
    path("vms/<str:zone>/<int:vmid>/security-groups/assign/", views.vm_assign, name="vm-security-groups"),
]
