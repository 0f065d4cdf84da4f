"""What the admin sees of each host: its agent's report, Proxmox's view of its node, its drain."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.errors import Unavailable
from orchestrator.models import Host
from orchestrator.services import access, catalog, inventory
from orchestrator.services.context import Context
from orchestrator.services.hosts import records
from orchestrator.services.hosts.records import HostDrain
from orchestrator.sources.proxmox import AgentReport, CertificateRenewal, NodeResource, UpdateOutcome

__all__ = [
    "AgentReport",
    "CertificateRenewal",
    "HostDetails",
    "HostUsage",
    "UpdateOutcome",
    "details_of",
    "host_details",
]


@dataclass(frozen=True)
class HostUsage:
    """A node's use of its resources as ``/cluster/resources`` reports it (None: not reported)."""

    cpu_fraction: float | None
    cpu_cores: int | None
    memory_used: int | None
    memory_total: int | None
    storage_used: int | None
    storage_total: int | None

    @classmethod
    def from_node(cls, node: NodeResource) -> HostUsage:
        return cls(
            cpu_fraction=node.cpu,
            cpu_cores=node.maxcpu,
            memory_used=node.mem,
            memory_total=node.maxmem,
            storage_used=node.disk,
            storage_total=node.maxdisk,
        )


@dataclass(frozen=True)
class HostDetails:
    """A host as the admin sees it. ``agent`` is None when its agent did not answer (``agent_problem``
    says why, and the request's ``ctx.unavailable`` lists it); ``usage`` when Proxmox did not report the
    node (offline, or its zone did not answer)."""

    host: Host
    online: bool
    agent: AgentReport | None
    agent_problem: Unavailable | None
    usage: HostUsage | None
    drain: HostDrain | None


def _agent_reports(ctx: Context) -> tuple[dict[str, AgentReport], dict[str, Unavailable]]:
    """GetInfo of every host's agent, in parallel under the zone deadline, once per request."""

    def ask() -> tuple[dict[str, AgentReport], dict[str, Unavailable]]:
        fan = ctx.proxmox.agent_reports({h.key: h.target for h in catalog.hosts(ctx)})
        ctx.report_unavailable(list(fan.failures.values()))
        return fan.results, fan.failures

    return ctx.memoize(("hosts", "agents"), ask)


def host_details(ctx: Context) -> list[HostDetails]:
    """Every host with its agent's and Proxmox's view of it: one ``/cluster/resources?type=node`` per
    zone (``inventory.zone_nodes``), one GetInfo per host (in parallel) and one read of the drains.
    Hosts or zones that did not answer leave their part empty and are reported on ``ctx.unavailable``:
    the data is partial."""
    access.require_admin(ctx)

    def build() -> list[HostDetails]:
        nodes = inventory.zone_nodes(ctx)
        reports, problems = _agent_reports(ctx)
        drains = records.all_drains(ctx)
        out = []
        for host in catalog.hosts(ctx):
            node = nodes.get(host.zone, {}).get(host.node)
            online = node is not None and node.online
            out.append(
                HostDetails(
                    host=host,
                    online=online,
                    agent=reports.get(host.key),
                    agent_problem=problems.get(host.key),
                    usage=HostUsage.from_node(node) if node is not None and online else None,
                    drain=drains.get(host.key),
                )
            )
        return out

    return ctx.memoize(("hosts", "details"), build)


def details_of(ctx: Context, host: Host) -> HostDetails | None:
    """One host's details for ADMIN (from the request's ``host_details``); None for anyone else."""
    if not ctx.principal.is_admin:
        return None
    return next((d for d in host_details(ctx) if d.host.key == host.key), None)
