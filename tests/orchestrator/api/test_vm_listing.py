"""virtualMachines as each caller lists them through the API, in this process: who sees which VDC's VMs,
pages and cursors, typed errors, what is not flex.plane's (the listing's cost through the agents, against
the devstack: tests/orchestrator/graphql/test_vms.py)."""

from __future__ import annotations

from typing import Any

from orchestrator.models.vms import parse_tags, vdc_in, vdc_of
from tests.orchestrator.inprocess import InProcessApi

LIST = "{ virtualMachines { edges { node { id name zone status vdc host cores memoryMb } } } }"


def names(answer: Any) -> set[tuple[str, str]]:
    return {(e["node"]["zone"], e["node"]["name"]) for e in answer.data["virtualMachines"]["edges"]}


def test_alice_sees_exactly_the_demo_vms_of_both_zones(api: InProcessApi) -> None:
    answer = api(LIST, user="alice", vdc="demo")
    assert answer.status == 200, answer.body
    assert answer.errors == []
    assert names(answer) == {("zone-a", "web-1"), ("zone-a", "db-1"), ("zone-b", "web-2")}
    assert {e["node"]["vdc"] for e in answer.data["virtualMachines"]["edges"]} == {"demo"}


def test_vms_carry_their_live_state_from_proxmox(api: InProcessApi) -> None:
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


def test_bob_is_forbidden_from_the_demo_vdc(api: InProcessApi) -> None:
    answer = api(LIST, user="bob", vdc="demo")
    assert answer.status == 403
    assert answer.codes == ["FORBIDDEN"]
    assert answer.data is None


def test_bob_sees_only_his_own_vdc(api: InProcessApi) -> None:
    answer = api(LIST, user="bob", vdc="other")
    assert names(answer) == {("zone-a", "ci-runner"), ("zone-b", "analytics")}


def test_a_user_without_a_vdc_header_sees_the_vdcs_they_belong_to(api: InProcessApi) -> None:
    assert names(api(LIST, user="alice")) == {("zone-a", "web-1"), ("zone-a", "db-1"), ("zone-b", "web-2")}


def test_admin_without_a_header_sees_every_vdc_but_not_unmanaged_vms_or_templates(api: InProcessApi) -> None:
    seen = names(api(LIST, user="admin"))
    assert seen == {
        ("zone-a", "web-1"),
        ("zone-a", "db-1"),
        ("zone-a", "ci-runner"),
        ("zone-b", "web-2"),
        ("zone-b", "analytics"),
    }


def test_admin_may_name_any_vdc(api: InProcessApi) -> None:
    assert names(api(LIST, user="admin", vdc="other")) == {("zone-a", "ci-runner"), ("zone-b", "analytics")}


def test_pages_follow_each_other_by_cursor(api: InProcessApi) -> None:
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


def test_a_page_size_out_of_range_is_a_typed_error_naming_the_argument(api: InProcessApi) -> None:
    answer = api("{ virtualMachines(first: 0) { edges { cursor } } }", user="alice", vdc="demo")
    assert answer.codes == ["INVALID"]
    assert answer.errors[0]["extensions"]["field"] == "first"


def test_a_forged_cursor_is_a_typed_error(api: InProcessApi) -> None:
    answer = api('{ virtualMachines(after: "not-a-cursor") { edges { cursor } } }', user="alice", vdc="demo")
    assert answer.codes == ["INVALID"]
    assert answer.errors[0]["extensions"]["field"] == "after"


def test_a_malformed_vdc_header_is_refused(api: InProcessApi) -> None:
    answer = api(LIST, user="alice", vdc="../demo")
    assert answer.status == 400


def test_an_unmanaged_vm_or_a_template_is_not_found_by_id(api: InProcessApi) -> None:
    for ident in ("zone-a/103", "zone-a/9000", "zone-c/100", "not-an-id", "zone-a/99"):
        answer = api(
            "query($id: ID!) { virtualMachine(id: $id) { id } }", user="admin", variables={"id": ident}
        )
        assert answer.codes == ["NOT_FOUND"], ident


def test_filtered_pages_follow_each_other(api: InProcessApi) -> None:
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
