"""A host's drain as the management cluster records it: a ConfigMap of the platform namespace (kind
``host-drain``, id ``<zone>.<host>``), rewritten as the drain goes (see ``hosts.drain``).

The record stores the host's name under ``node``, as every record written so far has it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.errors import FlexPlaneError
from orchestrator.models.zones import host_ident
from orchestrator.services import catalog
from orchestrator.services.context import Context
from orchestrator.services.tasks import encode_task_id
from orchestrator.sources.kube_objects import CatalogEntry

logger = logging.getLogger(__name__)

DRAIN = "host-drain"
# A running drain writes its record at least this often (seconds), and is interrupted once quiet this long.
HEARTBEAT = 10.0
STALE_AFTER = 60.0

# A drain's states: RUNNING, then DONE (every VM moved), INCOMPLETE (some could not) or FAILED (the
# drain itself stopped: see its message). INTERRUPTED is no stored state: a RUNNING record gone stale.
RUNNING, DONE, INCOMPLETE, FAILED, INTERRUPTED = "RUNNING", "DONE", "INCOMPLETE", "FAILED", "INTERRUPTED"
# A VM's: PENDING, MIGRATING, then MOVED, FAILED (with the reason) or GONE (deleted meanwhile).
PENDING, MIGRATING, MOVED, VM_FAILED, GONE = "PENDING", "MIGRATING", "MOVED", "FAILED", "GONE"


def now() -> datetime:
    return datetime.now(UTC)


def parse_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def where(zone: str, host: str) -> str:
    return f"host {host} of zone {zone}"


# ------------------------------------------------------------------------------------ the drain record


@dataclass
class DrainVm:
    """One VM of a drain: where it went, or why it could not."""

    vmid: int
    name: str
    vdc: str | None
    state: str = PENDING
    target: str | None = None
    reason: str = ""
    upid: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> DrainVm:
        return cls(
            vmid=int(spec["vmid"]),
            name=str(spec.get("name") or ""),
            vdc=spec.get("vdc") or None,
            state=str(spec.get("state") or PENDING),
            target=spec.get("target") or None,
            reason=str(spec.get("reason") or ""),
            upid=spec.get("upid") or None,
            started_at=parse_time(spec.get("startedAt")),
            ended_at=parse_time(spec.get("endedAt")),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "vmid": self.vmid,
            "name": self.name,
            "vdc": self.vdc,
            "state": self.state,
            "target": self.target,
            "reason": self.reason,
            "upid": self.upid,
            "startedAt": iso(self.started_at),
            "endedAt": iso(self.ended_at),
        }

    def end(self, state: str, reason: str = "", target: str | None = None) -> None:
        self.state, self.reason, self.ended_at = state, reason, now()
        if target is not None:
            self.target = target


@dataclass
class HostDrain:
    """A host's drain as recorded in the management cluster."""

    zone: str
    host: str
    state: str
    vms: list[DrainVm]
    requested_by: str
    started_at: datetime
    updated_at: datetime
    runner: str
    heartbeat: datetime
    ended_at: datetime | None = None
    message: str = ""
    resource_version: str = field(default="", compare=False)

    @classmethod
    def from_entry(cls, entry: CatalogEntry) -> HostDrain:
        """The record as stored; what does not parse reads as a drain that stopped long ago."""
        spec = entry.spec
        zone, _, host = entry.ident.partition(".")
        long_ago = datetime.fromtimestamp(0, UTC)
        vms: list[DrainVm] = []
        for item in spec.get("vms") or []:
            try:
                vms.append(DrainVm.from_spec(item))
            except (KeyError, TypeError, ValueError):
                logger.warning("drain %s: skipping an unreadable VM entry %r", entry.ident, item)
        return cls(
            zone=str(spec.get("zone") or zone),
            host=str(spec.get("node") or host),
            state=str(spec.get("state") or FAILED),
            vms=vms,
            requested_by=str(spec.get("requestedBy") or ""),
            started_at=parse_time(spec.get("startedAt")) or long_ago,
            updated_at=parse_time(spec.get("updatedAt")) or long_ago,
            runner=str(spec.get("runner") or ""),
            heartbeat=parse_time(spec.get("heartbeat")) or long_ago,
            ended_at=parse_time(spec.get("endedAt")),
            message=str(spec.get("message") or ""),
            resource_version=entry.resource_version,
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "zone": self.zone,
            "node": self.host,
            "state": self.state,
            "vms": [vm.to_spec() for vm in self.vms],
            "requestedBy": self.requested_by,
            "startedAt": iso(self.started_at),
            "updatedAt": iso(self.updated_at),
            "endedAt": iso(self.ended_at),
            "runner": self.runner,
            "heartbeat": iso(self.heartbeat),
            "message": self.message,
        }

    @property
    def ident(self) -> str:
        return host_ident(self.zone, self.host)

    @property
    def status(self) -> str:
        """The state as a reader should see it: a RUNNING record whose runner went quiet is INTERRUPTED."""
        if self.state == RUNNING and now() - self.heartbeat > timedelta(seconds=STALE_AFTER):
            return INTERRUPTED
        return self.state

    @property
    def active(self) -> bool:
        return self.status == RUNNING

    def task_id(self, vm: DrainVm) -> str | None:
        """The id of the VM's migration task, as ``task(id)`` reads it."""
        return encode_task_id(self.zone, vm.upid, vm.vdc or "") if vm.upid else None


def load(ctx: Context, zone: str, host: str) -> HostDrain | None:
    entry = ctx.kube.get_catalog(DRAIN, host_ident(zone, host))
    return HostDrain.from_entry(entry) if entry is not None else None


def _labels(drain: HostDrain) -> dict[str, str]:
    return {catalog.ZONE_LABEL: drain.zone}


def store(ctx: Context, drain: HostDrain, *, create: bool) -> HostDrain:
    """Write the record (create it, or replace it at the version read); ``Conflict`` if another writer won."""
    drain.updated_at = now()
    if create:
        entry = ctx.kube.create_catalog(DRAIN, drain.ident, drain.to_spec(), labels=_labels(drain))
    else:
        entry = ctx.kube.replace_catalog(
            DRAIN, drain.ident, drain.to_spec(), drain.resource_version, labels=_labels(drain)
        )
    drain.resource_version = entry.resource_version
    return drain


def forget(ctx: Context, zone: str, host: str) -> None:
    """Delete a host's drain record (it may have none)."""
    try:
        ctx.kube.delete_catalog(DRAIN, host_ident(zone, host))
    except FlexPlaneError as exc:
        logger.warning("drain of %s/%s: record not deleted: %s", zone, host, exc.message)


def all_drains(ctx: Context) -> dict[str, HostDrain]:
    """Every host's drain record, by host key (one list call per request)."""

    def read() -> dict[str, HostDrain]:
        drains = (HostDrain.from_entry(e) for e in ctx.kube.list_catalog([DRAIN]))
        return {f"{d.zone}/{d.host}": d for d in drains}

    return ctx.memoize(("hosts", "drains"), read)
