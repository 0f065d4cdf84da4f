"""Volume snapshots on the volume pages as a browser uses them (the portal served from this process on the
light world, ``tests/portal/served.py``): alice takes a snapshot of a detached volume from its page, is
told why an attached one cannot be, makes a new volume from a snapshot, deletes one after its confirmation
and still finds those of a deleted volume on the list of volumes; bob, of another VDC, gets the 404 page
for every page of hers. Each step is checked where it lands, in the fake's Proxmox too."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from tests.orchestrator.api.light.test_volumes import ATTACH, CREATE, DELETE, DETACH, call
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.portal.light.test_portal_action_parity import rendered_actions
from tests.portal.pagekit import field_error, get, post, served
from tests.portal.served import LightPortal
from tests.vmkit import create, fake_vm, fake_vms, ok, payload, scratch_vdcs

SNAPSHOT_FIELDS = "id name vdc zone sizeGb status source"
TAKE = f"""mutation($volume: ID!, $name: String!) {{ createVolumeSnapshot(volume: $volume, name: $name) {{
  snapshot {{ {SNAPSHOT_FIELDS} }} errors {{ field message code }} }} }}"""
DROP = "mutation($id: ID!) { deleteVolumeSnapshot(id: $id) { errors { code } } }"
SNAPSHOTS = f"{{ volumeSnapshots {{ {SNAPSHOT_FIELDS} }} }}"
VOLUMES = "{ volumes { id name vdc } }"
DELETE_VM = "mutation($id: ID!) { deleteVirtualMachine(id: $id) { errors { code } } }"

VOLUME_ROW = re.compile(r'<tr data-volume="([^"]+)" data-status="([^"]+)">(.*?)</tr>', re.S)
SNAPSHOT_ROW = re.compile(r'<tr data-snapshot="([^"]+)" data-status="([^"]+)">(.*?)</tr>', re.S)
SNAPSHOT_CARD = re.compile(r'<li [^>]*data-snapshot="([^"]+)" data-status="([^"]+)">(.*?)</li>', re.S)


@pytest.fixture
def named(api: InProcessApi) -> Iterator[Callable[[str], str]]:
    """Unique names of VDC demo's volumes, snapshots and VMs: whatever of them is left goes afterwards."""
    made: list[str] = []

    def name(base: str) -> str:
        made.append(f"{base}-{uuid.uuid4().hex[:6]}")
        return made[-1]

    yield name
    for snapshot in api(SNAPSHOTS, user="admin").data["volumeSnapshots"]:
        if snapshot["name"] in made and snapshot["vdc"] == "demo":
            api(DROP, user="admin", variables={"id": snapshot["id"]})
    for volume in api(VOLUMES, user="admin").data["volumes"]:
        if volume["name"] in made and volume["vdc"] == "demo":
            call(api, DETACH, "detachVolume", user="admin", id=volume["id"])
            call(api, DELETE, "deleteVolume", user="admin", id=volume["id"])
    for edge in api("{ virtualMachines(first: 500) { edges { node { id name } } } }", user="admin").data[
        "virtualMachines"
    ]["edges"]:
        if edge["node"]["name"] in made:
            api(DELETE_VM, user="admin", variables={"id": edge["node"]["id"]})


def a_volume(api: InProcessApi, name: str, size: int = 10, **where: Any) -> dict[str, Any]:
    """A volume of VDC demo (in zone-a unless told where), made through the API."""
    made = ok(call(api, CREATE, "createVolume", name=name, size=size, **(where or {"zone": "zone-a"})))
    volume: dict[str, Any] = made["volume"]
    return volume


def a_snapshot(api: InProcessApi, volume: dict[str, Any], name: str) -> dict[str, Any]:
    """A snapshot of a detached volume of VDC demo, taken through the API."""
    taken = api(TAKE, user="alice", vdc="demo", variables={"volume": volume["id"], "name": name})
    answer: dict[str, Any] = ok(taken.data["createVolumeSnapshot"])["snapshot"]
    return answer


def page_of(volume: dict[str, Any]) -> str:
    return f"/vdc/demo/volumes/{volume['id']}/"


def snapshot_path(snapshot: dict[str, Any], action: str) -> str:
    return f"/vdc/demo/volumes/snapshots/{snapshot['id']}/{action}/"


