"""A host's drain as the management cluster records it: a ConfigMap of the platform namespace (kind
``host-drain``, id ``<zone>.<host>``), rewritten as the drain goes (see ``hosts.drain``).

The record stores the host's name under ``node``, as every record written so far has it, and its times as
``isoformat()`` writes them; what is missing, empty or does not parse reads as a drain that stopped long
ago. Both are pydantic dataclasses stored in camelCase (``models.specs.Stored``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainSerializer, model_validator
from pydantic.dataclasses import dataclass

from orchestrator.errors import FlexPlaneError
from orchestrator.models.specs import SPEC_CONFIG, Stored
from orchestrator.models.specs import load as load_spec
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


LONG_AGO = datetime.fromtimestamp(0, UTC)


def _when(value: Any) -> datetime | None:
    return value if isinstance(value, datetime) else parse_time(value)


# A time as records store it (``isoformat()``); one that does not parse reads as none, or as long ago.
Time = Annotated[datetime | None, BeforeValidator(_when), PlainSerializer(iso)]
Since = Annotated[datetime, BeforeValidator(lambda value: _when(value) or LONG_AGO), PlainSerializer(iso)]


def _filled(data: Any, keep: tuple[str, ...] = ()) -> Any:
    """A stored record without its empty values (they read as their defaults), but for those it ``keep``s."""
    if isinstance(data, Mapping):
        return {key: value for key, value in data.items() if value or key in keep}
    return data


def where(zone: str, host: str) -> str:
    return f"host {host} of zone {zone}"


# ------------------------------------------------------------------------------------ the drain record


@dataclass(config=SPEC_CONFIG)
class DrainVm(Stored):
    """One VM of a drain: where it went, or why it could not."""

    vmid: int
    name: str = ""
    vdc: str | None = None
    state: str = PENDING
    target: str | None = None
    reason: str = ""
    upid: str | None = None
    started_at: Time = None
    ended_at: Time = None

    @model_validator(mode="before")
    @classmethod
    def _stored(cls, data: Any) -> Any:
        return _filled(data, keep=("vmid",))

    def end(self, state: str, reason: str = "", target: str | None = None) -> None:
        self.state, self.reason, self.ended_at = state, reason, now()
        if target is not None:
            self.target = target


@dataclass(config=SPEC_CONFIG)
class HostDrain(Stored):
    """A host's drain as recorded in the management cluster."""

    zone: str
    host: Annotated[str, Field(alias="node")]
    state: str
    vms: list[DrainVm]
    requested_by: str
    started_at: Since
    updated_at: Since
    runner: str
    heartbeat: Since
    ended_at: Time = None
    message: str = ""
    resource_version: Annotated[str, Field(exclude=True)] = field(default="", compare=False)

    @classmethod
    def from_entry(cls, entry: CatalogEntry) -> HostDrain:
        """The record as stored; what does not parse reads as a drain that stopped long ago."""
        zone, _, host = entry.ident.partition(".")
        stopped: dict[str, Any] = {
            "zone": zone,
            "node": host,
            "state": FAILED,
            "requestedBy": "",
            "runner": "",
        }
        stopped |= {"startedAt": LONG_AGO, "updatedAt": LONG_AGO, "heartbeat": LONG_AGO}
        stored = _filled(entry.spec)
        drain = load_spec(cls, {**stopped, **stored, "vms": _readable(entry.ident, stored.get("vms") or [])})
        drain.resource_version = entry.resource_version
        return drain

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


def _readable(ident: str, items: Iterable[Any]) -> list[DrainVm]:
    vms: list[DrainVm] = []
    for item in items:
        try:
            vms.append(DrainVm.from_spec(item))
        except (AttributeError, TypeError, ValueError):  # not a mapping, or a value that does not parse
            logger.warning("drain %s: skipping an unreadable VM entry %r", ident, item)
    return vms


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
