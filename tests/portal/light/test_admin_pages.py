"""The admin pages as a browser uses them: a ``requests`` session signed in as the portal's login records it,
the portal served from this process (tests/portal/served.py), the catalog and Proxmox the light world's.

What the pages do is checked where it lands: through the GraphQL API, as any client would see it.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from devstack import seed
from orchestrator.services import hosts
from tests.apikit import Api
from tests.gatewaykit import CIDR, NO_EXTERNAL, UPDATE_ZONE, ZONE, external_settings
from tests.portal.drainkit import drained_host, write_drain
from tests.portal.pagekit import get, post
from tests.portal.served import LightPortal

PROFILES = "{ computeProfiles { name vcpus memoryMib cpuType description } }"


def _profile(api: Api, name: str) -> dict[str, object] | None:
    answer = api(PROFILES, user="admin")
    return next((p for p in answer.data["computeProfiles"] if p["name"] == name), None)


@pytest.fixture
def profile_name(api: Api) -> Iterator[str]:
    """A compute profile name this test owns; whatever it made is removed afterwards."""
    name = "portal-admin-test"
    yield name
    if _profile(api, name) is not None:
        api(
            'mutation { deleteComputeProfile(name: "portal-admin-test") { errors { message } } }',
            user="admin",
        )


def test_the_admin_area_lists_every_section(site: LightPortal, admin: requests.Session) -> None:
    page = admin.get(f"{site.url}/admin/", timeout=30)
    assert page.status_code == 200
    for section in (
        "Compute profiles",
        "Storage profiles",
        "Images",
        "Zones",
        "Hosts",
        "VDCs",
        "Kubernetes versions",
    ):
        assert section in page.text
    assert 'aria-label="Admin"' in page.text


def test_an_admin_offers_a_kubernetes_version_changes_its_node_image_and_withdraws_it(
    site: LightPortal, admin: requests.Session, api: Api
) -> None:
    version = "v1.30.9"  # no other test offers it
    read = "query { kubernetesVersions { version image } }"

    def offered() -> dict[str, str]:
        return {v["version"]: v["image"] for v in api(read, user="admin").data["kubernetesVersions"]}

    form = admin.get(f"{site.url}/admin/kubernetes-versions/new/", timeout=30)
    assert 'data-action="kubernetes-version.create"' in form.text
    added = post(admin, site, "/admin/kubernetes-versions/new/", {"version": version, "image": "debian-12"})
    assert (added.status_code, added.headers["Location"]) == (302, "/admin/kubernetes-versions/")
    try:
        assert f'data-row="{version}"' in admin.get(f"{site.url}/admin/kubernetes-versions/", timeout=30).text
        assert offered()[version] == "debian-12"
        saved = post(admin, site, f"/admin/kubernetes-versions/{version}/edit/", {"image": "ubuntu-24.04"})
        assert saved.status_code == 302
        assert offered()[version] == "ubuntu-24.04"
        refused = post(
            admin, site, "/admin/kubernetes-versions/new/", {"version": "1.30", "image": "debian-12"}
        )
        assert refused.status_code == 400
        assert "not a Kubernetes release like v1.34.2" in refused.text
    finally:
        deleted = post(admin, site, f"/admin/kubernetes-versions/{version}/delete/", {})
    assert deleted.status_code == 302
    assert version not in offered()


def test_an_admin_adds_edits_and_deletes_a_compute_profile(
    site: LightPortal, admin: requests.Session, api: Api, profile_name: str
) -> None:
    form = admin.get(f"{site.url}/admin/compute-profiles/new/", timeout=30)
    assert form.status_code == 200
    assert '<label for="id_vcpus"' in form.text
    assert 'data-action="compute-profile.create"' in form.text

    added = post(
        admin,
        site,
        "/admin/compute-profiles/new/",
        {
            "name": profile_name,
            "vcpus": 3,
            "memory_mib": 3072,
            "cpu_type": "",
            "description": "from the portal",
        },
    )
    assert added.status_code == 302
    assert added.headers["Location"] == "/admin/compute-profiles/"
    listed = admin.get(f"{site.url}/admin/compute-profiles/", timeout=30)
    assert f'data-row="{profile_name}"' in listed.text
    assert f"The compute profile &#x27;{profile_name}&#x27; was added." in listed.text
    assert _profile(api, profile_name) == {
        "name": profile_name,
        "vcpus": 3,
        "memoryMib": 3072,
        "cpuType": "x86-64-v2-AES",
        "description": "from the portal",
    }

    edit = admin.get(f"{site.url}/admin/compute-profiles/{profile_name}/edit/", timeout=30)
    assert edit.status_code == 200
    assert re.search(r'name="name"[^>]*disabled', edit.text), "the name of a profile cannot change"
    saved = post(
        admin,
        site,
        f"/admin/compute-profiles/{profile_name}/edit/",
        {"vcpus": 6, "memory_mib": 6144, "cpu_type": "host", "description": "bigger"},
    )
    assert saved.status_code == 302
    assert _profile(api, profile_name) == {
        "name": profile_name,
        "vcpus": 6,
        "memoryMib": 6144,
        "cpuType": "host",
        "description": "bigger",
    }

    confirm = admin.get(f"{site.url}/admin/compute-profiles/{profile_name}/delete/", timeout=30)
    assert confirm.status_code == 200
    assert "VMs made from it keep running" in confirm.text
    assert _profile(api, profile_name) is not None, "asking is not deleting"
    deleted = post(admin, site, f"/admin/compute-profiles/{profile_name}/delete/", {})
    assert deleted.status_code == 302
    assert _profile(api, profile_name) is None


def test_a_value_the_service_refuses_is_shown_next_to_its_field(
    site: LightPortal, admin: requests.Session, api: Api, profile_name: str
) -> None:
    refused = post(
        admin,
        site,
        "/admin/compute-profiles/new/",
        {"name": "Not A Name", "vcpus": 1, "memory_mib": 1024},
    )
    assert refused.status_code == 400
    assert re.search(
        r'id="id_name"[^>]*aria-describedby="id_name_help id_name_error"', refused.text
    ) or re.search(r'aria-describedby="id_name_help id_name_error"[^>]*id="id_name"', refused.text)
    error = re.search(r'<div id="id_name_error"[^>]*>(.*?)</div>', refused.text, re.S)
    assert error is not None
    assert "is not a catalog name" in error.group(1)
    assert 'value="Not A Name"' in refused.text, "what was typed stays in the form"


def test_a_duplicate_is_refused_in_words_at_the_top_of_the_form(
    site: LightPortal, admin: requests.Session
) -> None:
    refused = post(
        admin, site, "/admin/compute-profiles/new/", {"name": "small", "vcpus": 1, "memory_mib": 1024}
    )
    assert refused.status_code == 409
    assert "compute profile &#x27;small&#x27; already exists" in refused.text
    assert 'role="alert"' in refused.text


def test_deleting_a_zone_with_hosts_is_refused_on_its_confirmation_page(
    site: LightPortal, admin: requests.Session
) -> None:
    refused = post(admin, site, "/admin/zones/zone-a/delete/", {})
    assert refused.status_code == 409
    assert "still has 3 host(s)" in refused.text
    assert 'data-action="zone.delete"' in refused.text, "the confirmation is shown again, with the reason"


def test_the_hosts_page_shows_each_host_with_its_agent_proxmox_and_usage(
    site: LightPortal, admin: requests.Session
) -> None:
    page = admin.get(f"{site.url}/admin/hosts/", timeout=60)
    assert page.status_code == 200
    for key in ("zone-a/pve1", "zone-a/pve3", "zone-b/pve2"):
        row = re.search(rf'<tr data-host="{key}">(.*?)</tr>', page.text, re.S)
        assert row is not None, key
        assert ">online<" in row.group(1)
        assert "not answering" not in row.group(1)
        assert "UTC" in row.group(1), "the agent's certificate expiry is shown"
        assert re.search(r"CPU \d+% of \d+", row.group(1)), "the node's CPU use is shown"
        assert re.search(r"memory [\d.]+\s\w+ of [\d.]+\s\w+", row.group(1)), "and its memory"


def test_cordoning_a_host_from_the_hosts_page(site: LightPortal, admin: requests.Session, api: Api) -> None:
    query = "{ zones { id hosts { name cordoned } } }"

    def cordoned() -> bool:
        zones = api(query, user="admin").data["zones"]
        return next(
            h["cordoned"] for z in zones if z["id"] == "zone-b" for h in z["hosts"] if h["name"] == "pve3"
        )

    try:
        done = post(admin, site, "/admin/hosts/zone-b/pve3/cordon/", {})
        assert done.status_code == 302
        assert cordoned()
        page = admin.get(f"{site.url}/admin/hosts/", timeout=60)
        assert 'data-action="host.uncordon"' in page.text
    finally:
        undone = post(admin, site, "/admin/hosts/zone-b/pve3/uncordon/", {})
    assert undone.status_code == 302
    assert not cordoned()


def test_a_join_token_is_shown_once_with_its_command(site: LightPortal, admin: requests.Session) -> None:
    page = post(admin, site, "/admin/hosts/join-token/", {"zone": "zone-b", "host": "pve9"})
    assert page.status_code == 200
    command = re.search(r'<textarea id="join-command"[^>]*>(.*?)</textarea>', page.text, re.S)
    assert command is not None
    assert command.group(1).startswith("flexplane-agent bootstrap --orchestrator")
    listed = admin.get(f"{site.url}/admin/hosts/", timeout=60)
    assert "zone-b/pve9" in listed.text


def test_an_admin_creates_and_deletes_a_vdc(site: LightPortal, admin: requests.Session, api: Api) -> None:
    query = '{ vdc(id: "portal-admin") { id zones computeProfiles quota { vcpus vms } } }'
    created = post(
        admin,
        site,
        "/admin/vdcs/new/",
        {
            "id": "portal-admin",
            "name": "Portal admin test",
            "zones": ["zone-a"],
            "compute_profiles": ["small", "medium"],
            "quota_vcpus": 8,
            "quota_memory_mib": 8192,
            "quota_disk_gb": 100,
            "quota_vms": 4,
        },
    )
    try:
        assert created.status_code == 302, created.text[:2000]
        vdc = api(query, user="admin").data["vdc"]
        assert vdc == {
            "id": "portal-admin",
            "zones": ["zone-a"],
            "computeProfiles": ["small", "medium"],
            "quota": {"vcpus": 8, "vms": 4},
        }
        listed = admin.get(f"{site.url}/admin/vdcs/", timeout=60)
        assert re.search(r'data-row="portal-admin">.*?0 of 4', listed.text, re.S)
    finally:
        deleted = post(admin, site, "/admin/vdcs/portal-admin/delete/", {})
    assert deleted.status_code == 302
    assert api(query, user="admin").data["vdc"] is None


@pytest.mark.parametrize(
    "path", ["/admin/", "/admin/compute-profiles/", "/admin/hosts/", "/admin/vdcs/demo/edit/"]
)
def test_alice_gets_the_not_found_page_for_the_admin_area(
    site: LightPortal, alice: requests.Session, path: str
) -> None:
    page = alice.get(f"{site.url}{path}", timeout=30)
    assert page.status_code == 404
    assert "Not found" in page.text
    assert 'aria-label="Admin"' not in page.text
    assert 'href="/admin/"' not in page.text, "the admin link is not offered to her either"


def test_a_post_to_an_admin_url_is_refused_server_side(
    site: LightPortal, alice: requests.Session, api: Api, profile_name: str
) -> None:
    alice.get(f"{site.url}/vdc/demo/", timeout=30)  # a page with a form: the CSRF cookie
    refused = post(
        alice, site, "/admin/compute-profiles/new/", {"name": profile_name, "vcpus": 1, "memory_mib": 1024}
    )
    assert refused.status_code == 404
    assert _profile(api, profile_name) is None
    cordon = post(alice, site, "/admin/hosts/zone-a/pve1/cordon/", {})
    assert cordon.status_code == 404


def test_signed_out_the_admin_area_sends_to_the_login_and_back(site: LightPortal) -> None:
    first = requests.get(f"{site.url}/admin/hosts/", allow_redirects=False, timeout=30)
    assert first.status_code == 302
    assert first.headers["Location"] == "/login/?next=/admin/hosts/"


def test_a_storage_profile_without_any_storage_is_refused_at_the_storage_fields(
    site: LightPortal, admin: requests.Session, api: Api
) -> None:
    form = admin.get(f"{site.url}/admin/storage-profiles/new/", timeout=30)
    assert '<label for="id_storage_zone-a"' in form.text
    assert '<label for="id_storage_zone-b"' in form.text
    refused = post(
        admin,
        site,
        "/admin/storage-profiles/new/",
        {"name": "nowhere", "default_gb": 10, "min_gb": 1, "max_gb": 100, "bus": "scsi", "format": "raw"},
    )
    assert refused.status_code == 400
    error = re.search(r'<div id="id_storage_zone-a_error"[^>]*>(.*?)</div>', refused.text, re.S)
    assert error is not None
    assert "must name the storage of at least one zone" in error.group(1)
    names = [p["name"] for p in api("{ storageProfiles { name } }", user="admin").data["storageProfiles"]]
    assert "nowhere" not in names


def test_a_new_profile_is_allowed_in_vdcs_from_its_form_and_its_deletion_names_and_leaves_them(
    site: LightPortal, admin: requests.Session, api: Api, profile_name: str
) -> None:
    query = "query($id: ID!) { vdc(id: $id) { computeProfiles } }"
    vdcs: list[str] = []
    try:
        for ident in ("portal-offer-a", "portal-offer-b"):
            fields: dict[str, object] = {"id": ident, "zones": ["zone-a"], "quota_vcpus": 1}
            fields.update(quota_memory_mib=1024, quota_disk_gb=10, quota_vms=1)
            made = post(admin, site, "/admin/vdcs/new/", fields)
            assert made.status_code == 302, made.text[:2000]
            vdcs.append(ident)

        form = admin.get(f"{site.url}/admin/compute-profiles/new/", timeout=30)
        assert "Allow in VDCs" in form.text
        assert re.search(r'name="allow_in_vdcs" value="portal-offer-a"', form.text)
        added = post(
            admin,
            site,
            "/admin/compute-profiles/new/",
            {"name": profile_name, "vcpus": 1, "memory_mib": 1024, "allow_in_vdcs": ["portal-offer-a"]},
        )
        assert added.status_code == 302, added.text[:2000]
        listed = admin.get(f"{site.url}/admin/compute-profiles/", timeout=30)
        assert "VDC(s) portal-offer-a offer it." in listed.text
        allowed = api(query, user="admin", variables={"id": "portal-offer-a"}).data["vdc"]["computeProfiles"]
        assert allowed == [profile_name]
        assert (
            api(query, user="admin", variables={"id": "portal-offer-b"}).data["vdc"]["computeProfiles"] == []
        )
        edit = admin.get(f"{site.url}/admin/compute-profiles/{profile_name}/edit/", timeout=30)
        assert "allow_in_vdcs" not in edit.text, "a VDC's own form allows an existing profile"

        confirm = admin.get(f"{site.url}/admin/compute-profiles/{profile_name}/delete/", timeout=30)
        assert "VDC(s) portal-offer-a allow it: it is removed from them." in confirm.text
        deleted = post(admin, site, f"/admin/compute-profiles/{profile_name}/delete/", {})
        assert deleted.status_code == 302
        listed = admin.get(f"{site.url}/admin/compute-profiles/", timeout=30)
        assert "VDC(s) portal-offer-a no longer offer it." in listed.text
        assert (
            api(query, user="admin", variables={"id": "portal-offer-a"}).data["vdc"]["computeProfiles"] == []
        )
        edit_vdc = admin.get(f"{site.url}/admin/vdcs/portal-offer-a/edit/", timeout=30)
        assert profile_name not in edit_vdc.text, "the VDC no longer lists the deleted profile"
    finally:
        for ident in vdcs:
            post(admin, site, f"/admin/vdcs/{ident}/delete/", {})


def test_a_profile_added_without_vdcs_says_that_no_vdc_offers_it(
    site: LightPortal, admin: requests.Session, profile_name: str
) -> None:
    added = post(
        admin, site, "/admin/compute-profiles/new/", {"name": profile_name, "vcpus": 1, "memory_mib": 1024}
    )
    assert added.status_code == 302, added.text[:2000]
    listed = admin.get(f"{site.url}/admin/compute-profiles/", timeout=30)
    assert "No VDC offers it yet: allow it in a VDC to offer it there." in listed.text


# --------------------------------------------------------------------------- a drain, followed live


def _drains_fragment(admin: requests.Session, site: LightPortal) -> str:
    """The hosts page's drains as its htmx poll reads them."""
    answer = admin.get(
        f"{site.url}/admin/hosts/",
        headers={"HX-Request": "true", "HX-Target": "drains", "HX-Current-URL": f"{site.url}/admin/hosts/"},
        timeout=30,
    )
    assert answer.status_code == 200
    assert "<html" not in answer.text, "the poll gets the fragment, not the page"
    return answer.text


