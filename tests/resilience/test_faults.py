"""Faults: a node offline, a zone down, lost quorum, a network slower than the deadline, a flaky network,
a VM's config lock held, a task that ends in ``TASK ERROR``.

Each is injected into the world's fake Proxmox zones (fakepve's own fault API) and undone after the test.
Each row checks the three things the platform promises: a clear, typed answer (partial data with an
UNAVAILABLE error naming the zone, or a mutation payload error naming the host or carrying Proxmox's
words); in time (measured, and reported in the suite's figures); and nothing half-made left behind,
read in the fake's own state (no extra VM, disk, pool member or snippet; no lock left held).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from devstack.world import World
from tests.apikit import Answer, GraphQL
from tests.promises import RecordFigure
from tests.resilience.conftest import (
    AGENT_TIMEOUT,
    SLACK,
    ZONE_DEADLINE,
    Arrivals,
    drop,
    nothing_half_made,
    settle,
    snippets,
    timed,
)
from tests.vmkit import (
    RESIZE,
    act,
    create,
    fake_vms,
    ok,
    payload,
    present,
    requests_to,
    vmid_of,
)

pytestmark = pytest.mark.promise("faults")

SUITE = "faults"
LIST = "{ virtualMachines(first: 500) { edges { node { id name zone } } } }"
USER_DATA = "#cloud-config\npackages: [nginx]\n"
# A create reads every zone of its VDC twice (before and under its lock), each under the zone deadline.
CREATE_BOUND = 2 * ZONE_DEADLINE + SLACK


def pve(world: World, zone: str) -> Any:
    return world.fakes[zone].pve


def on_fake(world: World, zone: str, change: Callable[[Any], object]) -> None:
    """Apply a change to a zone's fake, on the fakes' loop."""
    fake = pve(world, zone)
    world.fakes.on_loop(lambda: change(fake))


def zones_listed(answer: Answer) -> set[str]:
    return {e["node"]["zone"] for e in answer.data["virtualMachines"]["edges"]}


def vmids(world: World, zone: str) -> set[int]:
    return set(fake_vms(world, zone))


def last_clone(world: World, zone: str = "zone-a") -> int:
    return int(requests_to(world, zone, "POST", "/clone")[-1]["newid"])


@contextmanager
def nodes_offline(world: World, zone: str, *nodes: str) -> Iterator[None]:
    for node in nodes:
        world.fakes.set_node_offline(zone, node)
    try:
        yield
    finally:
        for node in nodes:
            world.fakes.set_node_offline(zone, node, offline=False)


@pytest.fixture
def running(api: GraphQL, vm_name: Callable[[str], str]) -> dict[str, Any]:
    """A running VM of VDC demo in zone-a (made before the test's fault)."""
    vm: dict[str, Any] = ok(create(api, "alice", "demo", name=vm_name("victim")))["virtualMachine"]
    return vm


# ------------------------------------------------------------------------------------ a node offline


def test_a_node_offline_is_failed_over_and_every_listing_is_whole(
    api: GraphQL, world: World, vm_name: Callable[[str], str], record_figure: RecordFigure
) -> None:
    with nodes_offline(world, "zone-a", "pve1"):
        # Each zone call starts at the next agent: three listings meet pve1 first at least once.
        times = []
        for _ in range(3):
            answer, elapsed = timed(lambda: api(LIST, user="admin"))
            assert answer.errors == []
            assert zones_listed(answer) == {"zone-a", "zone-b"}
            times.append(elapsed)
    assert max(times) < ZONE_DEADLINE + SLACK
    record_figure(SUITE, "node offline: listing, whole, in (s)", round(max(times), 2))


def test_an_offline_host_is_not_chosen_and_placement_says_why(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    world.fakes.set_node_offline("zone-a", "pve2")
    world.fakes.set_node_offline("zone-a", "pve3")
    result = ok(create(api, "alice", "demo", name=vm_name("survivor")))
    assert result["placement"]["host"] == "pve1"
    assert {r["host"]: r["reason"] for r in result["placement"]["rejected"]} == {
        "pve2": "the node is offline",
        "pve3": "the node is offline",
    }
    assert present(world, result["virtualMachine"]["id"])["node"] == "pve1"


def test_an_action_on_a_vm_whose_host_is_offline_is_unavailable_naming_the_host(
    api: GraphQL, world: World, running: dict[str, Any], record_figure: RecordFigure
) -> None:
    node = present(world, running["id"])["node"]
    with nodes_offline(world, "zone-a", node):
        result, elapsed = timed(lambda: act(api, "alice", "stopVirtualMachine", running["id"]))
    assert [e["code"] for e in result["errors"]] == ["UNAVAILABLE"]
    assert f"host {node} of zone zone-a is unreachable: No route to host" in result["errors"][0]["message"]
    assert present(world, running["id"])["status"] == "running"
    assert elapsed < AGENT_TIMEOUT + SLACK
    record_figure(SUITE, "node offline: an action on its VM, refused in (s)", round(elapsed, 2))


# ------------------------------------------------------------------------------------ a zone down


def test_a_zone_down_leaves_the_others_listed_and_is_named_unavailable(
    api: GraphQL, world: World, vm_name: Callable[[str], str], record_figure: RecordFigure
) -> None:
    with nodes_offline(world, "zone-b", "pve1", "pve2", "pve3"):
        answer, elapsed = timed(lambda: api(LIST, user="alice", vdc="demo"))
    assert answer.status == 200
    assert zones_listed(answer) == {"zone-a"}
    assert answer.codes == ["UNAVAILABLE"]
    assert answer.errors[0]["extensions"]["zone"] == "zone-b"
    assert "zone-b" in answer.errors[0]["message"]
    assert answer.errors[0]["path"] == ["virtualMachines"]
    assert elapsed < ZONE_DEADLINE + SLACK
    record_figure(SUITE, "zone down: listing, partial, in (s)", round(elapsed, 2))


def test_a_create_in_a_vdc_with_a_zone_down_is_unavailable_naming_it_and_makes_nothing(
    api: GraphQL, world: World, vm_name: Callable[[str], str], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    """VDC demo spans zone-a and zone-b: its VMs in zone-b count against its quota, so it waits."""
    before = vmids(world, "zone-a")
    with nodes_offline(world, "zone-b", "pve1", "pve2", "pve3"):
        arrivals.mark()
        result, elapsed = timed(lambda: create(api, "alice", "demo", name=vm_name("blocked")))
    assert result["virtualMachine"] is None
    assert [e["code"] for e in result["errors"]] == ["UNAVAILABLE"]
    assert "zone(s) zone-b do not answer" in result["errors"][0]["message"]
    assert arrivals.since_mark("POST", "/clone") == []
    assert vmids(world, "zone-a") == before
    nothing_half_made(world, vm_name("blocked"), "zone-a", None)
    assert elapsed < CREATE_BOUND
    record_figure(SUITE, "zone down: a create in its VDC, refused in (s)", round(elapsed, 2))


# ------------------------------------------------------------------------------------ lost quorum


def test_lost_quorum_leaves_listings_whole(
    api: GraphQL, world: World, vm_name: Callable[[str], str], record_figure: RecordFigure
) -> None:
    """Without quorum /etc/pve is read-only: reads still work."""
    on_fake(world, "zone-a", lambda fake: fake.lose_quorum())
    answer, elapsed = timed(lambda: api(LIST, user="admin"))
    assert answer.errors == []
    assert zones_listed(answer) == {"zone-a", "zone-b"}
    record_figure(SUITE, "lost quorum: listing, whole, in (s)", round(elapsed, 2))


def test_a_create_without_quorum_is_refused_in_proxmox_words_and_makes_nothing(
    api: GraphQL, world: World, vm_name: Callable[[str], str], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    before = vmids(world, "zone-a")
    on_fake(world, "zone-a", lambda fake: fake.lose_quorum())
    result, elapsed = timed(lambda: create(api, "alice", "demo", name=vm_name("noquorum")))
    assert result["virtualMachine"] is None
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "cluster not ready - no quorum?" in result["errors"][0]["message"]
    assert len(arrivals.since_mark("POST", "/clone")) == 1  # refused, and not sent again
    assert vmids(world, "zone-a") == before
    nothing_half_made(world, vm_name("noquorum"), "zone-a", last_clone(world))
    assert elapsed < CREATE_BOUND
    record_figure(SUITE, "lost quorum: a create, refused in (s)", round(elapsed, 2))


def test_an_action_without_quorum_is_refused_and_changes_nothing(
    api: GraphQL, world: World, running: dict[str, Any], arrivals: Arrivals
) -> None:
    on_fake(world, "zone-a", lambda fake: fake.lose_quorum())
    arrivals.mark()
    result = act(api, "alice", "stopVirtualMachine", running["id"])
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "no quorum" in result["errors"][0]["message"]
    assert len(arrivals.since_mark("POST", "/status/stop")) == 1
    assert present(world, running["id"])["status"] == "running"


# ------------------------------------------------------------------------------------ a slow network

# PVE seconds of latency past every deadline (tests/conftest.py), yet short enough to settle quickly.
LATE = 4.0


def test_a_zone_slower_than_the_deadline_is_given_up_on_in_time(
    api: GraphQL, world: World, vm_name: Callable[[str], str], record_figure: RecordFigure
) -> None:
    def slow(fake: Any) -> None:
        fake.time_scale = 1.0
        fake.slow_network(LATE)

    on_fake(world, "zone-b", slow)
    answer, elapsed = timed(lambda: api(LIST, user="alice", vdc="demo"))
    assert zones_listed(answer) == {"zone-a"}
    assert answer.codes == ["UNAVAILABLE"]
    assert answer.errors[0]["extensions"]["zone"] == "zone-b"
    assert "zone-b" in answer.errors[0]["message"]
    assert elapsed < ZONE_DEADLINE + SLACK
    record_figure(SUITE, "slow zone: listing, partial, in (s)", round(elapsed, 2))


def test_a_write_to_a_host_slower_than_the_deadline_may_have_run_and_is_sent_once(
    api: GraphQL, world: World, running: dict[str, Any], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    node = present(world, running["id"])["node"]

    def slow(fake: Any) -> None:
        fake.time_scale = 1.0
        fake.slow_network(LATE, node=node)  # requests naming the node: the stop, not the listing

    on_fake(world, "zone-a", slow)
    arrivals.mark()
    result, elapsed = timed(lambda: act(api, "alice", "stopVirtualMachine", running["id"]))
    assert [e["code"] for e in result["errors"]] == ["UNAVAILABLE"]
    assert result["errors"][0]["message"] == (
        f"{node}.zone-a.agents.flexplane did not answer in time; the call may have run"
    )
    assert elapsed < AGENT_TIMEOUT + SLACK
    settle(world)  # the late stop lands: it did run, once
    assert [a.node for a in arrivals.since_mark("POST", "/status/stop")] == [node]
    record_figure(SUITE, "slow host: a write, given up on in (s)", round(elapsed, 2))


# ------------------------------------------------------------------------------------ a flaky network


def test_a_flaky_zone_answers_whole_or_named_unavailable_and_never_a_5xx(
    api: GraphQL, world: World, vm_name: Callable[[str], str], record_figure: RecordFigure
) -> None:
    on_fake(world, "zone-b", lambda fake: fake.flaky_network(drop_rate=0.5))
    outcomes: Counter[str] = Counter()
    slowest = 0.0
    for _ in range(12):
        answer, elapsed = timed(lambda: api(LIST, user="alice", vdc="demo"))
        slowest = max(slowest, elapsed)
        assert answer.status == 200
        assert "zone-a" in zones_listed(answer)
        if answer.errors:
            assert answer.codes == ["UNAVAILABLE"]
            assert answer.errors[0]["extensions"]["zone"] == "zone-b"
            assert zones_listed(answer) == {"zone-a"}
            outcomes["partial"] += 1
        else:
            assert zones_listed(answer) == {"zone-a", "zone-b"}
            outcomes["whole"] += 1
    assert slowest < ZONE_DEADLINE + SLACK
    split = f"{outcomes['whole']} / {outcomes['partial']}"
    record_figure(SUITE, "flaky zone (half dropped): listings whole / partial", split)
    record_figure(SUITE, "flaky zone: slowest listing (s)", round(slowest, 2))


# Each step of a create that writes to Proxmox: before the VM exists, the tag that makes it the VDC's, and
# after (its disk, its start).
CREATE_WRITES = [("POST", "/clone"), ("PUT", "/config"), ("PUT", "/resize"), ("POST", "/status/start")]


@pytest.mark.parametrize(("method", "suffix"), CREATE_WRITES, ids=[f"{m} {s}" for m, s in CREATE_WRITES])
def test_a_create_whose_write_loses_its_connection_is_unavailable_and_leaves_nothing_half_made(
    api: GraphQL,
    world: World,
    vm_name: Callable[[str], str],
    arrivals: Arrivals,
    record_figure: RecordFigure,
    method: str,
    suffix: str,
) -> None:
    """A flaky network, made exact: the connection of one write of the create drops before its answer."""
    name = vm_name("flaky")
    drop(world, "zone-a", method, suffix)
    result, elapsed = timed(lambda: create(api, "alice", "demo", name=name, userData=USER_DATA))
    assert result["virtualMachine"] is None
    assert [e["code"] for e in result["errors"]] == ["UNAVAILABLE"]
    assert "the call may have run" in result["errors"][0]["message"]
    assert len(arrivals.since_mark(method, suffix)) == 1  # never sent again
    if suffix != "/clone":
        assert "was removed" in result["errors"][0]["message"]
    nothing_half_made(world, name, "zone-a", None)
    assert elapsed < CREATE_BOUND
    record_figure(SUITE, f"dropped {method} {suffix}: the create undone in (s)", round(elapsed, 2))


# ------------------------------------------------------------------------------------ a config lock held


def test_a_vm_whose_config_lock_is_held_is_a_conflict_and_no_lock_is_left(
    api: GraphQL, world: World, running: dict[str, Any], record_figure: RecordFigure
) -> None:
    vmid = vmid_of(running["id"])
    fake = pve(world, "zone-a")
    world.fakes.loop.run(fake.hold_config_lock(vmid, None))
    result, elapsed = timed(lambda: act(api, "alice", "stopVirtualMachine", running["id"]))
    assert [e["code"] for e in result["errors"]] == ["CONFLICT"]
    assert f"can't lock file '/var/lock/qemu-server/lock-{vmid}.conf'" in result["errors"][0]["message"]
    world.fakes.on_loop(lambda: fake.release_config_lock(vmid))
    vm = present(world, running["id"])
    assert (vm["status"], vm["lock"]) == ("running", None)
    assert world.fakes.on_loop(lambda: fake.vm(vmid).lock_holder) is None
    assert elapsed < AGENT_TIMEOUT + SLACK
    record_figure(SUITE, "config lock held: an action, refused in (s)", round(elapsed, 2))


def test_a_disk_resize_while_the_config_lock_is_held_is_a_conflict_and_changes_nothing(
    api: GraphQL, world: World, running: dict[str, Any]
) -> None:
    vmid = vmid_of(running["id"])
    fake = pve(world, "zone-a")
    disk_before = present(world, running["id"])["config"]["scsi0"]
    world.fakes.loop.run(fake.hold_config_lock(vmid, None))
    answer = api(RESIZE, user="alice", variables={"input": {"id": running["id"], "diskGb": 40}})
    result = payload(answer, "resizeVirtualMachine")
    assert [e["code"] for e in result["errors"]] == ["CONFLICT"]
    assert "can't lock file" in result["errors"][0]["message"]
    world.fakes.on_loop(lambda: fake.release_config_lock(vmid))
    vm = present(world, running["id"])
    assert vm["config"]["scsi0"] == disk_before
    assert vm["lock"] is None


# ------------------------------------------------------------------------------------ TASK ERROR


def test_a_start_that_ends_in_task_error_removes_the_new_vm_and_its_snippet(
    api: GraphQL, world: World, vm_name: Callable[[str], str], record_figure: RecordFigure
) -> None:
    name = vm_name("boom")
    on_fake(world, "zone-a", lambda f: f.fail("POST", "/status/start", times=1, error="qemu_exited_code"))
    result, elapsed = timed(lambda: create(api, "alice", "demo", name=name, userData=USER_DATA))
    assert result["virtualMachine"] is None
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    message = result["errors"][0]["message"]
    assert "QEMU exited with code 1" in message  # Proxmox's own words
    assert "was removed" in message
    vmid = last_clone(world)
    nothing_half_made(world, name, "zone-a", vmid)
    assert f"fp-demo-{vmid}-vendor.yaml" not in snippets(world)  # it was written, then removed
    assert elapsed < CREATE_BOUND
    record_figure(SUITE, "TASK ERROR at start: the create undone in (s)", round(elapsed, 2))
