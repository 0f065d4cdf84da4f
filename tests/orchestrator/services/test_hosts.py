"""Host services in this process, wired to the test world: a removed host is never dialled again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import config

from agentclient import AgentPool, AgentTarget, ClientTLS, host_identity
from devstack import seed
from devstack.world import World
from orchestrator.auth import Principal
from orchestrator.services import catalog, hosts, inventory, vms
from orchestrator.services.context import Context
from orchestrator.sources import kube as kube_module
from orchestrator.sources import proxmox as proxmox_module
from orchestrator.sources.kube import KubeSource
from orchestrator.sources.proxmox import ProxmoxSource


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
    assert world.kubeconfig is not None
    source = KubeSource(config.new_client_from_config(config_file=str(world.kubeconfig)), seed.NAMESPACE, 5.0)
    env = world.orchestrator_env()
    tls = ClientTLS.from_files(
        env["FLEXPLANE_AGENT_CA"], env["FLEXPLANE_AGENT_CERT"], env["FLEXPLANE_AGENT_KEY"]
    )
    recording = RecordingPool(tls, timeout=2.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", source)
        patch.setattr(proxmox_module, "_source", ProxmoxSource(recording, call_timeout=2.0, deadline=5.0))
        yield recording
    recording.close()
    source.core.api_client.close()


def admin() -> Context:
    """A fresh request's context (its own catalog snapshot and memo)."""
    return Context(principal=Principal(subject="tester", name="tester", email="", roles=frozenset({"ADMIN"})))


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