def test_the_hosts_page_follows_a_drain_as_it_goes_and_stops_asking_once_none_runs(
    site: LightPortal, admin: requests.Session, api: Api
) -> None:
    with drained_host(api, site.light.kube) as node:
        cell = f'id="drain-zone-a_{node}"'
        write_drain(site.light.kube, node, hosts.RUNNING, moved=0)
        page = admin.get(f"{site.url}/admin/hosts/", timeout=60)
        assert re.search(r'<div id="drains"[^>]*hx-trigger="every 2s"', page.text), (
            "a running drain is polled"
        )

        fragment = _drains_fragment(admin, site)
        assert re.search(r'<div id="drains"[^>]*data-polling="true"[^>]*hx-trigger="every 2s"', fragment)
        ours = fragment[fragment.index(cell) :]
        assert 'hx-swap-oob="true"' in ours.split(">", 1)[0]
        assert re.match(r'[^>]*data-drain="running"[^>]*>\s*running.*?0 of 2 VMs moved', ours, re.S)

        write_drain(site.light.kube, node, hosts.RUNNING, moved=1)
        ours = _drains_fragment(admin, site).split(cell, 1)[1]
        assert re.match(r"[^>]*>\s*running.*?1 of 2 VMs moved", ours, re.S)

        write_drain(site.light.kube, node, hosts.DONE, moved=2)
        fragment = _drains_fragment(admin, site)
        ours = fragment.split(cell, 1)[1]
        assert re.match(r'[^>]*data-drain="done"[^>]*>\s*done.*?2 of 2 VMs moved', ours, re.S)
        poll = re.search(r'<div id="drains"[^>]*>', fragment)
        assert poll is not None
        assert "hx-trigger" not in poll.group(0), "no drain runs: the polling stops"
        assert 'data-polling="false"' in poll.group(0)


