"""What a check finds (:class:`Finding`), what it reads (:class:`Site`, from the settings) and what it asks
through (:class:`Probe`, the management cluster's API client)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

from django.conf import settings
from kubernetes import client

from orchestrator.errors import FlexPlaneError
from orchestrator.sources.kube import load_configuration

DEFAULT_ISSUER = "flexplane-agent-ca"


class Status(enum.StrEnum):
    OK = "ok"
    WARNING = "warning"
    BLOCKER = "blocker"


@dataclass(frozen=True)
class Finding:
    """One check: what it found and, unless all is well, what to do."""

    check: str
    status: Status
    found: str
    todo: str = ""

    def as_json(self) -> dict[str, str]:
        return {**asdict(self), "status": str(self.status)}


def ok(check: str, found: str) -> Finding:
    return Finding(check, Status.OK, found)


def warning(check: str, found: str, todo: str) -> Finding:
    return Finding(check, Status.WARNING, found, todo)


def blocker(check: str, found: str, todo: str) -> Finding:
    return Finding(check, Status.BLOCKER, found, todo)


@dataclass(frozen=True)
class Site:
    """What the settings (and the command's options) say the platform needs."""

    kubeconfig: str = ""
    namespace: str = "flexplane"
    kube_timeout: float = 5.0
    oidc_issuer: str = ""
    project_id: str = ""
    zitadel_url: str = ""
    zitadel_key_file: str = ""
    zitadel_audience: str = ""
    zitadel_timeout: float = 5.0
    registry: str = ""
    registry_username: str = field(default="", repr=False)
    registry_password: str = field(default="", repr=False)
    registry_ca: str = ""
    releases_dir: str = ""
    # (setting, host name, whether the orchestrator itself dials it)
    names: tuple[tuple[str, str, bool], ...] = ()
    issuer: str = DEFAULT_ISSUER
    cluster_issuer: str = ""
    load_balancer: bool = True

    @classmethod
    def from_settings(
        cls, *, issuer: str = DEFAULT_ISSUER, cluster_issuer: str = "", load_balancer: bool = True
    ) -> Site:
        s = settings
        return cls(
            kubeconfig=s.FLEXPLANE_KUBECONFIG,
            namespace=s.FLEXPLANE_NAMESPACE,
            kube_timeout=s.FLEXPLANE_KUBE_TIMEOUT,
            oidc_issuer=s.FLEXPLANE_OIDC_ISSUER,
            project_id=s.FLEXPLANE_OIDC_PROJECT_ID,
            zitadel_url=s.FLEXPLANE_ZITADEL_URL,
            zitadel_key_file=s.FLEXPLANE_ZITADEL_KEY_FILE,
            zitadel_audience=s.FLEXPLANE_ZITADEL_AUDIENCE,
            zitadel_timeout=s.FLEXPLANE_ZITADEL_TIMEOUT,
            registry=s.FLEXPLANE_AGENT_REGISTRY.strip(),
            registry_username=s.FLEXPLANE_AGENT_REGISTRY_USERNAME,
            registry_password=s.FLEXPLANE_AGENT_REGISTRY_PASSWORD,
            registry_ca=s.FLEXPLANE_AGENT_REGISTRY_CA,
            releases_dir=s.FLEXPLANE_AGENT_RELEASES_DIR,
            names=tuple(names_in_settings()),
            issuer=issuer,
            cluster_issuer=cluster_issuer,
            load_balancer=load_balancer,
        )


def names_in_settings() -> Iterable[tuple[str, str, bool]]:
    """The host names the settings name: (setting, host, dialled by the orchestrator)."""
    s = settings
    dialled = (
        ("FLEXPLANE_OIDC_ISSUER", url_host(s.FLEXPLANE_OIDC_ISSUER)),
        ("FLEXPLANE_ZITADEL_URL", url_host(s.FLEXPLANE_ZITADEL_URL)),
        ("FLEXPLANE_AGENT_REGISTRY", endpoint_host(s.FLEXPLANE_AGENT_REGISTRY.strip().partition("/")[0])),
        ("FLEXPLANE_MESH_PROXY", url_host(s.FLEXPLANE_MESH_PROXY)),
    )
    others = [
        ("FLEXPLANE_ENROLLMENT_URL", url_host(s.FLEXPLANE_ENROLLMENT_URL)),
        ("FLEXPLANE_MESH_HUB_ENDPOINT", endpoint_host(s.FLEXPLANE_MESH_HUB_ENDPOINT)),
    ]
    # ".example.com" and "*" match many names: none to look up.
    others += [("FLEXPLANE_ALLOWED_HOSTS", h) for h in s.ALLOWED_HOSTS if not h.startswith((".", "*"))]
    seen: set[str] = set()
    for (setting, host), by_us in [*((d, True) for d in dialled), *((o, False) for o in others)]:
        if host and host not in seen:
            seen.add(host)
            yield setting, host, by_us


def url_host(url: str) -> str:
    return urlsplit(url).hostname or "" if url else ""


def endpoint_host(endpoint: str) -> str:
    """``host:port`` or ``[v6]:port`` -> host."""
    return urlsplit(f"//{endpoint}").hostname or "" if endpoint else ""


@dataclass
class Probe:
    """The site's settings and the management cluster's API client (None when it cannot be configured:
    ``kube_error`` says why)."""

    site: Site
    api: client.ApiClient | None = None
    kube_error: str = ""

    @classmethod
    def connect(cls, site: Site) -> Probe:
        try:
            return cls(site, client.ApiClient(load_configuration(site.kubeconfig or None)))
        except Exception as exc:  # the kubeconfig's or the in-cluster config's, whatever it is
            return cls(site, None, f"{type(exc).__name__}: {exc}")

    def kube(self) -> client.ApiClient:
        if self.api is None:
            raise ClusterUnreachable(self.kube_error)
        return self.api

    @property
    def timeout(self) -> float:
        return self.site.kube_timeout

    def close(self) -> None:
        if self.api is not None:
            self.api.close()


class ClusterUnreachable(FlexPlaneError):
    """The management cluster's client could not be configured (the kubeconfig, the service account)."""

    def __init__(self, why: str) -> None:
        super().__init__(f"no client for the management cluster: {why}")


Check = Callable[[Probe], Finding]
