"""The Access section's routes, under ``admin/access/`` (``portal-access:`` names): its actions, as the
admin pages', need a freshly renewed session (``portal.oidc``)."""

from django.urls import URLPattern, path

from portal.access import views

app_name = "portal-access"

urlpatterns: list[URLPattern] = [
    path("", views.users_page, name="users"),
    path("users/<str:user>/", views.user_page, name="user"),
    path("users/<str:user>/grant/", views.grant, name="grant"),
    path("users/<str:user>/revoke/", views.revoke, name="revoke"),
    path("users/<str:user>/roles/", views.set_roles, name="roles"),
    path("vdcs/<str:vdc>/members/", views.vdc_members, name="vdc-members"),
]
