"""The portal's Access section, end to end: signed in through the world's identity provider, changes written
to its Zitadel-shaped API, checked through the GraphQL API as any client would see them."""

from __future__ import annotations

import pytest
import requests

from devstack.identity.claims import organisation_of
from devstack.world import World
from tests.apikit import GraphQL
from tests.orchestrator.sources.test_zitadel import restore_seeded_organization, zitadel_of
from tests.portal.sessionkit import csrf_token, login

ACCESS = "/admin/access/"
USERS = "query($s: String!) { users(search: $s) { id username vdcs } }"


@pytest.fixture(scope="module")
def admin(world: World) -> requests.Session:
    session, _ = login(world, "admin", ACCESS)
    return session


def bob_of(api: GraphQL) -> dict[str, object]:
    (bob,) = [
        u for u in api(USERS, user="admin", variables={"s": "bob"}).data["users"] if u["username"] == "bob"
    ]
    return dict(bob)


def main_of(page: str) -> str:
    """A page's main content (its header carries a CSRF token of its own)."""
    return page[page.index("<main") : page.index("</main>")]


def _post(session: requests.Session, world: World, path: str, data: dict[str, object]) -> requests.Response:
    return session.post(
        f"{world.url}{path}",
        data={"csrfmiddlewaretoken": csrf_token(session, world), **data},
        headers={"Referer": f"{world.url}{path}"},
        timeout=30,
    )


def test_the_access_page_finds_users_with_their_roles_and_vdcs_and_says_when_changes_apply(
    admin: requests.Session, world: World
) -> None:
    page = admin.get(f"{world.url}{ACCESS}", params={"search": "alice"}, timeout=30)
    assert page.status_code == 200
    assert "alice@example.com" in page.text
    assert "demo" in page.text
    assert "next token" in page.text
    assert 'href="/admin/access/"' in page.text  # the Access link of the navigation


def test_an_empty_search_is_said_next_to_the_field(admin: requests.Session, world: World) -> None:
    page = admin.get(f"{world.url}{ACCESS}", params={"search": ""}, timeout=30)
    assert page.status_code == 400
    assert 'role="alert"' in page.text


def test_admin_grants_and_revokes_a_membership_from_the_users_page(
    admin: requests.Session, world: World, api: GraphQL
) -> None:
    bob = bob_of(api)
    page = admin.get(f"{world.url}{ACCESS}users/{bob['id']}/", timeout=30)
    assert page.status_code == 200
    assert 'data-action="access.grant"' in page.text
    try:
        granted = _post(admin, world, f"{ACCESS}users/{bob['id']}/grant/", {"vdc": "demo"})
        assert granted.status_code == 200
        assert "Bob Example is now a member of VDC Demo (demo)." in granted.text  # both by name
        assert "next token" in granted.text
        assert bob_of(api)["vdcs"] == ["demo", "other"]
    finally:
        revoked = _post(admin, world, f"{ACCESS}users/{bob['id']}/vdcs/demo/revoke/", {"confirm": "yes"})
    assert revoked.status_code == 200
    assert bob_of(api)["vdcs"] == ["other"]


def test_a_vdcs_admin_page_shows_its_members(admin: requests.Session, world: World) -> None:
    page = admin.get(f"{world.url}/admin/vdcs/demo/edit/", timeout=30)
    assert 'hx-get="/admin/access/vdcs/demo/members/"' in page.text
    fragment = admin.get(f"{world.url}{ACCESS}vdcs/demo/members/", headers={"HX-Request": "true"}, timeout=30)
    assert fragment.status_code == 200
    assert "Alice Example" in fragment.text
    assert "<html" not in fragment.text


def test_a_user_without_access_rights_gets_the_404_page(world: World) -> None:
    alice, _ = login(world, "alice")
    assert alice.get(f"{world.url}{ACCESS}", timeout=30).status_code == 404
    assert alice.get(f"{world.url}{ACCESS}vdcs/demo/members/", timeout=30).status_code == 404


