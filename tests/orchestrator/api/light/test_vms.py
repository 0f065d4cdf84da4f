"""virtualMachines through the API and the Proxmox source on the light world (fakepve behind in-process
agents): what a listing costs in calls to each zone. Who sees what is tested on zones in memory
(tests/orchestrator/api/test_vm_listing.py)."""

from __future__ import annotations

from tests.apikit import Api

LIST = "{ virtualMachines { edges { node { id name zone status vdc host cores memoryMb } } } }"


def test_a_listing_costs_one_proxmox_call_per_zone(api: Api, light) -> None:
    def resource_calls() -> dict[str, int]:
        return {
            zone: light.fakes.on_loop(
                lambda pve: sum(1 for r in pve.requests if r[1].endswith("/cluster/resources")), fake.pve
            )
            for zone, fake in light.fakes.zones.items()
        }

    before = resource_calls()
    api(LIST, user="admin")
    after = resource_calls()
    assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 1, "zone-b": 1}

    # With the zones' status asked first, their nodes are read too (``?type=node``, a few entries: see
    # test_vdc_scoped_reads), once per zone, however many hosts and VMs.
    before = resource_calls()
    api("{ zones { id hosts { name online } } " + LIST.strip()[1:], user="admin")
    after = resource_calls()
    assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 2, "zone-b": 2}


def all_requests(light) -> dict[str, int]:
    return {
        zone: light.fakes.on_loop(lambda pve: len(pve.requests), fake.pve)
        for zone, fake in light.fakes.zones.items()
    }


FULL = """{ virtualMachines(first: 500) { edges { node {
  id name status zone host vdc cores memoryMb diskGb computeProfile storageProfile image lock ipAddresses
} } pageInfo { hasNextPage } } }"""


def test_a_listing_of_every_field_costs_one_proxmox_call_per_zone_and_nothing_else(api: Api, light) -> None:
    before = all_requests(light)
    answer = api(FULL, user="admin")
    after = all_requests(light)
    assert answer.errors == []
    assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 1, "zone-b": 1}
    assert all(e["node"]["ipAddresses"] is None for e in answer.data["virtualMachines"]["edges"])


def test_one_vm_costs_one_call_to_its_zone_and_one_to_its_guest_agent(api: Api, light) -> None:
    before = all_requests(light)
    answer = api('{ virtualMachine(id: "zone-a/100") { name ipAddresses } }', user="alice", vdc="demo")
    after = all_requests(light)
    assert answer.data["virtualMachine"]["name"] == "web-1"
    assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 2, "zone-b": 0}
