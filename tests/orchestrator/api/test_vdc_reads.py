"""VDCs as their members and admin read them through the API, in this process: members see theirs with
live usage, another VDC answers as one that does not exist, a listing costs one read per zone."""

from __future__ import annotations

from orchestrator.models import Usage
from orchestrator.models.vms import parse_tags, vdc_of
from tests.orchestrator.fakeproxmox import FakeProxmox
from tests.orchestrator.inprocess import InProcessApi

VDC_FIELDS = """id name description zones computeProfiles storageProfiles images
                quota { vcpus memoryMib diskGb vms } usage { vcpus memoryMib diskGb vms }"""


def usage_in(zones: FakeProxmox, vdc_id: str) -> dict[str, int]:
    """The VDC's usage as the zones hold it, in the API's terms."""
    total = Usage()
    for zone in zones.zones.values():
        for guest in zone.guests.values():
            if not guest.template and vdc_of(parse_tags(guest.tags)) == vdc_id:
                total = total + Usage.of_guest(guest)
    return {"vcpus": total.vcpus, "memoryMib": total.memory_mib, "diskGb": total.disk_gb, "vms": total.vms}


def test_alice_sees_only_demo_with_its_quota_and_live_usage(api: InProcessApi, zones: FakeProxmox) -> None:
    answer = api(f"{{ vdcs {{ {VDC_FIELDS} }} }}", user="alice")
    assert answer.errors == []
    (demo,) = answer.data["vdcs"]
    assert demo["id"] == "demo"
    assert demo["zones"] == ["zone-a", "zone-b"]
    assert demo["computeProfiles"] == ["small", "medium", "large"]
    assert demo["images"] == ["debian-12", "ubuntu-24.04"]
    assert demo["quota"] == {"vcpus": 16, "memoryMib": 32768, "diskGb": 500, "vms": 10}
    assert demo["usage"] == usage_in(zones, "demo")
    assert demo["usage"]["vms"] == 3  # web-1, db-1, web-2


def test_bob_sees_other_and_gets_not_found_for_demo_as_for_a_vdc_that_does_not_exist(
    api: InProcessApi,
) -> None:
    assert [v["id"] for v in api("{ vdcs { id } }", user="bob").data["vdcs"]] == ["other"]
    theirs = api('{ vdc(id: "demo") { id usage { vms } } }', user="bob")
    missing = api('{ vdc(id: "nowhere") { id usage { vms } } }', user="bob")
    assert theirs.codes == missing.codes == ["NOT_FOUND"]
    assert theirs.data == missing.data == {"vdc": None}
    assert theirs.errors[0]["message"] == "VDC 'demo' does not exist"
    assert missing.errors[0]["message"] == "VDC 'nowhere' does not exist"


def test_a_member_reads_their_vdc_by_id(api: InProcessApi, zones: FakeProxmox) -> None:
    answer = api(
        '{ vdc(id: "other") { id name quota { vcpus } usage { vcpus memoryMib diskGb vms } } }', user="bob"
    )
    assert answer.errors == []
    assert answer.data["vdc"]["quota"] == {"vcpus": 8}
    assert answer.data["vdc"]["usage"] == usage_in(zones, "other")


def test_admin_sees_every_vdc(api: InProcessApi) -> None:
    assert [v["id"] for v in api("{ vdcs { id } }", user="admin").data["vdcs"]] == ["demo", "other"]


def test_usage_of_every_vdc_costs_one_proxmox_read_per_zone(api: InProcessApi, zones: FakeProxmox) -> None:
    before = dict(zones.reads)
    answer = api("{ vdcs { id usage { vms } } }", user="admin")
    assert answer.errors == []
    assert {zone: zones.reads[zone] - before[zone] for zone in zones.reads} == {"zone-a": 1, "zone-b": 1}


def test_a_zone_that_does_not_answer_is_named_and_the_others_still_count(
    api: InProcessApi, zones: FakeProxmox
) -> None:
    zones.silent.add("zone-b")
    answer = api("{ vdcs { id usage { vms } } }", user="alice")
    assert answer.codes == ["UNAVAILABLE"]
    assert "zone-b" in answer.errors[0]["message"]
    assert answer.data["vdcs"] == [{"id": "demo", "usage": {"vms": 2}}]  # web-1 and db-1 of zone-a