# --------------------------------------------------------------------------- images cached on hosts


@contextlib.contextmanager
def offered_image(site: LightPortal) -> Iterator[str]:
    """An image offered in zone-a only (by a VDC of its own, from debian-12's source), written straight to
    the management cluster so that no agent is asked for it: the test puts its templates in the fake
    itself. All go afterwards."""
    name = f"tcache{uuid.uuid4().hex[:6]}"
    kube = site.light.kube
    source = kube.get_catalog("image", "debian-12")
    assert source is not None
    image = {
        "name": name,
        "osFamily": "debian",
        "defaultUser": "debian",
        "minDiskGb": 1,
        "description": "",
        "sourceUrl": source.spec["sourceUrl"],
        "checksum": source.spec["checksum"],
    }
    vdc = {**seed.VDCS[1], "id": name, "name": name, "zones": ["zone-a"], "images": [name]}
    made = [("image", image), ("vdc", vdc)]
    for kind, spec in made:
        kube.create_catalog(kind, name, spec)
    try:
        yield name
    finally:
        for kind, _ in made:
            kube.delete_catalog(kind, name)
        pve = site.fakes["zone-a"].pve
        site.fakes.on_loop(_drop_named, pve, f"fp-tpl-{name}")


def _drop_named(pve: Any, name: str) -> None:
    pve.vms[:] = [vm for vm in pve.vms if vm.name != name]


