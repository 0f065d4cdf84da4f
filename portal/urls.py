"""The portal's routes, every one of them, by section: one table, so that which route takes a path is
read in one place (Django tries them in order). The websocket routes are in ``portal.routing``."""

from django.urls import URLPattern, URLResolver, include, path
from mozilla_django_oidc.views import OIDCLogoutView

from portal import dashboard, oidc, tasks, views
from portal.access import organizations
from portal.access import views as access
from portal.activity import views as activity
from portal.admin import hosts
from portal.admin import views as admin
from portal.admin.sections import SECTIONS, Section
from portal.clusters import views as clusters
from portal.console import views as console
from portal.gateways import views as gateways
from portal.networks import views as networks
from portal.security_groups import views as security_groups
from portal.service_accounts import views as service_accounts
from portal.topology import views as topology
from portal.vms import bulk, snapshots, usage
from portal.vms import views as vms
from portal.volumes import views as volumes

# A VDC's pages, under ``vdc/<str:vdc>/``: an object's id is its path (a VM's ``<zone>/<vmid>``, a
# network's ``<zone>/<name>``, a cluster's name, a public IP's address).
vdc_routes: list[URLPattern] = [
    path("", dashboard.dashboard, name="vdc-dashboard"),
    path("tasks/<str:task_id>/", tasks.task_page, name="task"),
    path("topology/", topology.topology_page, name="vdc-topology"),
    # VMs, with their snapshots, NICs and security groups.
    path("vms/", vms.vm_list, name="vm-list"),
    path("vms/new/", vms.vm_create, name="vm-create"),
    path("vms/bulk/", bulk.vm_bulk, name="vm-bulk"),
    path("vms/<str:zone>/<int:vmid>/", vms.vm_detail, name="vm-detail"),
    path("vms/<str:zone>/<int:vmid>/row/", vms.vm_row, name="vm-row"),
    path("vms/<str:zone>/<int:vmid>/usage/", usage.vm_usage, name="vm-usage"),
    path("vms/<str:zone>/<int:vmid>/snapshots/new/", snapshots.snapshot_create, name="vm-snapshot-create"),
    path(
        "vms/<str:zone>/<int:vmid>/snapshots/<str:name>/<str:action>/",
        snapshots.snapshot_action,
        name="vm-snapshot-action",
    ),
    path("vms/<str:zone>/<int:vmid>/nics/attach/", networks.nic_attach, name="vm-nic-attach"),
    path("vms/<str:zone>/<int:vmid>/nics/<str:network>/detach/", networks.nic_detach, name="vm-nic-detach"),
    path(
        "vms/<str:zone>/<int:vmid>/security-groups/assign/",
        security_groups.vm_assign,
        name="vm-security-groups",
    ),
    # Last, as it takes any one segment below a VM: its actions (start, stop, resize...).
    path("vms/<str:zone>/<int:vmid>/<str:action>/", vms.vm_action, name="vm-action"),
    path("console/<str:zone>/<int:vmid>/", console.console_page, name="vm-console"),
    # Networks.
    path("networks/", networks.network_list, name="network-list"),
    path("networks/new/", networks.network_create, name="network-create"),
    path("networks/<str:zone>/<str:network>/delete/", networks.network_delete, name="network-delete"),
    # Security groups.
    path("security-groups/", security_groups.group_list, name="security-group-list"),
    path("security-groups/new/", security_groups.group_create, name="security-group-create"),
    path("security-groups/<str:group>/edit/", security_groups.group_edit, name="security-group-edit"),
    path("security-groups/<str:group>/delete/", security_groups.group_delete, name="security-group-delete"),
    # Volumes: disks that outlive VMs, and their snapshots.
    path("volumes/", volumes.volume_list, name="volume-list"),
    path("volumes/new/", volumes.volume_create, name="volume-create"),
    path("volumes/<str:zone>/<int:vmid>/attach/", volumes.volume_attach, name="volume-attach"),
    path("volumes/<str:zone>/<int:vmid>/detach/", volumes.volume_detach, name="volume-detach"),
    path("volumes/<str:zone>/<int:vmid>/resize/", volumes.volume_resize, name="volume-resize"),
    path("volumes/<str:zone>/<int:vmid>/", volumes.volume_detail, name="volume-detail"),
    path("volumes/<str:zone>/<int:vmid>/delete/", volumes.volume_delete, name="volume-delete"),
    path("volumes/<str:zone>/<int:vmid>/snapshots/new/", volumes.volume_snapshot, name="volume-snapshot"),
    # A volume's snapshots, which outlive it: by their own ids.
    path(
        "volumes/snapshots/<str:zone>/<int:vmid>/new-volume/",
        volumes.snapshot_new_volume,
        name="volume-snapshot-new-volume",
    ),
    path(
        "volumes/snapshots/<str:zone>/<int:vmid>/delete/",
        volumes.snapshot_delete,
        name="volume-snapshot-delete",
    ),
    # Service accounts: credentials for scripts.
    path("service-accounts/", service_accounts.account_list, name="service-account-list"),
    path("service-accounts/new/", service_accounts.account_create, name="service-account-create"),
    path(
        "service-accounts/<str:name>/revoke/", service_accounts.account_revoke, name="service-account-revoke"
    ),
    # The edge gateway: public IPs, port forwards and its firewall.
    path("public-ips/", gateways.public_ip_list, name="public-ip-list"),
    path("public-ips/new/", gateways.public_ip_allocate, name="public-ip-allocate"),
    path("public-ips/<str:address>/release/", gateways.public_ip_release, name="public-ip-release"),
    path("public-ips/<str:address>/nat/", gateways.public_ip_attach, name="public-ip-attach"),
    path("public-ips/<str:address>/no-nat/", gateways.public_ip_detach, name="public-ip-detach"),
    path("port-forwards/", gateways.forward_list, name="port-forward-list"),
    path("port-forwards/new/", gateways.forward_add, name="port-forward-add"),
    path(
        "port-forwards/<str:address>/<str:protocol>/<int:port>/remove/",
        gateways.forward_remove,
        name="port-forward-remove",
    ),
    path("gateway-firewall/", gateways.firewall, name="gateway-firewall"),
    path("gateway-firewall/new/", gateways.rule_add, name="gateway-rule-add"),
    path(
        "gateway-firewall/<str:zone>/<int:position>/remove/", gateways.rule_remove, name="gateway-rule-remove"
    ),
    # Kubernetes clusters.
    path("kubernetes/", clusters.cluster_list, name="cluster-list"),
    path("kubernetes/new/", clusters.cluster_create, name="cluster-create"),
    path("kubernetes/<str:cluster>/", clusters.cluster_detail, name="cluster-detail"),
    path("kubernetes/<str:cluster>/scale/", clusters.cluster_scale, name="cluster-scale"),
    path("kubernetes/<str:cluster>/upgrade/", clusters.cluster_upgrade, name="cluster-upgrade"),
    path("kubernetes/<str:cluster>/delete/", clusters.cluster_delete, name="cluster-delete"),
    path("kubernetes/<str:cluster>/restore/", clusters.cluster_restore, name="cluster-restore"),
    path("kubernetes/<str:cluster>/kubeconfig/", clusters.cluster_kubeconfig, name="cluster-kubeconfig"),
]