def words(page: str) -> str:
    """A page's words, its tags and runs of spaces gone."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))).strip()


def form_errors(page: str) -> str:
    """The words of the errors shown above a form (its refusals no field owns)."""
    found = re.search(r"<div [^>]*data-form-errors>(.*?)</div>", page, re.S)
    return words(found.group(1)) if found else ""


def cards(page: str) -> dict[str, tuple[str, str]]:
    """The snapshots on a volume's page: name -> (status, words)."""
    return {name: (status, words(body)) for name, status, body in SNAPSHOT_CARD.findall(page)}


def listed(session: requests.Session, site: LightPortal) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The list of volumes: its volumes (name -> the words of their rows) and its snapshots (name -> (status,
    the row's HTML))."""
    page = served(session, site, "/vdc/demo/volumes/")
    volumes = {name: words(body) for name, _, body in VOLUME_ROW.findall(page)}
    snapshots = {name: (status, body) for name, status, body in SNAPSHOT_ROW.findall(page)}
    return volumes, snapshots


def listed_of(session: requests.Session, site: LightPortal, vdc: str) -> set[str]:
    """The names of the snapshots on a VDC's list of volumes."""
    return {name for name, _, _ in SNAPSHOT_ROW.findall(served(session, site, f"/vdc/{vdc}/volumes/"))}


def snapshot_holders(light: LightWorld) -> set[int]:
    return {vmid for vmid, guest in fake_vms(light, "zone-a").items() if guest["name"].endswith(".snapshot")}


# ------------------------------------------------------------------------------------------ take


def test_alice_takes_a_snapshot_of_a_detached_volume_on_its_page_and_sees_it_listed(
    api: InProcessApi,
    site: LightPortal,
    light: LightWorld,
    alice: requests.Session,
    named: Callable[[str], str],
) -> None:
    volume = a_volume(api, named("pvol"), size=12)
    page = served(alice, site, page_of(volume))
    assert 'id="volume-snapshot-form"' in page
    assert "No snapshot yet." in page

    name = named("psnap")
    taken = post(alice, site, f"{page_of(volume)}snapshots/new/", {"name": name})
    assert taken.status_code == 303, taken.text[:3000]
    assert taken.headers["Location"] == page_of(volume)
    said = served(alice, site, taken.headers["Location"])
    assert f"Snapshot {name} of volume {volume['name']} was taken (12 GiB)." in said
    status, card = cards(said)[name]
    assert status == "available"
    assert "Size 12 GiB" in card
    assert re.search(r"Taken \d{4}-\d\d-\d\d \d\d:\d\d UTC", card)
    # Its form making a new volume offers the snapshot's size.
    [snapshot] = [s for s in api(SNAPSHOTS, user="admin").data["volumeSnapshots"] if s["name"] == name]
    row_form = said[said.index(f'action="{snapshot_path(snapshot, "new-volume")}"') :]
    assert re.search(r'name="size_gb" value="12"', row_form[: row_form.index("</form>")])

    # In the fake: a stopped copy of the VDC's pool, tagged with the volume it was taken of.
    copy = fake_vm(light, snapshot["id"])
    assert copy is not None
    assert (copy["name"], copy["status"], copy["pool"]) == (f"{name}.snapshot", "stopped", "fp-demo")
    assert f"fp-of-{volume['id'].split('/')[1]}" in copy["config"]["tags"].split(";")

    # On the list of volumes, below the volumes, linking to its volume and to what can be done with it.
    _, snapshots = listed(alice, site)
    status, row = snapshots[name]
    assert status == "available"
    assert f'href="{page_of(volume)}">{volume["name"]}</a>' in row
    assert f'href="{snapshot_path(snapshot, "new-volume")}"' in row
    assert f'href="{snapshot_path(snapshot, "delete")}"' in row

    # Every form of these pages performs a registered action, the snapshots' three among them.
    seen = rendered_actions(site, "alice", [page_of(volume), snapshot_path(snapshot, "delete")])
    assert {"volume.snapshot", "volume-snapshot.new-volume", "volume-snapshot.delete"} <= seen


def test_a_snapshot_name_taken_is_said_next_to_the_field(
    api: InProcessApi, site: LightPortal, alice: requests.Session, named: Callable[[str], str]
) -> None:
    first = a_volume(api, named("pvol"))
    other = a_volume(api, named("pvol"))
    snapshot = a_snapshot(api, first, named("psnap"))

    refused = post(alice, site, f"{page_of(other)}snapshots/new/", {"name": snapshot["name"]})
    assert refused.status_code == 200
    assert "already has a volume snapshot named" in field_error(refused.text, "name")
    invalid = post(alice, site, f"{page_of(other)}snapshots/new/", {"name": "Not_A_Label"})
    assert invalid.status_code == 200
    assert "not a valid snapshot name" in field_error(invalid.text, "name")
    assert cards(served(alice, site, page_of(other))) == {}


def test_an_attached_volume_offers_no_snapshot_and_one_asked_anyway_is_refused_in_the_form(
    api: InProcessApi,
    site: LightPortal,
    light: LightWorld,
    alice: requests.Session,
    named: Callable[[str], str],
) -> None:
    vm = ok(create(api, "alice", "demo", name=named("pvm")))["virtualMachine"]
    volume = a_volume(api, named("pvol"), near=vm["id"])
    ok(call(api, ATTACH, "attachVolume", id=volume["id"], vm=vm["id"]))
    before = snapshot_holders(light)

    page = served(alice, site, page_of(volume))
    assert 'id="volume-snapshot-form"' not in page
    [why] = re.findall(r"<p [^>]*data-no-snapshot>(.*?)</p>", page, re.S)
    assert f"detach it from VM {vm['id']} first" in words(why)

    refused = post(alice, site, f"{page_of(volume)}snapshots/new/", {"name": named("psnap")})
    assert refused.status_code == 200
    assert 'id="volume-snapshot-form"' in refused.text  # shown again, with the service's refusal
    said = form_errors(refused.text)
    assert f"attached to VM {vm['id']}" in said
    assert "detach it first" in said
    assert snapshot_holders(light) == before


def test_a_snapshot_past_the_disk_quota_is_refused_above_the_form(
    api: InProcessApi, site: LightPortal, light: LightWorld, admin: requests.Session
) -> None:
    with scratch_vdcs(api, light) as make:
        vdc = make(diskGb=15)
        variables = {"name": "base", "size": 10, "zone": "zone-a"}
        volume = ok(payload(api(CREATE, user="admin", vdc=vdc, variables=variables), "createVolume"))[
            "volume"
        ]
        before = snapshot_holders(light)

        page = f"/vdc/{vdc}/volumes/{volume['id']}/"
        assert 'id="volume-snapshot-form"' in served(admin, site, page)
        refused = post(admin, site, f"{page}snapshots/new/", {"name": "over"})
        assert refused.status_code == 200
        assert f"this would exceed the quota of VDC '{vdc}'" in form_errors(refused.text)
        assert snapshot_holders(light) == before


# ------------------------------------------------------------------------------------------ a new volume


def test_a_new_volume_from_a_snapshot_is_listed_with_its_size(
    api: InProcessApi,
    site: LightPortal,
    light: LightWorld,
    alice: requests.Session,
    named: Callable[[str], str],
) -> None:
    volume = a_volume(api, named("pvol"), size=10)
    snapshot = a_snapshot(api, volume, named("psnap"))
    path = snapshot_path(snapshot, "new-volume")
    form = served(alice, site, path)
    assert re.search(r'name="size_gb" value="10"', form)
    assert f"of volume {volume['name']}" in words(form)

    # Refused, each where the user can act on it.
    small = post(alice, site, path, {"name": named("pcopy"), "size_gb": "5"})
    assert small.status_code == 200
    assert "at least its 10 GiB" in field_error(small.text, "size_gb")
    big = post(alice, site, path, {"name": named("pcopy"), "size_gb": "99999"})
    assert big.status_code == 200
    assert "allows at most 200 GiB" in field_error(big.text, "size_gb")
    bad = post(alice, site, path, {"name": "Not_A_Label", "size_gb": "10"})
    assert "not a valid volume name" in field_error(bad.text, "name")

    # Made, grown: on the list with its size, its copy grown in the fake.
    name = named("pcopy")
    made = post(alice, site, path, {"name": name, "size_gb": "16"})
    assert made.status_code == 303, made.text[:3000]
    assert made.headers["Location"] == "/vdc/demo/volumes/"
    said = served(alice, site, made.headers["Location"])
    assert f"Volume {name} (16 GiB) was created from snapshot {snapshot['name']}." in said
    volumes, _ = listed(alice, site)
    assert volumes[name].startswith(f"{name} 16 GiB available")
    [copy] = [v for v in api(VOLUMES, user="alice", vdc="demo").data["volumes"] if v["name"] == name]
    holder = fake_vm(light, copy["id"])
    assert holder is not None
    assert "size=16G" in holder["config"]["scsi0"]


def test_a_new_volume_may_not_take_another_volumes_name(
    api: InProcessApi, site: LightPortal, alice: requests.Session, named: Callable[[str], str]
) -> None:
    volume = a_volume(api, named("pvol"))
    snapshot = a_snapshot(api, volume, named("psnap"))

    refused = post(
        alice, site, snapshot_path(snapshot, "new-volume"), {"name": volume["name"], "size_gb": "10"}
    )
    assert refused.status_code == 200
    assert "already has a volume named" in field_error(refused.text, "name")


# ------------------------------------------------------------------------------------------ delete


def test_a_snapshot_is_deleted_after_its_confirmation_and_its_volume_kept(
    api: InProcessApi,
    site: LightPortal,
    light: LightWorld,
    alice: requests.Session,
    named: Callable[[str], str],
) -> None:
    volume = a_volume(api, named("pvol"))
    snapshot = a_snapshot(api, volume, named("psnap"))
    path = snapshot_path(snapshot, "delete")
    assert f'href="{path}"' in served(alice, site, page_of(volume))

    asked = served(alice, site, path)
    assert f"Delete volume snapshot {snapshot['name']}?" in asked
    assert "This cannot be undone" in asked
    assert 'data-action="volume-snapshot.delete"' in asked
    unconfirmed = post(alice, site, path, {})
    assert unconfirmed.status_code == 200
    assert fake_vm(light, snapshot["id"]) is not None

    deleted = post(alice, site, path, {"confirm": "yes"})
    assert deleted.status_code == 303
    assert deleted.headers["Location"] == page_of(volume)
    page = served(alice, site, page_of(volume))
    assert f"Volume snapshot {snapshot['name']} was deleted with its copy." in page
    assert cards(page) == {}
    assert snapshot["name"] not in listed(alice, site)[1]
    assert fake_vm(light, snapshot["id"]) is None
    assert fake_vm(light, volume["id"]) is not None
    assert get(alice, site, path).status_code == 404


def test_a_deleted_volumes_snapshot_stays_on_the_list_with_what_can_be_done_with_it(
    api: InProcessApi, site: LightPortal, alice: requests.Session, named: Callable[[str], str]
) -> None:
    volume = a_volume(api, named("pvol"), size=11)
    snapshot = a_snapshot(api, volume, named("psnap"))
    ok(call(api, DELETE, "deleteVolume", id=volume["id"]))
    assert get(alice, site, page_of(volume)).status_code == 404

    volumes, snapshots = listed(alice, site)
    assert volume["name"] not in volumes
    status, row = snapshots[snapshot["name"]]
    assert status == "available"
    assert f"deleted ({volume['id']})" in words(row)
    assert "11 GiB" in words(row)
    assert f'href="{snapshot_path(snapshot, "new-volume")}"' in row
    assert f'href="{snapshot_path(snapshot, "delete")}"' in row

    form = served(alice, site, snapshot_path(snapshot, "new-volume"))
    assert f"of a volume since deleted ({volume['id']})" in words(form)
    deleted = post(alice, site, snapshot_path(snapshot, "delete"), {"confirm": "yes"})
    assert deleted.status_code == 303
    assert deleted.headers["Location"] == "/vdc/demo/volumes/"
    assert snapshot["name"] not in listed(alice, site)[1]


# ------------------------------------------------------------------------------------------ other VDCs


def test_another_vdcs_snapshot_is_the_404_page(
    api: InProcessApi,
    site: LightPortal,
    light: LightWorld,
    alice: requests.Session,
    bob: requests.Session,
    named: Callable[[str], str],
) -> None:
    volume = a_volume(api, named("pvol"))
    snapshot = a_snapshot(api, volume, named("psnap"))
    new_volume = {"name": named("pstolen"), "size_gb": "10"}

    for vdc in ("demo", "other"):  # hers, and his own: neither has it for him
        base = f"/vdc/{vdc}/volumes"
        assert get(bob, site, f"{base}/{volume['id']}/").status_code == 404
        assert get(bob, site, f"{base}/snapshots/{snapshot['id']}/new-volume/").status_code == 404
        assert get(bob, site, f"{base}/snapshots/{snapshot['id']}/delete/").status_code == 404
        sent = (
            (f"{base}/{volume['id']}/snapshots/new/", {"name": named("pstolen")}),
            (f"{base}/snapshots/{snapshot['id']}/new-volume/", new_volume),
            (f"{base}/snapshots/{snapshot['id']}/delete/", {"confirm": "yes"}),
        )
        for path, data in sent:
            assert post(bob, site, path, data).status_code == 404, path
    assert snapshot["name"] not in listed_of(bob, site, "other")
    assert fake_vm(light, snapshot["id"]) is not None
    assert new_volume["name"] not in {v["name"] for v in api(VOLUMES, user="admin").data["volumes"]}
    assert snapshot["name"] in listed(alice, site)[1]
