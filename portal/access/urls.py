"""The Access section's routes, under ``admin/access/`` (``portal-access:`` names): its actions, as the
admin pages', need a freshly renewed session (``portal.oidc``)."""

from django.urls import URLPattern, path

from portal.access import organizations, views

app_name = "portal-access"

urlpatterns: list[URLPattern] = [
    path("", views.users_page, name="users"),
    path("users/<str:user>/", views.user_page, name="user"),
    path("users/<str:user>/grant/", views.grant, name="grant"),
    path("users/<str:user>/revoke/", views.revoke, name="revoke"),
    path("users/<str:user>/roles/", views.set_roles, name="roles"),
    path("vdcs/<str:vdc>/members/", views.vdc_members, name="vdc-members"),
    path("organizations/", organizations.organizations_page, name="organizations"),
    path("organizations/new/", organizations.allowance_page, name="allowance-create"),
    path("organizations/<str:org>/allowance/", organizations.allowance_page, name="allowance"),
    path("organizations/<str:org>/delete/", organizations.allowance_delete, name="allowance-delete"),
    path("organizations/<str:org>/vdcs/new/", organizations.vdc_create, name="vdc-create"),
    path("organizations/<str:org>/vdcs/<str:vdc>/edit/", organizations.vdc_edit, name="vdc-edit"),
    path("organizations/<str:org>/vdcs/<str:vdc>/delete/", organizations.vdc_delete, name="vdc-delete"),
]