def _section(section: Section) -> list[URLPattern]:
    """A catalog section's list, ``new/``, ``<id>/edit/`` and ``<id>/delete/`` (a confirmation, then
    the POST); an id may contain dots (``ubuntu-24.04``) and may even be ``new``."""
    kind, slug = {"kind": section.kind}, section.slug
    return [
        path(f"{slug}/", admin.section_list, kind, name=f"{section.kind}-list"),
        path(f"{slug}/new/", admin.section_create, kind, name=f"{section.kind}-create"),
        path(f"{slug}/<str:ident>/edit/", admin.section_edit, kind, name=f"{section.kind}-edit"),
        path(f"{slug}/<str:ident>/delete/", admin.section_delete, kind, name=f"{section.kind}-delete"),
    ]


# The admin pages, under ``admin/`` (``portal-admin:`` names): the hosts, then the catalog's sections.
admin_routes: list[URLPattern] = [
    path("", admin.index, name="index"),
    path("hosts/", hosts.host_list, name="hosts"),
    path("hosts/join-token/", hosts.join_token, name="join-token"),
    path("hosts/rollout/halt/", hosts.rollout_halt, name="host-rollout-halt"),
    path("hosts/rollout/resume/", hosts.rollout_resume, name="host-rollout-resume"),
    path("hosts/<slug:zone>/<slug:host>/cordon/", hosts.host_cordon, name="host-cordon"),
    path("hosts/<slug:zone>/<slug:host>/uncordon/", hosts.host_uncordon, name="host-uncordon"),
    path("hosts/<slug:zone>/<slug:host>/drain/", hosts.host_drain, name="host-drain"),
    path("hosts/<slug:zone>/<slug:host>/update-now/", hosts.host_update_now, name="host-update-now"),
    path("hosts/<slug:zone>/<slug:host>/remove/", hosts.host_remove, name="host-remove"),
    *(pattern for section in SECTIONS.values() for pattern in _section(section)),
]