def _resource_reads(site: LightPortal) -> dict[str, int]:
    def count(pve: Any) -> int:
        return sum(1 for r in pve.requests if r[1].endswith("/cluster/resources"))

    return {zone: site.fakes.on_loop(count, fake.pve) for zone, fake in site.fakes.zones.items()}


def test_the_images_and_hosts_pages_show_which_hosts_have_each_image_cached(
    site: LightPortal, admin: requests.Session
) -> None:
    with offered_image(site) as name:
        tags = {"tags": f"fp-image-{name};fp-storage-local-lvm;fp-template"}
        pve = site.fakes["zone-a"].pve
        # Ready on pve1, being imported on pve2 (not a template yet), not on pve3; zone-b does not offer it.
        site.fakes.on_loop(
            lambda: (
                pve.add_vm(77_101, f"fp-tpl-{name}", node="pve1", template=True, config=dict(tags)),
                pve.add_vm(77_102, f"fp-tpl-{name}", node="pve2", config=dict(tags)),
            )
        )

        before = _resource_reads(site)
        images = admin.get(f"{site.url}/admin/images/", timeout=60)
        after = _resource_reads(site)
        assert images.status_code == 200
        row = re.search(rf'<tr data-row="{name}">(.*?)</tr>', images.text, re.S)
        assert row is not None
        hosts_cell = re.search(r'data-label="Hosts"[^>]*>([^<]*)<', row.group(1))
        assert hosts_cell is not None
        assert (
            hosts_cell.group(1) == "cached on zone-a/pve1; importing on zone-a/pve2; not yet on zone-a/pve3"
        )
        # One read of each zone's Proxmox for the whole list, whatever the number of hosts and images.
        assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 1, "zone-b": 1}

        page = admin.get(f"{site.url}/admin/hosts/", timeout=60)
        assert page.status_code == 200
        for host, state in (("pve1", "cached"), ("pve2", "importing"), ("pve3", "missing")):
            cells = re.search(rf'<tr data-host="zone-a/{host}">(.*?)</tr>', page.text, re.S)
            assert cells is not None, host
            assert f'data-image="{name}" data-storage="local-lvm" data-cache="{state}"' in cells.group(1), (
                host
            )
            assert 'data-image="debian-12" data-storage="local-lvm" data-cache="cached"' in cells.group(1)
        zone_b = re.search(r'<tr data-host="zone-b/pve1">(.*?)</tr>', page.text, re.S)
        assert zone_b is not None
        assert f'data-image="{name}"' not in zone_b.group(1), "zone-b does not offer it: nothing to cache"


def test_the_zones_list_says_which_zones_have_an_external_network(
    api: Api, site: LightPortal, admin: requests.Session
) -> None:
    def external_of(zone: str) -> str:
        page = get(admin, site, "/admin/zones/").text
        row = re.search(rf'<tr[^>]*data-row="{zone}".*?</tr>', page, re.S)
        assert row is not None, page
        cell = re.search(r'data-label="External network"[^>]*>\s*(.*?)\s*</td>', row.group(0), re.S)
        assert cell is not None, row.group(0)
        return cell.group(1)

    assert external_of("zone-a") == "none: no edge gateways or public IPs"
    answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": external_settings("vmbr9")})
    assert answer.data["updateZone"]["errors"] == [], answer.body
    try:
        assert external_of("zone-a") == f"{CIDR} on vmbr9"
    finally:
        api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": NO_EXTERNAL})
