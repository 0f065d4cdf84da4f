"""virtualMachines through the whole stack: HTTP, the orchestrator, agents over mTLS, fake Proxmox."""

from __future__ import annotations

from orchestrator.models.vms import parse_tags, vdc_in, vdc_of
from tests.support import GraphQL

LIST = "{ virtualMachines { edges { node { id name zone status vdc host cores memoryMb } } } }"


def names(answer) -> set[tuple[str, str]]:
    return {(e["node"]["zone"], e["node"]["name"]) for e in answer.data["virtualMachines"]["edges"]}


def test_alice_sees_exactly_the_demo_vms_of_both_zones(api: GraphQL) -> None:
    answer = api(LIST, user="alice", vdc="demo")
    assert answer.status == 200, answer.body
    assert answer.errors == []
    assert names(answer) == {("zone-a", "web-1"), ("zone-a", "db-1"), ("zone-b", "web-2")}
    assert {e["node"]["vdc"] for e in answer.data["virtualMachines"]["edges"]} == {"demo"}


def test_vms_carry_their_live_state_from_proxmox(api: GraphQL) -> None:
    answer = api(LIST, user="alice", vdc="demo")
    web1 = next(e["node"] for e in answer.data["virtualMachines"]["edges"] if e["node"]["name"] == "web-1")
    assert web1 == {
        "id": "zone-a/100",
        "name": "web-1",
        "zone": "zone-a",
        "status": "running",
        "vdc": "demo",
        "host": "pve1",
        "cores": 2,
        "memoryMb": 2048,
    }


def test_bob_is_forbidden_from_the_demo_vdc(api: GraphQL) -> None:
    answer = api(LIST, user="bob", vdc="demo")
    assert answer.status == 403
    assert answer.codes == ["FORBIDDEN"]
    assert answer.data is None


def test_bob_sees_only_his_own_vdc(api: GraphQL) -> None:
    answer = api(LIST, user="bob", vdc="other")
    assert names(answer) == {("zone-a", "ci-runner"), ("zone-b", "analytics")}


def test_a_user_without_a_vdc_header_sees_the_vdcs_they_belong_to(api: GraphQL) -> None:
    assert names(api(LIST, user="alice")) == {("zone-a", "web-1"), ("zone-a", "db-1"), ("zone-b", "web-2")}


def test_admin_without_a_header_sees_every_vdc_but_not_unmanaged_vms_or_templates(api: GraphQL) -> None:
    seen = names(api(LIST, user="admin"))
    assert seen == {
        ("zone-a", "web-1"),
        ("zone-a", "db-1"),
        ("zone-a", "ci-runner"),
        ("zone-b", "web-2"),
        ("zone-b", "analytics"),
    }


def test_admin_may_name_any_vdc(api: GraphQL) -> None:
    assert names(api(LIST, user="admin", vdc="other")) == {("zone-a", "ci-runner"), ("zone-b", "analytics")}


def test_pages_follow_each_other_by_cursor(api: GraphQL) -> None:
    query = """query($after: String) { virtualMachines(first: 2, after: $after) {
                 edges { cursor node { name } } pageInfo { hasNextPage endCursor } } }"""
    first = api(query, user="admin", variables={"after": None}).data["virtualMachines"]
    assert [e["node"]["name"] for e in first["edges"]] == ["analytics", "ci-runner"]
    assert first["pageInfo"]["hasNextPage"] is True
    second = api(query, user="admin", variables={"after": first["pageInfo"]["endCursor"]}).data[
        "virtualMachines"
    ]
    assert [e["node"]["name"] for e in second["edges"]] == ["db-1", "web-1"]
    third = api(query, user="admin", variables={"after": second["pageInfo"]["endCursor"]}).data[
        "virtualMachines"
    ]
    assert [e["node"]["name"] for e in third["edges"]] == ["web-2"]
    assert third["pageInfo"] == {"hasNextPage": False, "endCursor": third["edges"][0]["cursor"]}


