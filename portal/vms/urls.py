"""The VM pages, routed under ``vdc/<str:vdc>/vms/``; a VM's id ``<zone>/<vmid>`` is its path."""

from django.urls import path

from portal.vms import snapshots, usage, views

urlpatterns = [
    path("", views.vm_list, name="vm-list"),
    path("new/", views.vm_create, name="vm-create"),
    path("<str:zone>/<int:vmid>/", views.vm_detail, name="vm-detail"),
    path("<str:zone>/<int:vmid>/row/", views.vm_row, name="vm-row"),
    path("<str:zone>/<int:vmid>/usage/", usage.vm_usage, name="vm-usage"),
    path("<str:zone>/<int:vmid>/snapshots/new/", snapshots.snapshot_create, name="vm-snapshot-create"),
    path(
        "<str:zone>/<int:vmid>/snapshots/<str:name>/<str:action>/",
        snapshots.snapshot_action,
        name="vm-snapshot-action",
    ),
    path("<str:zone>/<int:vmid>/<str:action>/", views.vm_action, name="vm-action"),
]