def test_admin_gives_acme_an_allowance_and_its_owner_makes_and_deletes_a_vdc_within_it(
    admin: requests.Session, world: World, api: GraphQL
) -> None:
    acme = organisation_of("acme")[0]
    allowance = {
        "organization": acme,
        "zones": ["zone-a"],
        "compute_profiles": ["small"],
        "storage_profiles": ["standard"],
        "images": ["debian-12"],
        "quota_vcpus": 2,
        "quota_memory_mib": 4096,
        "quota_disk_gb": 50,
        "quota_vms": 2,
    }
    admin.get(f"{world.url}{ACCESS}organizations/new/", timeout=30)
    given = _post(admin, world, f"{ACCESS}organizations/new/", allowance)
    assert given.status_code == 200
    assert f"Organization acme ({acme}) has its allowance." in given.text  # by name, its id beside it
    olivia, page = login(world, "olivia", f"{ACCESS}organizations/")
    try:
        assert "New VDC" in page.text
        assert 'href="/admin/access/"' in page.text  # an ORG_OWNER has the Access section too
        form = olivia.get(f"{world.url}{ACCESS}organizations/{acme}/vdcs/new/", timeout=30)
        assert 'value="zone-b"' not in form.text  # only what the allowance allows is offered
        vdc = {
            "id": "acme-portal",
            "zones": ["zone-a"],
            "compute_profiles": ["small"],
            "storage_profiles": ["standard"],
            "images": ["debian-12"],
            "quota_memory_mib": 1024,
            "quota_disk_gb": 10,
            "quota_vms": 1,
        }
        over = _post(olivia, world, f"{ACCESS}organizations/{acme}/vdcs/new/", {**vdc, "quota_vcpus": 3})
        assert over.status_code >= 400
        assert "3 is more than the 2 left of organization acme" in over.text  # the form's own check
        made = _post(olivia, world, f"{ACCESS}organizations/{acme}/vdcs/new/", {**vdc, "quota_vcpus": 2})
        assert "VDC acme-portal was made" in made.text
        assert api('{ vdc(id: "acme-portal") { organization } }', user="admin").data["vdc"] == {
            "organization": acme
        }
        gone = _post(
            olivia, world, f"{ACCESS}organizations/{acme}/vdcs/acme-portal/delete/", {"confirm": "yes"}
        )
        assert "VDC acme-portal was deleted" in gone.text
    finally:
        api('mutation { deleteVdc(id: "acme-portal") { errors { code } } }', user="admin")
        _post(admin, world, f"{ACCESS}organizations/{acme}/delete/", {"confirm": "yes"})
        restore_seeded_organization(zitadel_of(world), "acme")  # the allowance's end took acme's roles away
    assert api("{ organizations { organization } }", user="admin").data["organizations"] == []


VDC_OF_ACME = {
    "zones": ["zone-a"],
    "compute_profiles": ["small"],
    "storage_profiles": ["standard"],
    "images": ["debian-12"],
    "quota_vcpus": 1,
    "quota_memory_mib": 1024,
    "quota_disk_gb": 10,
    "quota_vms": 1,
}


def test_an_org_owner_changes_her_vdcs_quota_within_the_allowance_not_past_it_and_no_other_organizations(
    admin: requests.Session, world: World, api: GraphQL
) -> None:
    acme = organisation_of("acme")[0]
    allowance = {**VDC_OF_ACME, "organization": acme, "quota_vcpus": 3, "quota_memory_mib": 4096}
    admin.get(f"{world.url}{ACCESS}organizations/new/", timeout=30)
    assert _post(admin, world, f"{ACCESS}organizations/new/", allowance).status_code == 200
    olivia, _ = login(world, "olivia", f"{ACCESS}organizations/")
    edit = f"{ACCESS}organizations/{acme}/vdcs/acme-edit/edit/"
    try:
        made = _post(
            olivia, world, f"{ACCESS}organizations/{acme}/vdcs/new/", {**VDC_OF_ACME, "id": "acme-edit"}
        )
        assert "VDC acme-edit was made" in made.text
        listed = olivia.get(f"{world.url}{ACCESS}organizations/", timeout=30)
        assert f'href="{edit}"' in listed.text
        form = olivia.get(f"{world.url}{edit}", timeout=30)
        assert form.status_code == 200
        assert 'data-action="access.vdc-update"' in form.text
        assert "allowance has 3 vCPUs in all, its other VDCs 0" in form.text  # what is left for it, shown
        assert 'value="zone-b"' not in form.text  # only what the allowance allows is offered
        changed = _post(olivia, world, edit, {**VDC_OF_ACME, "quota_vcpus": 3, "name": "Acme's"})
        assert "VDC acme-edit of organization" in changed.text
        assert api('{ vdc(id: "acme-edit") { name quota { vcpus } } }', user="admin").data["vdc"] == {
            "name": "Acme's",
            "quota": {"vcpus": 3},
        }
        over = _post(olivia, world, edit, {**VDC_OF_ACME, "quota_vcpus": 4})
        assert over.status_code >= 400
        assert 'id="id_quota_vcpus_error"' in over.text  # next to the field it is about
        assert "4 is more than the 3 this VDC may have within organization acme" in over.text
        assert api('{ vdc(id: "acme-edit") { quota { vcpus } } }', user="admin").data["vdc"] == {
            "quota": {"vcpus": 3}
        }
        invalid = _post(olivia, world, edit, {**VDC_OF_ACME, "quota_vcpus": -1})
        assert invalid.status_code == 400
        assert 'id="id_quota_vcpus_error"' in invalid.text
        # Another organization's VDC (demo is the platform's), under hers or another's: as a missing one.
        other = olivia.get(f"{world.url}{ACCESS}organizations/{acme}/vdcs/demo/edit/", timeout=30)
        missing = olivia.get(f"{world.url}{ACCESS}organizations/{acme}/vdcs/no-such/edit/", timeout=30)
        foreign = olivia.get(f"{world.url}{ACCESS}organizations/100000001/vdcs/demo/edit/", timeout=30)
        assert other.status_code == missing.status_code == foreign.status_code == 404
        assert main_of(other.text).replace("demo", "no-such") == main_of(missing.text)
    finally:
        api('mutation { deleteVdc(id: "acme-edit") { errors { code } } }', user="admin")
        _post(admin, world, f"{ACCESS}organizations/{acme}/delete/", {"confirm": "yes"})
        restore_seeded_organization(zitadel_of(world), "acme")
