"""The admin area's routes, under ``admin/`` (``portal-admin:`` names).

Each catalog section has a list, ``new/``, ``<id>/edit/`` and ``<id>/delete/`` (a confirmation,
then the POST); an id may contain dots (``ubuntu-24.04``) and may even be ``new``.
"""

from django.urls import URLPattern, path

from portal.admin import views

app_name = "portal-admin"


def _section(section: views.Section) -> list[URLPattern]:
    kind = {"kind": section.kind}
    return [
        path(f"{section.slug}/", views.section_list, kind, name=f"{section.kind}-list"),
        path(f"{section.slug}/new/", views.section_create, kind, name=f"{section.kind}-create"),
        path(f"{section.slug}/<str:ident>/edit/", views.section_edit, kind, name=f"{section.kind}-edit"),
        path(
            f"{section.slug}/<str:ident>/delete/", views.section_delete, kind, name=f"{section.kind}-delete"
        ),
    ]


urlpatterns = [
    path("", views.index, name="index"),
    path("hosts/", views.host_list, name="hosts"),
    path("hosts/join-token/", views.join_token, name="join-token"),
    path("hosts/<slug:zone>/<slug:host>/cordon/", views.host_cordon, name="host-cordon"),
    path("hosts/<slug:zone>/<slug:host>/uncordon/", views.host_uncordon, name="host-uncordon"),
    path("hosts/<slug:zone>/<slug:host>/drain/", views.host_drain, name="host-drain"),
    path("hosts/<slug:zone>/<slug:host>/update-now/", views.host_update_now, name="host-update-now"),
    path("hosts/<slug:zone>/<slug:host>/remove/", views.host_remove, name="host-remove"),
    *(pattern for section in views.SECTIONS.values() for pattern in _section(section)),
]
