"""The audit trail: one record for every mutation of the API and every action of the portal.

A record says when, who (subject, their name as their token gave it, the roles that mattered), in which
VDC, which operation on which targets, how it ended (``succeeded``, ``failed`` with its error code,
``refused`` for want of a role or membership, ``error`` for an INTERNAL one), under which request id and
from which client address.

There is no database: a record is written twice, once as a JSON line on stdout (the ``flexplane.audit``
logger: the operator's log pipeline keeps it as long as it keeps logs), and once as a Kubernetes Event
(events.k8s.io/v1) of the platform namespace, so that the portal can show recent activity. The Events
live as long as the cluster keeps Events (the API server's ``--event-ttl``, one hour by default): the
log is the record of long standing, the Events are the recent past.

What a record holds is chosen, never dumped: the targets are the arguments that name objects (ids,
names, zones, hosts), never a token, password, SSH key, user data or description. Writing the Event is
best effort: a management cluster that does not answer costs a warning, never the operation.

Who sees what (:func:`recent`): ADMIN sees every record; a member of a VDC sees that VDC's records. A
record is a VDC's only when the operation acted on a VM of it, or the caller, a member of it (or
ADMIN), named it (``FlexPlane-VDC-ID``, the portal's URL): nobody can write into another VDC's activity.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from django.http import HttpRequest
from kubernetes import client

from flexplane.logs import current_request_id
from orchestrator.auth import ADMIN, USER, VDC_ROLE_PREFIX
from orchestrator.errors import FlexPlaneError, NotFound, PermissionDenied, Unauthenticated
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import access
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import VDC_LABEL

logger = logging.getLogger("flexplane.audit")
_trouble = logging.getLogger(__name__)

AUDIT_LABEL = "flexplane.io/audit"
OPERATION_LABEL = "flexplane.io/operation"
RECORD_ANNOTATION = "flexplane.io/record"
CONTROLLER = "flexplane.io/orchestrator"

SUCCEEDED, FAILED, REFUSED, ERROR = "succeeded", "failed", "refused", "error"
API, PORTAL = "api", "portal"
# The arguments (and input fields) that name what an operation acts on: what a record's targets hold.
TARGET_KEYS = (
    "id",
    "vm",
    "name",
    "zone",
    "host",
    "vdc",
    "kind",
    "ident",
    "action",
    "network",
    "group",
    "cluster",
    "pool",
    "version",
)
_MAX_TARGET = 200
# How many Events one listing reads at most (the newest are kept after sorting).
MAX_READ = 1000
DEFAULT_RECENT = 50
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class AuditRecord:
    time: datetime.datetime
    subject: str
    roles: tuple[str, ...]
    vdc: str | None
    operation: str
    targets: dict[str, str]
    outcome: str
    error_code: str | None
    request_id: str | None
    client: str | None
    via: str
    # The caller's name (or email) from their token: the portal shows people by name, also when Zitadel is
    # away ("" in records written before it was kept).
    name: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["time"] = self.time.isoformat()
        data["roles"] = list(self.roles)
        return data

    @classmethod
    def from_json(cls, data: Any) -> AuditRecord | None:
        """The record an Event carries; None for one that is not (written by something else)."""
        try:
            return cls(
                time=datetime.datetime.fromisoformat(str(data["time"])),
                subject=str(data["subject"]),
                roles=tuple(str(r) for r in data.get("roles") or ()),
                vdc=str(data["vdc"]) if data.get("vdc") else None,
                operation=str(data["operation"]),
                targets={str(k): str(v) for k, v in (data.get("targets") or {}).items()},
                outcome=str(data["outcome"]),
                error_code=str(data["error_code"]) if data.get("error_code") else None,
                request_id=str(data["request_id"]) if data.get("request_id") else None,
                client=str(data["client"]) if data.get("client") else None,
                via=str(data.get("via") or API),
                name=str(data.get("name") or ""),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    @property
    def summary(self) -> str:
        what = ", ".join(f"{k} {v}" for k, v in self.targets.items())
        code = f" ({self.error_code})" if self.error_code else ""
        return f"{self.subject} {self.operation} {what}: {self.outcome}{code}"[:1000]


# ------------------------------------------------------------------------------------------ writing


def targets_of(args: Mapping[str, Any]) -> dict[str, str]:
    """What the arguments name (see ``TARGET_KEYS``), from the arguments and their input objects."""
    found: dict[str, str] = {}
    for source in (args, *(v for v in args.values() if isinstance(v, Mapping))):
        for key in TARGET_KEYS:
            value = source.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and key not in found:
                found[key] = str(value)[:_MAX_TARGET]
    return found


def client_of(request: HttpRequest | None) -> str | None:
    """The client's address as this process saw it (the ingress's, behind one)."""
    return None if request is None else request.META.get("REMOTE_ADDR") or None


def _acted_on(result: Any) -> VirtualMachine | None:
    if isinstance(result, VirtualMachine):
        return result
    vm = getattr(result, "vm", None)
    return vm if isinstance(vm, VirtualMachine) else None


@dataclass
class Trail:
    """One operation's record in the making, written once by :meth:`write` (``audited`` does it)."""

    ctx: Context
    operation: str
    via: str
    client: str | None
    targets: dict[str, str]
    request_id: str | None = field(default_factory=current_request_id)
    outcome: str | None = None
    error_code: str | None = None
    vdc: str | None = None
    written: AuditRecord | None = None

    def succeeded(self, result: Any = None) -> None:
        self.outcome, self.error_code = SUCCEEDED, None
        vm = _acted_on(result)
        if vm is not None:
            self.targets.setdefault("vm", vm.id)
            self.vdc = vm.vdc or self.vdc

    def failed(self, exc: FlexPlaneError) -> None:
        refused = isinstance(exc, PermissionDenied | Unauthenticated)
        self.outcome, self.error_code = (REFUSED if refused else FAILED), exc.code

    def crashed(self) -> None:
        if self.outcome is None:
            self.outcome, self.error_code = ERROR, "INTERNAL"

    def record(self) -> AuditRecord:
        principal = self.ctx.principal
        vdc = self.vdc or self._named_vdc()
        roles = [r for r in (ADMIN, USER) if r in principal.roles]
        if vdc is not None and vdc in principal.vdcs:
            roles.append(f"{VDC_ROLE_PREFIX}{vdc}")
        return AuditRecord(
            time=datetime.datetime.now(datetime.UTC),
            subject=principal.subject,
            roles=tuple(roles),
            vdc=vdc,
            operation=self.operation,
            targets=dict(self.targets),
            outcome=self.outcome or ERROR,
            error_code=self.error_code if self.outcome else "INTERNAL",
            request_id=self.request_id,
            client=self.client,
            via=self.via,
            name=principal.name or principal.email,
        )

    def _named_vdc(self) -> str | None:
        """The VDC the request named, when the caller may act in it (else the record is no VDC's)."""
        named = self.ctx.vdc or self.targets.get("vdc")
        principal = self.ctx.principal
        if named and (principal.is_admin or named in principal.vdcs):
            return named
        return None

    def write(self) -> AuditRecord:
        """Write the record (once: a second call answers the first's)."""
        if self.written is None:
            self.written = write(self.ctx, self.record())
        return self.written


