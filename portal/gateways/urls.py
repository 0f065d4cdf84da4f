"""The edge gateway pages, routed under ``vdc/<str:vdc>/``; a public IP's address is its path."""

from django.urls import path

from portal.gateways import views

urlpatterns = [
    path("public-ips/", views.public_ip_list, name="public-ip-list"),
    path("public-ips/new/", views.public_ip_allocate, name="public-ip-allocate"),
    path("public-ips/<str:address>/release/", views.public_ip_release, name="public-ip-release"),
    path("public-ips/<str:address>/nat/", views.public_ip_attach, name="public-ip-attach"),
    path("public-ips/<str:address>/no-nat/", views.public_ip_detach, name="public-ip-detach"),
    path("port-forwards/", views.forward_list, name="port-forward-list"),
    path("port-forwards/new/", views.forward_add, name="port-forward-add"),
    path(
        "port-forwards/<str:address>/<str:protocol>/<int:port>/remove/",
        views.forward_remove,
        name="port-forward-remove",
    ),
    path("gateway-firewall/", views.firewall, name="gateway-firewall"),
    path("gateway-firewall/new/", views.rule_add, name="gateway-rule-add"),
    path("gateway-firewall/<str:zone>/<int:position>/remove/", views.rule_remove, name="gateway-rule-remove"),
]
