"""Hosts over their life: cordon, drain and removal, and what the admin sees of each host.

Everything here needs ADMIN.

- ``lifecycle``: add (by hand), cordon, uncordon, remove;

A host is named by its zone and its ``host`` name (its Proxmox node's), as in the API.
- ``drain``: move a host's VMs away in the background (``drain_host``, ``drain_status``);
- ``records``: a drain's record in the management cluster;
- ``details``: each host with its agent's report, its node's use and its drain.
"""

from orchestrator.services.hosts.details import (
    AgentReport,
    CertificateRenewal,
    HostDetails,
    HostUsage,
    UpdateOutcome,
    details_of,
    host_details,
)
from orchestrator.services.hosts.drain import MIGRATION_TIMEOUT, drain_host, drain_status, drains
from orchestrator.services.hosts.lifecycle import (
    HOST_INPUTS,
    add_host,
    cordon_host,
    remove_host,
    uncordon_host,
)
from orchestrator.services.hosts.records import (
    DONE,
    DRAIN,
    FAILED,
    GONE,
    HEARTBEAT,
    INCOMPLETE,
    INTERRUPTED,
    MIGRATING,
    MOVED,
    PENDING,
    RUNNING,
    STALE_AFTER,
    VM_FAILED,
    DrainVm,
    HostDrain,
)

__all__ = [
    "DONE",
    "DRAIN",
    "FAILED",
    "GONE",
    "HEARTBEAT",
    "HOST_INPUTS",
    "INCOMPLETE",
    "INTERRUPTED",
    "MIGRATING",
    "MIGRATION_TIMEOUT",
    "MOVED",
    "PENDING",
    "RUNNING",
    "STALE_AFTER",
    "VM_FAILED",
    "AgentReport",
    "CertificateRenewal",
    "DrainVm",
    "HostDetails",
    "HostDrain",
    "HostUsage",
    "UpdateOutcome",
    "add_host",
    "cordon_host",
    "details_of",
    "drain_host",
    "drain_status",
    "drains",
    "host_details",
    "remove_host",
    "uncordon_host",
]
