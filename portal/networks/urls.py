"""The network pages and a VM's NIC pages, routed under ``vdc/<str:vdc>/``: a network's id
``<zone>/<name>`` is its path; a VM's NICs are under its own path (``vms/<zone>/<vmid>/nics/``, two
segments deep so that the VM pages' ``<action>/`` does not take them)."""

from django.urls import path

from portal.networks import views

urlpatterns = [
    path("networks/", views.network_list, name="network-list"),
    path("networks/new/", views.network_create, name="network-create"),
    path("networks/<str:zone>/<str:network>/delete/", views.network_delete, name="network-delete"),
    path("vms/<str:zone>/<int:vmid>/nics/attach/", views.nic_attach, name="vm-nic-attach"),
    path("vms/<str:zone>/<int:vmid>/nics/<str:network>/detach/", views.nic_detach, name="vm-nic-detach"),
]
