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

from agentclient import AgentPool, ClientTLS
from orchestrator.sources.proxmox.sdn import Sdn, SdnZone, Subnet, VNet
from orchestrator.sources.proxmox.source import FanOut, ProxmoxSource, ZoneTargets
from orchestrator.sources.proxmox.values import (
    AgentReport,
    CertificateRenewal,
    ClusterResources,
    Guest,
    GuestInterface,
    LocalDisk,
    MigrationCheck,
    NodeResource,
    StorageResource,
    TaskEntry,
    TaskStatus,
    Template,
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
    "UpdateOutcome",
    "VNet",
    "VmidTaken",
    "ZoneApi",
    "ZoneTargets",
    "cloud_init_drive",
    "is_lock_message",
    "parse_pool_vms",
    "proxmox",
]

_source: ProxmoxSource | None = None
_lock = threading.Lock()


def proxmox() -> ProxmoxSource:
    """The process's Proxmox source, with its pool of mTLS channels to the agents."""
    global _source
    with _lock:
        if _source is None:
            tls = ClientTLS.from_files(
                settings.FLEXPLANE_AGENT_CA, settings.FLEXPLANE_AGENT_CERT, settings.FLEXPLANE_AGENT_KEY
            )
            _source = ProxmoxSource(
                AgentPool(
                    tls,
                    timeout=settings.FLEXPLANE_AGENT_TIMEOUT,
                    max_in_flight=settings.FLEXPLANE_AGENT_MAX_IN_FLIGHT,
                    proxy=settings.FLEXPLANE_MESH_PROXY,
                    proxy_networks=[settings.FLEXPLANE_MESH_RANGE],
                ),
                call_timeout=settings.FLEXPLANE_AGENT_TIMEOUT,
                deadline=settings.FLEXPLANE_ZONE_DEADLINE,
            )
        return _source
