"""Every zone's Proxmox in memory, with the surface of ``sources.protocols.ProxmoxApi``: the in-memory zones
of ``fakezone.py`` behind the fan-outs the services read through.

What it keeps of the real source: zones are asked in the order given, a zone made ``silent`` is a failure
of its own (``Unavailable`` naming it) while the others still answer, and the agents' own services
(edge gateways, update now) are not there: a call to them is ``Unavailable``, as with a host whose agent
does not answer. The zones hold no SDN: what needs tenant networks runs against the devstack.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from agentclient import AgentPool, AgentTarget, AgentUnavailable
from agentclient.gateways import GatewaySpec, GatewayState
from agentclient.pool import UpdateNowResult
from devstack import seed
from orchestrator.errors import Unavailable
from orchestrator.sources.proxmox import (
    AgentReport,
    ClusterResources,
    FanOut,
    Guest,
    VNet,
    ZoneApi,
    ZoneTargets,
)
from orchestrator.sources.proxmox.agents import HostAgents
from orchestrator.sources.proxmox.values import CertificateRenewal, UpdateOutcome
from tests.orchestrator.fakezone import GIB, FakeZone, guest

T = TypeVar("T")


class AbsentAgents(AgentPool):
    """The agents' own services (edge gateways, update now) where no agent runs them: each call is a host
    whose agent does not answer. Stand-ins that serve the rest build on it (``lightworld.LocalAgents``)."""

    def __init__(self) -> None:  # no channels
        pass

    def apply_gateway(self, target: AgentTarget, spec: GatewaySpec, *, timeout: float) -> GatewayState:
        raise AgentUnavailable(target, "no agent here runs edge gateways")

    def gateway_state(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> GatewayState | None:
        raise AgentUnavailable(target, "no agent here runs edge gateways")

    def remove_gateway(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> None:
        raise AgentUnavailable(target, "no agent here runs edge gateways")

    def update_now(self, target: AgentTarget, *, timeout: float | None = None) -> UpdateNowResult:
        raise AgentUnavailable(target, "no agent here updates itself")

    def close(self) -> None:
        pass


class FakeProxmox:
    """The zones by id; ``silent`` holds those that do not answer."""

    def __init__(self, *zones: FakeZone) -> None:
        self.zones = {zone.zone: zone for zone in zones}
        self.silent: set[str] = set()
        self.agents = HostAgents(AbsentAgents())
        self.version = "9.0.3"
        # ``/cluster/resources`` reads per zone, as a listing's cost is counted on the real zones.
        self.reads: dict[str, int] = dict.fromkeys(self.zones, 0)

    def zone(self, targets: ZoneTargets) -> ZoneApi:
        return self.zones[targets.zone]

    def fan_out(self, zones: Sequence[ZoneTargets], call: Callable[[ZoneTargets, float], T]) -> FanOut[T]:
        fan: FanOut[T] = FanOut()
        for targets in zones:
            if targets.zone in self.silent or targets.zone not in self.zones:
                fan.failures[targets.zone] = Unavailable(targets.zone, f"zone {targets.zone} did not answer")
            else:
                fan.results[targets.zone] = call(targets, time.monotonic() + 5.0)
        return fan

    def cluster_resources(
        self, zones: Sequence[ZoneTargets], kind: str | None = None
    ) -> FanOut[ClusterResources]:
        return self.fan_out(
            zones, lambda targets, deadline_at: self.zone_resources(targets, deadline_at, kind)
        )

    def zone_resources(
        self, zone: ZoneTargets, deadline_at: float, kind: str | None = None
    ) -> ClusterResources:
        self.reads[zone.zone] += 1
        return self.zones[zone.zone].resources(kind)

    def vnets(self, zones: Sequence[ZoneTargets]) -> FanOut[tuple[VNet, ...]]:
        return self.fan_out(zones, lambda targets, deadline_at: ())

    def pool_members(
        self, zones: Sequence[ZoneTargets], pools: Mapping[str, Sequence[str]]
    ) -> FanOut[tuple[Guest, ...]]:
        def members(targets: ZoneTargets, deadline_at: float) -> tuple[Guest, ...]:
            wanted = set(pools.get(targets.zone, ()))
            return tuple(g for g in self.zones[targets.zone].guests.values() if g.pool in wanted)

        return self.fan_out(zones, members)

    def agent_reports(self, agents: Mapping[str, AgentTarget]) -> FanOut[AgentReport]:
        fan: FanOut[AgentReport] = FanOut()
        for key, target in agents.items():
            zone = key.partition("/")[0]
            if zone in self.silent:
                fan.failures[key] = Unavailable(key, f"the agent {target.identity} did not answer")
            else:
                fan.results[key] = AgentReport(
                    version="0.0.0+memory",
                    proxmox_version=self.version,
                    package_version="",
                    certificate_expires_at=None,
                    renewal=CertificateRenewal(None, "", 0, None),
                    last_update=UpdateOutcome("none", "", "", "", None),
                )
        return fan


def seeded_zones() -> FakeProxmox:
    """The devstack's two zones of three nodes with its guests (``devstack.seed.GUESTS``), in memory."""
    zones = []
    for zone, guests in seed.GUESTS.items():
        fake = FakeZone(zone, nodes=("pve1", "pve2", "pve3"))
        for vmid, name, node, status, vdc in guests:
            tags, pool = (f"fp-vdc-{vdc}", f"fp-{vdc}") if vdc else ("", "")
            vm = guest(vmid, node, name=name, status=status, tags=tags, pool=pool, cpus=2, memory=2 * GIB)
            fake.add(vm, {"cores": 2, "memory": 2048, "scsi0": f"local-lvm:vm-{vmid}-disk-0,size=20G"})
        zones.append(fake)
    return FakeProxmox(*zones)
