"""What a service call knows about its request: who asks, for which VDC, what was read so far, and the
systems it reads and writes (``Sources``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings

from agentclient import ClientTLSFiles
from orchestrator.auth import Principal
from orchestrator.errors import Unavailable
from orchestrator.sources import clusterapi as clusterapi_source
from orchestrator.sources import kube as kube_source
from orchestrator.sources import proxmox as proxmox_source
from orchestrator.sources import zitadel as zitadel_source
from orchestrator.sources.protocols import ClusterApi, KubeApi, ProxmoxApi, ZitadelApi

T = TypeVar("T")

logger = logging.getLogger(__name__)


@dataclass
class Sources:
    """The systems a service call reads and writes: the management cluster (its catalog, locks and
    Secrets; its tenant-cluster objects), every zone's Proxmox, Zitadel's management API. The process's
    own (made on first use, then shared by every request) unless a test hands in its stand-ins."""

    kube: KubeApi | None = None
    proxmox: ProxmoxApi | None = None
    clusterapi: ClusterApi | None = None
    # Zitadel's management API; the process's is None where the deployment configures none.
    zitadel: ZitadelApi | None = None


def process_kube() -> KubeApi:
    """The process's management cluster, for the work no caller's request carries (a node's join or
    renewal, the release channel, readiness): what the views hand those services."""
    return kube_source.kube()


def process_client_tls() -> ClientTLSFiles:
    """The process's client certificate for the agents, read again when renewed: for ``/metrics``, which
    looks at it on every scrape so that its expiry is current when no agent call is made."""
    return proxmox_source.client_tls()


def look_at_client_certificate() -> None:
    """Look for a renewed client certificate for the agents, as an agent call would, when the process has
    one (FLEXPLANE_AGENT_CERT): what a scrape of the process's ``/metrics`` does first (the orchestrator's,
    ``orchestrator.metrics_http``; the providers', ``orchestrator.probes.Metrics``), so that its expiry is a
    metric from the first scrape on and stays current when no call is made (the charts' PrometheusRules
    alert on it). A certificate that cannot be read is logged, not raised: the scrape still answers."""
    if not settings.FLEXPLANE_AGENT_CERT:
        return
    from agentclient import ClientTLSError

    try:
        process_client_tls().current()
    except (OSError, ClientTLSError):
        logger.warning("the client certificate for the agents cannot be read", exc_info=True)


@dataclass
class Context:
    """One request's caller and its per-request memo (the only cache allowed: it dies with the request)."""

    principal: Principal
    # The VDC the request acts in (the FlexPlane-VDC-ID header, or the portal's URL); None: not scoped.
    vdc: str | None = None
    sources: Sources = field(default_factory=Sources, repr=False)
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    # Zones or hosts that did not answer: the data returned is partial, and says so.
    unavailable: list[Unavailable] = field(default_factory=list)

    @property
    def kube(self) -> KubeApi:
        """The management cluster."""
        if self.sources.kube is None:
            self.sources.kube = process_kube()
        return self.sources.kube

    @property
    def clusterapi(self) -> ClusterApi:
        """The management cluster's tenant-cluster objects."""
        if self.sources.clusterapi is None:
            self.sources.clusterapi = clusterapi_source.clusterapi()
        return self.sources.clusterapi

    @property
    def proxmox(self) -> ProxmoxApi:
        """Every zone's Proxmox, through the agents."""
        if self.sources.proxmox is None:
            self.sources.proxmox = proxmox_source.proxmox()
        return self.sources.proxmox

    @property
    def zitadel(self) -> ZitadelApi | None:
        """Zitadel's management API; None where the deployment configures none."""
        return self.sources.zitadel or zitadel_source.zitadel()

    def require_zitadel(self) -> ZitadelApi:
        """Zitadel's management API, or ``Unavailable`` naming Zitadel when none is configured."""
        source = self.zitadel
        if source is None:
            raise Unavailable(zitadel_source.WHERE, zitadel_source.NOT_CONFIGURED)
        return source

    def fresh(self) -> Context:
        """The same caller, VDC and sources with nothing read yet: for a step that must read anew."""
        return Context(principal=self.principal, vdc=self.vdc, sources=self.sources)

    def memoize(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()`` once per request for ``key``."""
        if key not in self._memo:
            self._memo[key] = compute()
        value: T = self._memo[key]
        return value

    def memoized(self, key: Any) -> Any | None:
        """What ``memoize`` keeps for ``key`` if this request computed it already, else ``None``."""
        return self._memo.get(key)

    def report_unavailable(self, failures: list[Unavailable]) -> None:
        for failure in failures:
            if all(failure.where != known.where for known in self.unavailable):
                self.unavailable.append(failure)