# The Access section, under ``admin/access/`` (``portal-access:`` names).
access_routes: list[URLPattern] = [
    path("", access.users_page, name="users"),
    path("users/<str:user>/", access.user_page, name="user"),
    path("users/<str:user>/grant/", access.grant, name="grant"),
    path("users/<str:user>/vdcs/<str:vdc>/revoke/", access.revoke, name="revoke"),
    path("users/<str:user>/roles/", access.set_roles, name="roles"),
    path("vdcs/<str:vdc>/members/", access.vdc_members, name="vdc-members"),
    path("organizations/", organizations.organizations_page, name="organizations"),
    path("organizations/new/", organizations.allowance_page, name="allowance-create"),
    path("organizations/<str:org>/allowance/", organizations.allowance_page, name="allowance"),
    path("organizations/<str:org>/delete/", organizations.allowance_delete, name="allowance-delete"),
    path("organizations/<str:org>/vdcs/new/", organizations.vdc_create, name="vdc-create"),
    path("organizations/<str:org>/vdcs/<str:vdc>/edit/", organizations.vdc_edit, name="vdc-edit"),
    path("organizations/<str:org>/vdcs/<str:vdc>/delete/", organizations.vdc_delete, name="vdc-delete"),
]

urlpatterns: list[URLPattern | URLResolver] = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    # Login, its callback (the URL registered at the identity provider) and logout.
    path("login/", oidc.LoginView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc.CallbackView.as_view(), name="oidc_authentication_callback"),
    # POST only: the session ends here, then at the issuer (oidc.end_session_url).
    path("logout/", OIDCLogoutView.as_view(), name="oidc_logout"),
    path("vdc/<str:vdc>/", include(vdc_routes)),
    # The user's tasks, of all their VDCs: the page (the header's list, for htmx) and the header's indicator.
    path("tasks/", tasks.my_task_list, name="my-tasks"),
    path("tasks/indicator/", tasks.indicator, name="my-tasks-indicator"),
    path("admin/activity/", activity.activity_page, name="activity"),
    path("admin/activity.csv", activity.activity_csv, name="activity-csv"),
    # Access changes are admin actions: under admin/, they need a freshly renewed session (portal.oidc).
    path("admin/access/", include((access_routes, "portal-access"))),
    path("admin/", include((admin_routes, "portal-admin"))),
]
