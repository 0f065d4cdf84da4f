"""Proxmox, reached only through the agents on its nodes.

A zone is one Proxmox cluster: any node answers for the whole cluster, so a read costs one call per
zone, sent to one of the zone's agents and failed over to the next when that one is unavailable. Zones
are asked in parallel, under one deadline for the whole fan-out (``source``). ``ZoneApi`` (``zone``) is
one zone's Proxmox in domain terms. What they answer are typed values (``values``, and
``orchestrator.sources.qemu_config`` for a guest's config and the changes made to it, re-exported
here: the services import them from this package); what fails is a domain error of
``orchestrator.errors``.
"""

from __future__ import annotations

import threading

from django.conf import settings

from agentclient import (
    AgentDeadlineExceeded,
    AgentError,
    AgentPool,
    AgentTarget,
    AgentUnavailable,
    ClientTLSFiles,
)
from orchestrator.sources.proxmox.sdn import Sdn, SdnZone, Subnet, VNet
from orchestrator.sources.proxmox.source import FanOut, ProxmoxSource, ZoneTargets
from orchestrator.sources.proxmox.values import (
    AgentReport,
    CertificateRenewal,
    ClusterResources,
    Guest,
    GuestInterface,
    ImageTemplate,
    LocalDisk,
    MigrationCheck,
    NodeResource,
    StorageResource,
    TaskEntry,
    TaskStatus,
    Template,
    TemplatePreparing,
    UpdateOutcome,
    parse_pool_vms,
)
from orchestrator.sources.proxmox.zone import VmidTaken, ZoneApi, is_lock_message
from orchestrator.sources.qemu_config import (
    DHCP,
    ConfigChange,
    Drive,
    IpConfig,
    NetDevice,
    QemuConfig,
    cloud_init_drive,
)

__all__ = [
    "DHCP",
    "AgentReport",
    "CertificateRenewal",
    "ClusterResources",
    "ConfigChange",
    "Drive",
    "FanOut",
    "Guest",
    "GuestInterface",
    "ImageTemplate",
    "IpConfig",
    "LocalDisk",
    "MigrationCheck",
    "NetDevice",
    "NodeResource",
    "ProxmoxSource",
    "QemuConfig",
    "Sdn",
    "SdnZone",
    "StorageResource",
    "Subnet",
    "TaskEntry",
    "TaskStatus",
    "Template",
    "TemplatePreparing",
    "UpdateOutcome",
    "VNet",
    "VmidTaken",
    "ZoneApi",
    "ZoneTargets",
    "agent_answers",
    "cloud_init_drive",
    "is_lock_message",
    "parse_pool_vms",
    "proxmox",
]

_source: ProxmoxSource | None = None
_lock = threading.Lock()
_tls_files: dict[tuple[str, str, str], ClientTLSFiles] = {}
_tls_lock = threading.Lock()


def client_tls() -> ClientTLSFiles:
    """The process's client certificate for the agents (FLEXPLANE_AGENT_CA/CERT/KEY), read again when
    the mounted Secret is renewed: one reader per set of paths, shared by every pool."""
    paths = (settings.FLEXPLANE_AGENT_CA, settings.FLEXPLANE_AGENT_CERT, settings.FLEXPLANE_AGENT_KEY)
    with _tls_lock:
        files = _tls_files.get(paths)
        if files is None:
            files = _tls_files[paths] = ClientTLSFiles(*paths)
        return files


def _pool(timeout: float, max_in_flight: int) -> AgentPool:
    return AgentPool(
        client_tls(),
        timeout=timeout,
        max_in_flight=max_in_flight,
        proxy=settings.FLEXPLANE_MESH_PROXY,
        proxy_networks=[settings.FLEXPLANE_MESH_RANGE],
    )


def agent_answers(target: AgentTarget, timeout: float) -> bool:
    """Whether the agent answers (GetInfo), asked on a channel of its own that is closed afterwards: the
    process's pool keeps one channel per agent, and a channel to an agent that is not up yet goes into
    gRPC's reconnect backoff, failing every call on it for seconds after the agent has come up."""
    pool = _pool(timeout, 1)
    try:
        pool.info(target, timeout=timeout)
        return True
    except (AgentUnavailable, AgentDeadlineExceeded):
        return False
    except AgentError:  # it answered; its Proxmox may not have
        return True
    finally:
        pool.close()


def proxmox() -> ProxmoxSource:
    """The process's Proxmox source, with its pool of mTLS channels to the agents."""
    global _source
    with _lock:
        if _source is None:
            _source = ProxmoxSource(
                _pool(settings.FLEXPLANE_AGENT_TIMEOUT, settings.FLEXPLANE_AGENT_MAX_IN_FLIGHT),
                call_timeout=settings.FLEXPLANE_AGENT_TIMEOUT,
                deadline=settings.FLEXPLANE_ZONE_DEADLINE,
            )
        return _source