def test_a_page_size_out_of_range_is_a_typed_error_naming_the_argument(api: GraphQL) -> None:
    answer = api("{ virtualMachines(first: 0) { edges { cursor } } }", user="alice", vdc="demo")
    assert answer.codes == ["INVALID"]
    assert answer.errors[0]["extensions"]["field"] == "first"


def test_a_forged_cursor_is_a_typed_error(api: GraphQL) -> None:
    answer = api('{ virtualMachines(after: "not-a-cursor") { edges { cursor } } }', user="alice", vdc="demo")
    assert answer.codes == ["INVALID"]
    assert answer.errors[0]["extensions"]["field"] == "after"


def test_a_malformed_vdc_header_is_refused(api: GraphQL) -> None:
    answer = api(LIST, user="alice", vdc="../demo")
    assert answer.status == 400


def test_a_listing_costs_one_proxmox_call_per_zone(api: GraphQL, world) -> None:
    def resource_calls() -> dict[str, int]:
        return {
            zone: world.fakes.on_loop(
                lambda pve: sum(1 for r in pve.requests if r[1].endswith("/cluster/resources")), fake.pve
            )
            for zone, fake in world.fakes.zones.items()
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


def all_requests(world) -> dict[str, int]:
    return {
        zone: world.fakes.on_loop(lambda pve: len(pve.requests), fake.pve)
        for zone, fake in world.fakes.zones.items()
    }


FULL = """{ virtualMachines(first: 500) { edges { node {
  id name status zone host vdc cores memoryMb diskGb computeProfile storageProfile image lock ipAddresses
} } pageInfo { hasNextPage } } }"""


def test_a_listing_of_every_field_costs_one_proxmox_call_per_zone_and_nothing_else(
    api: GraphQL, world
) -> None:
    before = all_requests(world)
    answer = api(FULL, user="admin")
    after = all_requests(world)
    assert answer.errors == []
    assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 1, "zone-b": 1}
    assert all(e["node"]["ipAddresses"] is None for e in answer.data["virtualMachines"]["edges"])


def test_one_vm_costs_one_call_to_its_zone_and_one_to_its_guest_agent(api: GraphQL, world) -> None:
    before = all_requests(world)
    answer = api('{ virtualMachine(id: "zone-a/100") { name ipAddresses } }', user="alice", vdc="demo")
    after = all_requests(world)
    assert answer.data["virtualMachine"]["name"] == "web-1"
    assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 2, "zone-b": 0}


def test_an_unmanaged_vm_or_a_template_is_not_found_by_id(api: GraphQL) -> None:
    for ident in ("zone-a/103", "zone-a/9000", "zone-c/100", "not-an-id", "zone-a/99"):
        answer = api(
            "query($id: ID!) { virtualMachine(id: $id) { id } }", user="admin", variables={"id": ident}
        )
        assert answer.codes == ["NOT_FOUND"], ident


def test_filtered_pages_follow_each_other(api: GraphQL) -> None:
    query = """query($after: String) { virtualMachines(first: 1, after: $after, filter: {status: "running"}) {
                 edges { node { name status } } pageInfo { hasNextPage endCursor } } }"""
    seen: list[str] = []
    after = None
    while True:
        page = api(query, user="admin", variables={"after": after}).data["virtualMachines"]
        seen += [e["node"]["name"] for e in page["edges"]]
        assert all(e["node"]["status"] == "running" for e in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == ["analytics", "ci-runner", "web-1", "web-2"]


def test_the_listing_reads_the_vdc_tag_as_the_tag_parser_does() -> None:
    for raw in (
        None,
        "",
        "fp-vdc-demo",
        "a;fp-vdc-demo;b",
        "xfp-vdc-demo",
        "fp-vdc-",
        "fp-vdc-a,b",
        "x fp-vdc-d",
    ):
        assert vdc_in(raw) == vdc_of(parse_tags(raw)), raw
