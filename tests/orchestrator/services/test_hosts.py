"""Host services in this process, wired to the test world: a removed host is never dialled again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentclient import AgentPool, AgentTarget, ClientTLS, host_identity
from devstack.world import World
from orchestrator.services import catalog, hosts, inventory, vms
from orchestrator.services.context import Context
from tests.orchestrator.services.conftest import context, wire


class RecordingPool(AgentPool):
    """The product's pool, noting every agent it is asked to reach (the one way to dial an agent)."""

    def __init__(self, tls: ClientTLS, timeout: float) -> None:
        super().__init__(tls, timeout=timeout)
        self.dialled: list[str] = []

    def _connection(self, target: AgentTarget):
        self.dialled.append(target.identity)
        return super()._connection(target)


@pytest.fixture(scope="module")
def pool(world: World) -> Iterator[RecordingPool]:
    """This process's kube and Proxmox sources pointed at the world, through a recording pool."""
    with wire(world, lambda tls: RecordingPool(tls, timeout=2.0)) as (_, recording):
        assert isinstance(recording, RecordingPool)
        yield recording


def admin() -> Context:
    """A fresh request's context (its own catalog snapshot and memo)."""
    return context("ADMIN")


def test_nothing_dials_a_host_that_is_no_longer_in_the_catalog(pool: RecordingPool) -> None:
    removed = hosts.remove_host(admin(), "zone-b", "pve3")
    try:
        pool.dialled.clear()
        # Enough requests for the zone's round-robin to have started at each of its agents.
        for _ in range(4):
            ctx = admin()
            inventory.zone_statuses(ctx)
            details = hosts.host_details(ctx)
            inventory.zone_api(ctx, "zone-b").resources()
            vms.list_vms(ctx)
            assert ctx.unavailable == []
            assert "zone-b/pve3" not in {d.host.key for d in details}
        assert host_identity("zone-b", "pve3") not in pool.dialled
        assert {host_identity("zone-b", "pve1"), host_identity("zone-b", "pve2")} <= set(pool.dialled)
    finally:
        catalog.create_host(
            admin(),
            {
                "zone": removed.zone,
                "node": removed.node,
                "endpoint": removed.endpoint,
                "cordoned": removed.cordoned,
                "memory_overcommit": removed.memory_overcommit,
                "cpu_overcommit": removed.cpu_overcommit,
            },
        )
    assert "zone-b/pve3" in {h.key for h in catalog.hosts(admin())}
