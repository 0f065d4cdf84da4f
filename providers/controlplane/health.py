"""What the provider sees of a hosted control plane's health: ``status.health`` of its FlexControlPlane.

Each reconcile (and the drift timer's, every minute) writes three parts, each read where the control
plane itself shows it, and nothing when none changed:

- ``apiServer``: ``GET /readyz`` through the endpoint (the address nodes and tenants reach), over TLS
  verified against the cluster's CA, as the provider's admin. ``ready`` when it answers 200; otherwise
  ``reason`` says whether it answered not ready (``NotReady``, with the checks that failed), did not
  answer (``Unreachable``) or has no ready replica to answer with (``NoReadyReplicas``).
- ``etcd``: the ``etcd`` StatefulSet's ready members of its members (a member is ready when etcd's own
  /readyz on its metrics port says so: its readiness probe, :mod:`.etcd`).
- ``konnectivity``: the tenant's ``konnectivity-agent`` DaemonSet, agents ready of agents scheduled (one
  per node). An agent is ready while it holds a connection to a Konnectivity server (its /readyz, the
  readiness probe :mod:`.tenant` gives it). This stands in for the server's own count,
  ``konnectivity_network_proxy_server_ready_backend_connections``, which the chart's ServiceMonitor
  scrapes from each replica: reading that would take the provider into the pods' network, where the
  tenant's API is already what it talks to. ``observed`` is false (and the counts 0) while the tenant's
  API server does not answer.

Every key is written every time (a message "" when there is none): the status is written as a merge
patch, which would leave a key that is no longer there as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Body = dict[str, Any]

READY = "Ready"
NOT_READY = "NotReady"
UNREACHABLE = "Unreachable"
NO_READY_REPLICAS = "NoReadyReplicas"
# How much of what the API server said a status keeps (its failed checks, an error's words).
MAX_MESSAGE = 1024


@dataclass(frozen=True)
class Tenant:
    """What the tenant's API server answered: its readiness, and its Konnectivity agents' DaemonSet."""

    reason: str  # READY, NOT_READY, UNREACHABLE or NO_READY_REPLICAS
    message: str = ""
    agents: tuple[int, int] | None = None  # (connected, scheduled); None: not read

    @property
    def ready(self) -> bool:
        return self.reason == READY


def failed_checks(said: str) -> str:
    """The checks a /readyz answer says failed (``[-]etcd failed: ...``), else its words, shortened."""
    failed = [line.removeprefix("[-]").strip() for line in said.splitlines() if line.startswith("[-]")]
    return ("; ".join(failed) or said.strip() or "no answer")[:MAX_MESSAGE]


def agents_of(daemonset: Mapping[str, Any] | None) -> tuple[int, int]:
    """(ready, scheduled) of the ``konnectivity-agent`` DaemonSet's status; (0, 0) when it is not there."""
    status = (daemonset or {}).get("status") or {}
    return _count(status.get("numberReady")), _count(status.get("desiredNumberScheduled"))


def etcd_members(statefulset: Mapping[str, Any] | None) -> tuple[int, int]:
    """(ready, members) of the ``etcd`` StatefulSet: its spec's replicas, its status's ready ones."""
    statefulset = statefulset or {}
    members = _count((statefulset.get("spec") or {}).get("replicas"))
    ready = _count((statefulset.get("status") or {}).get("readyReplicas"))
    return min(ready, members), members


def block(tenant: Tenant, etcd_statefulset: Mapping[str, Any] | None) -> Body:
    """``status.health`` from what the tenant answered and the etcd StatefulSet as the server has it."""
    ready_members, members = etcd_members(etcd_statefulset)
    connected, scheduled = tenant.agents or (0, 0)
    return {
        "apiServer": {
            "ready": tenant.ready,
            "reason": tenant.reason,
            "message": tenant.message[:MAX_MESSAGE],
        },
        "etcd": {"members": members, "readyMembers": ready_members},
        "konnectivity": {
            "observed": tenant.agents is not None,
            "agents": scheduled,
            "connectedAgents": min(connected, scheduled),
        },
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
