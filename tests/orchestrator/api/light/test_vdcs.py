"""VDCs through the API against the devstack: admin creates, changes and deletes them with their pools in
every zone (reads are in-process: tests/orchestrator/api/test_vdc_reads.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from orchestrator.models import Usage
from orchestrator.models.vms import parse_tags, vdc_of
from orchestrator.sources.proxmox import Guest
from tests.apikit import Zones
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld

ZONES = ("zone-a", "zone-b")
CREATE = """mutation($input: VdcInput!) {
  createVdc(input: $input) { vdc { id name zones quota { vcpus memoryMib diskGb vms } usage { vms } }
                             errors { field message code } } }"""
UPDATE = """mutation($id: ID!, $input: VdcUpdateInput!) {
  updateVdc(id: $id, input: $input) {
    vdc { id name zones quota { vcpus vms } } errors { field message code } } }"""
DELETE = """mutation($id: ID!) { deleteVdc(id: $id) { vdc { id } errors { field message code } } }"""


def pools(light: Zones, zone: str) -> set[str]:
    return light.fakes.on_loop(lambda pve: set(pve.pools), light.fakes[zone].pve)


def proxmox_usage(light: Zones, vdc_id: str) -> dict[str, int]:
    """The VDC's usage as the fake zones hold it, in the API's terms."""

    def read(pve: Any) -> list[dict[str, Any]]:
        return [
            pve._vm_usage(vm)
            for vm in pve.vms
            if not vm.template and vdc_of(parse_tags(vm.config.get("tags"))) == vdc_id
        ]

    total = Usage()
    for zone in ZONES:
        for item in light.fakes.on_loop(read, light.fakes[zone].pve):
            total = total + Usage.of_guest(Guest.from_resource({"type": "qemu", "vmid": 100, **item}))
    return {"vcpus": total.vcpus, "memoryMib": total.memory_mib, "diskGb": total.disk_gb, "vms": total.vms}


def vdc_input(ident: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": ident,
        "name": "Team T",
        "zones": list(ZONES),
        "computeProfiles": ["small", "medium"],
        "storageProfiles": ["standard"],
        "images": ["debian-12"],
        "quota": {"vcpus": 8, "memoryMib": 16384, "diskGb": 200, "vms": 4},
    } | extra


def payload(answer: Any) -> dict[str, Any]:
    assert answer.errors == [], answer.body
    (value,) = answer.data.values()
    assert isinstance(value, dict)
    return value


@pytest.fixture
def new_vdc(api: InProcessApi) -> Iterator[str]:
    ident = f"t-{uuid.uuid4().hex[:8]}"
    yield ident
    api(DELETE, user="admin", variables={"id": ident})


def test_admin_creates_a_vdc_with_a_pool_in_each_zone_and_deletes_it(
    api: InProcessApi, light: LightWorld, new_vdc: str
) -> None:
    made = payload(api(CREATE, user="admin", variables={"input": vdc_input(new_vdc)}))
    assert made == {
        "vdc": {
            "id": new_vdc,
            "name": "Team T",
            "zones": ["zone-a", "zone-b"],
            "quota": {"vcpus": 8, "memoryMib": 16384, "diskGb": 200, "vms": 4},
            "usage": {"vms": 0},
        },
        "errors": [],
    }
    assert all(f"fp-{new_vdc}" in pools(light, zone) for zone in ZONES)

    gone = payload(api(DELETE, user="admin", variables={"id": new_vdc}))
    assert gone == {"vdc": {"id": new_vdc}, "errors": []}
    assert all(f"fp-{new_vdc}" not in pools(light, zone) for zone in ZONES)
    assert api(f'{{ vdc(id: "{new_vdc}") {{ id }} }}', user="admin").codes == ["NOT_FOUND"]


def test_deleting_a_vdc_with_vms_is_refused_with_their_count(api: InProcessApi, light: LightWorld) -> None:
    answer = payload(api(DELETE, user="admin", variables={"id": "demo"}))
    assert answer["vdc"] is None
    (error,) = answer["errors"]
    assert error["code"] == "CONFLICT"
    assert f"VDC 'demo' still has {proxmox_usage(light, 'demo')['vms']} VM(s)" in error["message"]
    assert all("fp-demo" in pools(light, zone) for zone in ZONES)


def test_admin_updates_a_vdc_quota_and_zones(api: InProcessApi, light: LightWorld, new_vdc: str) -> None:
    payload(api(CREATE, user="admin", variables={"input": vdc_input(new_vdc, zones=["zone-a"])}))
    changed = payload(
        api(
            UPDATE,
            user="admin",
            variables={"id": new_vdc, "input": {"zones": list(ZONES), "quota": {"vms": 9}}},
        )
    )
    assert changed["vdc"] == {
        "id": new_vdc,
        "name": "Team T",
        "zones": list(ZONES),
        "quota": {"vcpus": 8, "vms": 9},
    }
    assert f"fp-{new_vdc}" in pools(light, "zone-b")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"id": "Bad Id"}, "id"),
        ({"zones": ["zone-a", "atlantis"]}, "zones"),
        ({"computeProfiles": ["huge"]}, "computeProfiles"),
        ({"storageProfiles": ["nvme"]}, "storageProfiles"),
        ({"images": ["windows-95"]}, "images"),
        ({"quota": {"vcpus": -1, "memoryMib": 1, "diskGb": 1, "vms": 1}}, "quota.vcpus"),
        ({"quota": {"vcpus": 1, "memoryMib": -1, "diskGb": 1, "vms": 1}}, "quota.memoryMib"),
        ({"quota": {"vcpus": 1, "memoryMib": 1, "vms": 1}}, "quota.diskGb"),
        # Past the platform's maximum (orchestrator.models.vdcs.MAX_SNAPSHOTS_PER_VM).
        (
            {"quota": {"vcpus": 1, "memoryMib": 1, "diskGb": 1, "vms": 1, "snapshotsPerVm": 1000}},
            "quota.snapshotsPerVm",
        ),
    ],
)
def test_each_bad_vdc_value_is_a_payload_error_naming_its_field(
    api: InProcessApi, light: LightWorld, new_vdc: str, change: dict[str, Any], field: str
) -> None:
    answer = payload(api(CREATE, user="admin", variables={"input": vdc_input(new_vdc) | change}))
    assert answer["vdc"] is None
    assert [(e["field"], e["code"]) for e in answer["errors"]] == [(field, "INVALID")]
    assert all(f"fp-{new_vdc}" not in pools(light, zone) for zone in ZONES)


def test_a_user_cannot_create_a_vdc(api: InProcessApi, light: LightWorld, new_vdc: str) -> None:
    answer = api(CREATE, user="alice", variables={"input": vdc_input(new_vdc)})
    assert answer.codes == ["FORBIDDEN"]
    assert answer.data == {"createVdc": None}
    assert all(f"fp-{new_vdc}" not in pools(light, zone) for zone in ZONES)
