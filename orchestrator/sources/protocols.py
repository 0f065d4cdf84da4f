"""What the services ask of the systems behind them, as Protocols: the request's ``Context`` carries one
of each (``services.context.Sources``).

The process's own are ``sources.kube.KubeSource`` (the management cluster, over the Kubernetes API) and
``sources.proxmox.ProxmoxSource`` (every zone's Proxmox, through the agents over mTLS gRPC); the tests
hand in their in-memory stand-ins (``tests/orchestrator/fakekube.py``, ``fakezone.py``), so the public
services run without a devstack. Both sides are held to these signatures by mypy.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from kubernetes import client

    from agentclient import AgentTarget
    from orchestrator.sources.kube_objects import (
        CatalogEntry,
        EventEntry,
        KubeObject,
        Lease,
        Resource,
        SecretEntry,
    )
    from orchestrator.sources.proxmox.agents import HostAgents
    from orchestrator.sources.proxmox.sdn import VNet
    from orchestrator.sources.proxmox.source import FanOut, ZoneTargets
    from orchestrator.sources.proxmox.values import AgentReport, ClusterResources, Guest
    from orchestrator.sources.proxmox.zone import ZoneApi
    from orchestrator.sources.zitadel import Authorization, MachineUser, Organization, User

T = TypeVar("T")


class KubeApi(Protocol):
    """The management cluster as the services use it: the catalog's ConfigMaps, Leases (the locks),
    Secrets and Events of the platform namespace. Writes name the version they read; a lost race is
    ``Conflict``, an unreachable cluster ``Unavailable``."""

    def list_catalog(self, kinds: Iterable[str]) -> list[CatalogEntry]: ...

    def get_catalog(self, kind: str, ident: str) -> CatalogEntry | None: ...

    def create_catalog(
        self, kind: str, ident: str, spec: Mapping[str, Any], *, labels: Mapping[str, str] | None = None
    ) -> CatalogEntry: ...

    def replace_catalog(
        self,
        kind: str,
        ident: str,
        spec: Mapping[str, Any],
        resource_version: str,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> CatalogEntry: ...

    def delete_catalog(self, kind: str, ident: str, resource_version: str | None = None) -> bool: ...

    def get_lease(self, name: str) -> Lease | None: ...

    def list_leases(self, label_selector: str) -> list[Lease]: ...

    def write_lease(
        self, lease: Lease, resource_version: str | None, *, labels: Mapping[str, str] | None = None
    ) -> Lease: ...

    def delete_lease(self, name: str, resource_version: str) -> None: ...

    def get_secret(self, name: str) -> SecretEntry | None: ...

    def list_secrets(self, label_selector: str) -> list[SecretEntry]: ...

    def create_secret(
        self,
        name: str,
        data: Mapping[str, bytes],
        *,
        type_name: str = "Opaque",
        labels: Mapping[str, str] | None = None,
    ) -> SecretEntry: ...

    def replace_secret(self, entry: SecretEntry, data: Mapping[str, bytes]) -> SecretEntry: ...

    def delete_secret(self, entry: SecretEntry) -> bool: ...

    def create_event(self, event: client.EventsV1Event) -> None: ...

    def list_events(self, label_selector: str, limit: int) -> list[EventEntry]: ...

    def ping(self) -> None: ...


class ClusterApi(Protocol):
    """The management cluster's tenant-cluster objects (Cluster API's kinds and our providers'), each
    VDC's in its namespace ``vdc-<id>``, and the Secrets there (a cluster's CA)."""

    def list(self, resource: Resource, namespace: str | None, label_selector: str) -> list[KubeObject]: ...

    def create(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> KubeObject: ...

    def patch(
        self, resource: Resource, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> KubeObject: ...

    def delete(self, resource: Resource, namespace: str, name: str) -> bool: ...

    def ensure_namespace(self, namespace: str, labels: Mapping[str, str]) -> None: ...

    def secret(self, namespace: str, name: str) -> SecretEntry | None: ...

    def write_secret(
        self,
        namespace: str,
        name: str,
        data: Mapping[str, bytes],
        labels: Mapping[str, str],
        annotations: Mapping[str, str] | None = None,
        *,
        resource_version: str | None = None,
    ) -> None: ...

    def delete_secret(self, namespace: str, name: str) -> bool: ...


class ProxmoxApi(Protocol):
    """Every zone's Proxmox as the services use it: reads fanned out to the zones in parallel under one
    deadline (a zone that does not answer is a failure of its own, the others still count), one zone's
    API (``zone``), and the agents' own services (``agents``: edge gateways, update now)."""

    @property
    def agents(self) -> HostAgents: ...

    def zone(self, targets: ZoneTargets) -> ZoneApi: ...

    def fan_out(self, zones: Sequence[ZoneTargets], call: Callable[[ZoneTargets, float], T]) -> FanOut[T]: ...

    def cluster_resources(
        self, zones: Sequence[ZoneTargets], kind: str | None = None
    ) -> FanOut[ClusterResources]: ...

    def zone_resources(
        self, zone: ZoneTargets, deadline_at: float, kind: str | None = None
    ) -> ClusterResources: ...

    def vnets(self, zones: Sequence[ZoneTargets]) -> FanOut[tuple[VNet, ...]]: ...

    def pool_members(
        self, zones: Sequence[ZoneTargets], pools: Mapping[str, Sequence[str]]
    ) -> FanOut[tuple[Guest, ...]]: ...

    def agent_reports(self, agents: Mapping[str, AgentTarget]) -> FanOut[AgentReport]: ...


class ZitadelApi(Protocol):
    """Zitadel's management API as the services use it, as the platform's service user: users, the
    project's roles and its grants to organizations, users' authorizations (their roles), organizations.
    A refusal is ``ZitadelRefused``, no answer ``Unavailable`` naming Zitadel."""

    def search_users(
        self, search: str, *, organization_id: str | None = None, limit: int = 50
    ) -> list[User]: ...

    def users(self, user_ids: Iterable[str]) -> list[User]: ...

    def add_project_role(self, role_key: str, display_name: str, group: str) -> bool: ...

    def project_organization(self) -> str: ...

    def grant_project(self, organization_id: str, role_keys: Sequence[str]) -> None: ...

    def revoke_project(self, organization_id: str) -> bool: ...

    def remove_project_role(self, role_key: str) -> None: ...

    def authorizations(
        self,
        *,
        user_ids: Sequence[str] = (),
        organization_id: str | None = None,
        role_key: str | None = None,
    ) -> list[Authorization]: ...

    def create_authorization(self, user_id: str, organization_id: str, role_keys: Sequence[str]) -> str: ...

    def update_authorization(self, authorization_id: str, role_keys: Sequence[str]) -> None: ...

    def delete_authorization(self, authorization_id: str) -> None: ...

    def organization(self, organization_id: str) -> Organization | None: ...

    def create_machine_user(
        self, organization_id: str, username: str, name: str, description: str = ""
    ) -> str: ...

    def use_jwt_access_tokens(
        self, user_id: str, organization_id: str, name: str, description: str
    ) -> None: ...

    def add_machine_key(self, user_id: str, expires: datetime.datetime) -> str: ...

    def remove_machine_key(self, user_id: str, key_id: str) -> None: ...

    def machine_users(self, username_prefix: str) -> list[MachineUser]: ...

    def delete_user(self, user_id: str) -> None: ...
