"""Everything the portal can do, the API can do: each portal action has its GraphQL mutation.

Each area of the portal keeps a registry in its ``actions.py``: ``MUTATIONS`` maps an action to
the mutation that does the same (``portal/admin/actions.py``, ``portal/vms/actions.py``). This
test fails when

- a registered action names a mutation that ``schema.graphql`` (the API's contract) lacks;
- a form of the portal that changes something (``method="post"``, or ``hx-post``/``-put``/
  ``-patch``/``-delete``) names no registered action in ``data-action``: a new action that
  skipped the registry, and so the API;
- an admin page, as rendered, offers a form whose action is not registered.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from graphql import build_schema

import portal
from tests.portal.served import LightPortal

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "templates" / "portal"
# Forms that change the browser's session, not the platform (signing out): nothing of the API to
# mirror. As written in a template, and as rendered.
SESSION_FORMS = ("{% url 'oidc_logout' %}", 'action="/logout/"')

_UNSAFE_FORM = re.compile(
    r"<form\b(?=[^>]*\bmethod=[\"']post[\"'])[^>]*>|<[a-z]+\b[^>]*\bhx-(?:post|put|patch|delete)=[^>]*>",
    re.I | re.S,
)
_DATA_ACTION = re.compile(r"\bdata-action=[\"']([^\"']*)[\"']")


def registries() -> dict[str, dict[str, str]]:
    """Every area's ``MUTATIONS``, by module (``portal.<area>.actions``)."""
    found: dict[str, dict[str, str]] = {}
    for area in pkgutil.iter_modules(portal.__path__):
        if not area.ispkg:
            continue
        name = f"{portal.__name__}.{area.name}.actions"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        found[name] = dict(module.MUTATIONS)
    return found


def registered_actions() -> set[str]:
    return {action for mutations in registries().values() for action in mutations}


@functools.cache
def schema_mutations() -> frozenset[str]:
    schema = build_schema((ROOT / "schema.graphql").read_text(encoding="utf-8"))
    assert schema.mutation_type is not None
    return frozenset(schema.mutation_type.fields)


def unsafe_elements(html: str) -> Iterator[str]:
    """The opening tags of forms and htmx elements that send an unsafe request."""
    for match in _UNSAFE_FORM.finditer(html):
        tag = match.group(0)
        if not any(session_form in tag for session_form in SESSION_FORMS):
            yield tag


def test_the_admin_and_vm_areas_keep_a_registry() -> None:
    assert {"portal.admin.actions", "portal.vms.actions"} <= set(registries())


@pytest.mark.parametrize("module", sorted(registries()))
def test_every_portal_action_has_its_mutation_in_the_schema(module: str) -> None:
    mutations = schema_mutations()
    missing = {action: m for action, m in registries()[module].items() if m not in mutations}
    assert not missing, f"{module}: these portal actions have no mutation in schema.graphql: {missing}"


@pytest.mark.parametrize(
    "template", sorted(p.relative_to(TEMPLATES).as_posix() for p in TEMPLATES.rglob("*.html"))
)
def test_every_form_that_changes_something_names_a_registered_action(template: str) -> None:
    source = (TEMPLATES / template).read_text(encoding="utf-8")
    actions = registered_actions()
    for tag in unsafe_elements(source):
        named = _DATA_ACTION.search(tag)
        assert named is not None, (
            f"templates/portal/{template}: this form changes something but names no action: {tag!r}. "
            "Register the action (and its GraphQL mutation) in its area's actions.py MUTATIONS and "
            'name it here with data-action="<action>".'
        )
        value = named.group(1)
        if "{" not in value:  # a literal; values from the view are checked on the rendered pages below
            assert value in actions, f"templates/portal/{template}: action {value!r} is not registered"


ADMIN_PAGES = [
    "/admin/",
    "/admin/compute-profiles/",
    "/admin/compute-profiles/new/",
    "/admin/compute-profiles/small/edit/",
    "/admin/compute-profiles/small/delete/",
    "/admin/storage-profiles/new/",
    "/admin/storage-profiles/standard/edit/",
    "/admin/images/new/",
    "/admin/images/debian-12/delete/",
    "/admin/zones/zone-a/edit/",
    "/admin/vdcs/new/",
    "/admin/vdcs/demo/edit/",
    "/admin/vdcs/demo/delete/",
    "/admin/hosts/",
    "/admin/hosts/join-token/",
    "/admin/hosts/zone-a/pve1/drain/",
    "/admin/hosts/zone-a/pve1/remove/",
]
# alice's pages of the seeded VDC demo (web-1 is VM 100 of zone-a).
VM_PAGES = ["/vdc/demo/vms/", "/vdc/demo/vms/new/", "/vdc/demo/vms/zone-a/100/"]


def rendered_actions(site: LightPortal, user: str, paths: list[str]) -> set[str]:
    """The actions the forms of these pages name, as ``user`` sees them; each must be registered."""
    session = site.session(user)
    actions = registered_actions()
    seen: set[str] = set()
    for path in paths:
        page = session.get(f"{site.url}{path}", timeout=60)
        assert page.status_code == 200, path
        for tag in unsafe_elements(page.text):
            named = _DATA_ACTION.search(tag)
            assert named is not None, f"{path}: a form names no action: {tag!r}"
            assert named.group(1) in actions, f"{path}: action {named.group(1)!r} is not registered"
            seen.add(named.group(1))
    return seen


def test_every_form_on_the_admin_pages_performs_a_registered_action(site: LightPortal) -> None:
    seen = rendered_actions(site, "admin", ADMIN_PAGES)
    assert {"compute-profile.create", "vdc.update", "host.cordon", "host.drain", "host.join-token"} <= seen


def test_every_form_on_the_vm_pages_performs_a_registered_action(site: LightPortal) -> None:
    seen = rendered_actions(site, "alice", VM_PAGES)
    assert seen, "the VM pages offer actions"