@contextmanager
def audited(
    ctx: Context, operation: str, *, via: str, client: str | None, targets: dict[str, str]
) -> Iterator[Trail]:
    """Around an operation: its record is written when it ends, however it ends (an exception that
    escapes is a failure, or an INTERNAL error, and a block that ends well a success, unless the block
    said how it ended first)."""
    trail = Trail(ctx, operation, via, client, targets)
    try:
        yield trail
    except FlexPlaneError as exc:
        if trail.outcome is None:
            trail.failed(exc)
        raise
    except BaseException:
        trail.crashed()
        raise
    else:
        if trail.outcome is None:
            trail.succeeded()
    finally:
        trail.write()


def write(ctx: Context, record: AuditRecord) -> AuditRecord:
    """The record on stdout (a JSON line) and as an Event of ``ctx``'s platform namespace (best effort)."""
    logger.info("audit %s", record.operation, extra={"audit": record.to_json()})
    try:
        ctx.kube.create_event(_event(record))
    except FlexPlaneError as exc:
        _trouble.warning("audit record %s not kept as an Event: %s", record.request_id, exc.message)
    except Exception as exc:  # no cluster configured, a client's own error: never the operation's failure
        _trouble.warning("audit record %s not kept as an Event: %r", record.request_id, exc)
    return record


def _event(record: AuditRecord) -> client.EventsV1Event:
    labels = {AUDIT_LABEL: "true"}
    for label, value in ((VDC_LABEL, record.vdc), (OPERATION_LABEL, record.operation)):
        if value and _LABEL_VALUE.fullmatch(value):
            labels[label] = value
    stamp = f"{int(record.time.timestamp() * 1e6):x}"
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(
            name=f"fp-audit.{stamp}.{secrets.token_hex(4)}",
            labels=labels,
            annotations={RECORD_ANNOTATION: json.dumps(record.to_json(), separators=(",", ":"))},
        ),
        event_time=record.time,
        reporting_controller=CONTROLLER,
        reporting_instance=(os.environ.get("HOSTNAME") or "orchestrator")[:128],
        action=record.operation[:128],
        reason=record.outcome.capitalize(),
        type="Normal" if record.outcome == SUCCEEDED else "Warning",
        note=record.summary,
    )


# ------------------------------------------------------------------------------------------ reading


def _utc(moment: datetime.datetime) -> datetime.datetime:
    """``moment``, in UTC when it names no time zone."""
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def recent(
    ctx: Context,
    *,
    vdc: str | None = None,
    user: str | None = None,
    operation: str | None = None,
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
    limit: int = DEFAULT_RECENT,
) -> list[AuditRecord]:
    """The newest records first, as the Events still hold them: ADMIN's of every VDC (or of ``vdc``);
    a member's of ``vdc`` only (another VDC answers as one that does not exist). ``user`` keeps a
    subject's records, ``operation`` one operation's, ``since`` and ``until`` those of that time or later,
    of that time or earlier."""
    access.require_self_service(ctx)
    principal = ctx.principal
    if not principal.is_admin:
        if vdc is None:
            raise PermissionDenied("the activity of every VDC needs the ADMIN role: name a VDC")
        if vdc not in principal.vdcs:
            raise NotFound("VDC", vdc)
    selector = AUDIT_LABEL + "=true"
    if vdc is not None:
        if not _LABEL_VALUE.fullmatch(vdc):
            return []
        selector += f",{VDC_LABEL}={vdc}"
    if operation and _LABEL_VALUE.fullmatch(operation):
        selector += f",{OPERATION_LABEL}={operation}"
    records: list[AuditRecord] = []
    for entry in ctx.kube.list_events(selector, MAX_READ):
        raw = entry.annotations.get(RECORD_ANNOTATION)
        try:
            record = AuditRecord.from_json(json.loads(raw)) if raw else None
        except ValueError:
            record = None
        if record is None or (vdc is not None and record.vdc != vdc):
            continue
        if (user and user != record.subject) or (operation and operation != record.operation):
            continue
        if (since and record.time < _utc(since)) or (until and record.time > _utc(until)):
            continue
        records.append(record)
    records.sort(key=lambda r: r.time, reverse=True)
    return records[: max(1, min(limit, MAX_READ))]
