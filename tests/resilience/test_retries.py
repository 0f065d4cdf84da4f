"""Retries happen at one layer only, and only for idempotent calls.

The one layer is the orchestrator's zone source: a read fails over to another node of its zone; a
write goes once, to another node only when it surely never reached Proxmox. Counted where it lands:
every request that reaches a fake node (``Arrivals``), dropped ones too, so that a second try by the
agent or by its HTTP library would show as a second arrival.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, cast

import grpc
import pytest

from agentclient import (
    AgentConnectionLost,
    AgentError,
    AgentTarget,
    AgentUnavailable,
    ProxmoxNoAnswer,
    ProxmoxUnreachable,
)
from agentclient.errors import ERROR_METADATA_KEY, PROXMOX_NO_ANSWER, PROXMOX_UNREACHABLE
from agentclient.pool import translate_error
from devstack.world import World
from tests.apikit import GraphQL
from tests.promises import RecordFigure
from tests.resilience.conftest import AGENT_TIMEOUT, SLACK, ZONE_DEADLINE, Arrivals, drop, timed
from tests.vmkit import RESIZE, act, create, fake_vm, ok, payload, present, vmid_of

pytestmark = pytest.mark.promise("faults")

SUITE = "faults"
LIST = "{ virtualMachines(first: 500) { edges { node { id zone } } } }"


@pytest.fixture
def running(api: GraphQL, vm_name: Callable[[str], str]) -> dict[str, Any]:
    vm: dict[str, Any] = ok(create(api, "alice", "demo", name=vm_name("retry")))["virtualMachine"]
    return vm


def test_a_write_whose_connection_drops_reaches_proxmox_once_and_may_have_run(
    api: GraphQL, world: World, running: dict[str, Any], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    node = present(world, running["id"])["node"]
    suffix = f"/qemu/{vmid_of(running['id'])}/status/stop"
    drop(world, "zone-a", "POST", suffix, node=node)
    arrivals.mark()

    result, elapsed = timed(lambda: act(api, "alice", "stopVirtualMachine", running["id"]))

    assert [(a.node, a.method) for a in arrivals.since_mark("POST", suffix)] == [(node, "POST")]
    assert [e["code"] for e in result["errors"]] == ["UNAVAILABLE"]
    assert "may have run" in result["errors"][0]["message"]
    assert present(world, running["id"])["status"] == "running"  # the fake dropped it before it ran
    assert elapsed < AGENT_TIMEOUT + SLACK
    record_figure(SUITE, "arrivals of a write whose connection dropped", 1)


def test_an_idempotent_write_whose_connection_drops_is_not_resent_either(
    api: GraphQL, world: World, running: dict[str, Any], arrivals: Arrivals
) -> None:
    """HTTP libraries resend a PUT on a dropped keep-alive connection (RFC 9112 allows it): not here."""
    node = present(world, running["id"])["node"]
    suffix = f"/qemu/{vmid_of(running['id'])}/resize"
    drop(world, "zone-a", "PUT", suffix, node=node)
    arrivals.mark()

    answer = api(RESIZE, user="alice", variables={"input": {"id": running["id"], "diskGb": 30}})
    result = payload(answer, "resizeVirtualMachine")

    assert [(a.node, a.method) for a in arrivals.since_mark("PUT", suffix)] == [(node, "PUT")]
    assert [e["code"] for e in result["errors"]] == ["UNAVAILABLE"]
    assert "may have run" in result["errors"][0]["message"]
    vm = fake_vm(world, running["id"])
    assert vm is not None
    assert "size=30G" not in str(vm["config"].get("scsi0"))


def test_a_write_that_proxmox_refuses_is_sent_once(
    api: GraphQL, world: World, running: dict[str, Any], arrivals: Arrivals
) -> None:
    suffix = f"/qemu/{vmid_of(running['id'])}/status/stop"
    pve = world.fakes["zone-a"].pve
    world.fakes.on_loop(lambda: pve.fail("POST", suffix, status=500, message="got timeout", times=1))
    arrivals.mark()

    result = act(api, "alice", "stopVirtualMachine", running["id"])

    assert len(arrivals.since_mark("POST", suffix)) == 1
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "got timeout" in result["errors"][0]["message"]
    assert present(world, running["id"])["status"] == "running"


def test_a_read_that_fails_over_reaches_each_node_once(
    api: GraphQL, world: World, vm_name: Callable[[str], str], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    for node in ("pve1", "pve2"):
        drop(world, "zone-b", "GET", "/cluster/resources", node=node, times=None)
    # The zone call starts at the next agent each time: three listings start at each of the three.
    for _ in range(3):
        arrivals.mark()
        answer, elapsed = timed(lambda: api(LIST, user="admin"))

        assert answer.errors == []
        assert {e["node"]["zone"] for e in answer.data["virtualMachines"]["edges"]} == {"zone-a", "zone-b"}
        reads = arrivals.since_mark("GET", "/cluster/resources")
        per_node = Counter(a.node for a in reads if a.zone == "zone-b")
        assert per_node["pve3"] == 1
        assert max(per_node.values()) == 1, per_node
        assert elapsed < ZONE_DEADLINE + SLACK
    record_figure(SUITE, "arrivals per node of a read failed over", 1)


# ------------------------------------------------------------------------------------ telling them apart


class FailedCall:
    """What a failed gRPC call tells: its status, details and the agent's trailing metadata."""

    def __init__(self, details: str, kind: str | None = None) -> None:
        self._details = details
        self._metadata = ((ERROR_METADATA_KEY, kind),) if kind else ()

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


TARGET = AgentTarget("pve1.zone-a.agents.flexplane", "127.0.0.1:7443")


@pytest.mark.parametrize(
    ("details", "kind", "expected", "sent"),
    [
        (
            "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:7443: "
            "Failed to connect to remote host: Connection refused",
            None,
            AgentUnavailable,
            False,
        ),
        ("DNS resolution failed for pve1.example: no such host", None, AgentUnavailable, False),
        ("Socket closed", None, AgentConnectionLost, True),
        ("recvmsg:Connection reset by peer", None, AgentConnectionLost, True),
        ("cannot connect to Proxmox: refused", PROXMOX_UNREACHABLE, ProxmoxUnreachable, False),
        ("the connection to Proxmox failed before its answer", PROXMOX_NO_ANSWER, ProxmoxNoAnswer, True),
    ],
)
def test_an_unavailable_call_says_whether_it_may_have_run(
    details: str, kind: str | None, expected: type[AgentError], sent: bool
) -> None:
    """Only a call that surely never ran may go to another node: the others may have run."""
    error = translate_error(cast(grpc.Call, FailedCall(details, kind)), TARGET, 5.0)

    assert type(error) is expected
    assert isinstance(error, AgentConnectionLost | ProxmoxNoAnswer) is sent
