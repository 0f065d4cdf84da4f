"""The admin area's routes, under ``admin/`` (``portal-admin:`` names).

Each catalog section has a list, ``new/``, ``<id>/edit/`` and ``<id>/delete/`` (a confirmation,
then the POST); an id may contain dots (``ubuntu-24.04``) and may even be ``new``.
"""

from django.urls import URLPattern, path

from portal.admin import hosts, views
from portal.admin.sections import SECTIONS, Section

app_name = "portal-admin"


def _section(section: Section) -> list[URLPattern]:
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
    path("hosts/", hosts.host_list, name="hosts"),
    path("hosts/join-token/", hosts.join_token, name="join-token"),
    path("hosts/<slug:zone>/<slug:host>/cordon/", hosts.host_cordon, name="host-cordon"),
    path("hosts/<slug:zone>/<slug:host>/uncordon/", hosts.host_uncordon, name="host-uncordon"),
    path("hosts/<slug:zone>/<slug:host>/drain/", hosts.host_drain, name="host-drain"),
    path("hosts/<slug:zone>/<slug:host>/update-now/", hosts.host_update_now, name="host-update-now"),
    path("hosts/<slug:zone>/<slug:host>/remove/", hosts.host_remove, name="host-remove"),
    *(pattern for section in SECTIONS.values() for pattern in _section(section)),
]
