"""A VM's browser console: who may open it, the ticket that carries that decision to the websocket, and
how many may be open at once.

Authorization: USER or ADMIN, and membership of the VM's VDC; another VDC's VM is NotFound, exactly like
a missing one. The VM must be running.

The console page (a plain HTTP request, with the session's CSRF and Origin rules) checks the caller and
hands the browser a **ticket**: the caller's subject and the VM, signed with the app's secret key,
valid ``FLEXPLANE_CONSOLE_TICKET_TTL`` seconds (long enough for the page to connect, no longer). The
websocket redeems it for the same subject only, and checks again, live, before it opens anything: a
forged, altered, expired or someone else's ticket is refused.

A ticket opens one console: the first open spends it, and a second open with it (a copied URL, a replayed
request, within its life) is refused, saying so (``TicketUsed``). The signature alone cannot say whether
a ticket was used, and any replica may be asked, so the record of a spent ticket lives where the state
does, in the management cluster: each ticket carries a random id, and spending it *creates* the Lease
``fp-console-ticket-<id>`` (labelled ``flexplane.io/kind=console-ticket``). The API server creates a name
once: of two opens with one ticket, on one replica or two, at once or not, exactly one create succeeds
and the other is answered 409. (Not Proxmox's vncproxy ticket: the agent asks for a new one per open,
on the node, and it never leaves the node; so it cannot tell two opens of our ticket apart.) A record
must outlive its ticket, and no longer: the Lease says it is held from its use for the ticket's life
plus ``SPENT_MARGIN`` (replicas' clocks may differ by less than that), and each spend deletes the
records past that, so they never pile up (a replica that dies leaves its records to the next spend).

Limits: at most ``FLEXPLANE_CONSOLE_MAX_PER_VM`` consoles per VM and ``FLEXPLANE_CONSOLE_MAX_PER_USER``
per user are open at once, across every replica. Each open console holds one numbered slot of each, a
Lease in the management cluster taken with the locks' optimistic writes (``services.locks``) and
renewed while the console is open: the (N+1)th finds every slot held and is refused with a message
saying so. A replica that dies lets its slots expire after the locks' ttl. Nothing is kept in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core import signing

from agentclient import AgentError, AgentTarget, ClientTLS, host_identity
from agentclient.console import OPEN_TIMEOUT, ConsoleStream
from agentclient.console import open_console as open_stream
from orchestrator.auth import Principal
from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    UpstreamFailure,
)
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import locks
from orchestrator.services.context import Context
from orchestrator.services.vms.listing import VM, locate
from orchestrator.sources.kube_objects import KIND_LABEL, Lease
from orchestrator.sources.protocols import KubeApi

logger = logging.getLogger(__name__)

TICKET_SALT = "flexplane.console.ticket"
SLOT_PREFIX = "fp-lock-console-"
# A slot's lease: renewed every third of this while the console is open; a dead replica's expire.
SLOT_TTL = 30.0
# A spent ticket's record: the Lease ``<SPENT_PREFIX><ticket id>``, of this kind.
SPENT_PREFIX = "fp-console-ticket-"
SPENT_KIND = "console-ticket"
# How long a spent ticket's record outlives the ticket (seconds): more than replicas' clocks differ.
SPENT_MARGIN = 60.0
_TICKET_ID = re.compile(r"[0-9a-f]{32}")


class TicketUsed(PermissionDenied):
    """The ticket opened a console already: a ticket opens one."""


@dataclass(frozen=True)
class Ticket:
    """A redeemed ticket: the VM it opens, and its own id (what spending it records)."""

    vm: str
    id: str


@dataclass(frozen=True)
class ConsoleTarget:
    """Where a console is opened: the VM, its node's agent, and the TLS material to call it with."""

    vm: VirtualMachine
    agent: AgentTarget
    tls: ClientTLS = field(repr=False)
    proxy: str = ""  # the mesh hub's CONNECT proxy, when the agent is reached through it


@dataclass
class ConsoleSlots:
    """The slots an open console holds (one per VM, one per user); release them when it ends."""

    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def release(self) -> None:
        self.stack.close()


def _running(ctx: Context, ident: str) -> tuple[Any, VirtualMachine]:
    api, vm = locate(ctx, ident)
    if not vm.running:
        raise Conflict(f"VM {vm.id} is {vm.status}: its console opens while it runs")
    return api, vm


def issue_ticket(ctx: Context, ident: str) -> str:
    """A ticket for the caller to open VM ``ident``'s console through the websocket, once; checks first
    that they may (NotFound, PermissionDenied, Conflict when the VM is not running)."""
    return ticketed_vm(ctx, ident)[1]


def ticketed_vm(ctx: Context, ident: str) -> tuple[VirtualMachine, str]:
    """:func:`issue_ticket`, with the VM it is for as it was read (the console page names it: no second
    read)."""
    _, vm = _running(ctx, ident)
    data = {"sub": ctx.principal.subject, "vm": vm.id, "id": secrets.token_hex(16)}
    return vm, signing.dumps(data, salt=TICKET_SALT, compress=False)


def redeem_ticket(principal: Principal, ticket: str) -> Ticket:
    """The ticket, if it is genuine, fresh and the principal's; PermissionDenied otherwise. (Whether it was
    spent already is the management cluster's to say: ``open_console`` spends it.)"""
    try:
        age = datetime.timedelta(seconds=settings.FLEXPLANE_CONSOLE_TICKET_TTL)
        data = signing.loads(ticket, salt=TICKET_SALT, max_age=age)
    except signing.SignatureExpired:
        raise PermissionDenied("the console ticket has expired: open the console again") from None
    except signing.BadSignature:
        raise PermissionDenied("the console ticket is not valid") from None
    if (
        not isinstance(data, dict)
        or data.get("sub") != principal.subject
        or not isinstance(data.get("vm"), str)
        or not isinstance(data.get("id"), str)
        or not _TICKET_ID.fullmatch(data["id"])
    ):
        raise PermissionDenied("the console ticket is not valid")
    return Ticket(vm=str(data["vm"]), id=str(data["id"]))


def _spent_until(lease: Lease) -> datetime.datetime | None:
    if lease.renew_time is None or lease.duration_seconds is None:
        return None
    return lease.renew_time + datetime.timedelta(seconds=lease.duration_seconds)


def _forget_spent(source: KubeApi, now: datetime.datetime) -> None:
    """Delete the records of spent tickets whose time is over (anyone's: a lost race is another's delete)."""
    for lease in source.list_leases(f"{KIND_LABEL}={SPENT_KIND}"):
        until = _spent_until(lease)
        if lease.resource_version and (until is None or until <= now):
            with contextlib.suppress(Conflict):
                source.delete_lease(lease.name, lease.resource_version)


def spend_ticket(ctx: Context, ticket: Ticket) -> None:
    """Record that ``ticket`` opened a console, across every replica; ``TicketUsed`` if it did already.

    The record is a create of a name derived from the ticket's id: the API server answers the second
    409 (see the module's docstring). Then the records whose time is over are deleted; that failing only
    leaves them for the next spend.
    """
    source = ctx.kube
    now = datetime.datetime.now(datetime.UTC)
    keep = math.ceil(settings.FLEXPLANE_CONSOLE_TICKET_TTL + SPENT_MARGIN)
    record = Lease(f"{SPENT_PREFIX}{ticket.id}", ctx.principal.subject, now, now, keep, 0)
    try:
        source.write_lease(record, None, labels={KIND_LABEL: SPENT_KIND})
    except Conflict:
        raise TicketUsed(
            "this console ticket was used already: a ticket opens one console; reload the page to open "
            "another"
        ) from None
    try:
        _forget_spent(source, now)
    except FlexPlaneError as exc:
        logger.info("spent console tickets not cleaned up now: %s", exc.message)


def _user_key(subject: str) -> str:
    """A DNS-safe name for a subject (it may hold any character): a digest of it."""
    return hashlib.sha256(subject.encode()).hexdigest()[:24]


def _take_slot(ctx: Context, stack: contextlib.ExitStack, prefix: str, count: int, what: str) -> bool:
    """Take the first free one of ``count`` slots named ``<prefix><i>``; False when all are held."""
    for index in range(count):
        name = f"{prefix}{index}"
        try:
            stack.enter_context(locks.lock(ctx, name, f"{what} (slot {index})", ttl=SLOT_TTL, wait=0.0))
        except Conflict:
            continue
        return True
    return False


def open_console(ctx: Context, ticket: Ticket) -> tuple[ConsoleTarget, ConsoleSlots]:
    """Spend the ticket, check again that the caller may open its VM's console, and take its slots.

    Raises TicketUsed (the ticket opened a console already), NotFound, PermissionDenied, Conflict (the
    VM is not running) and QuotaExceeded when the VM or the user already has the most consoles open that
    are allowed.
    """
    spend_ticket(ctx, ticket)  # first: whatever follows, the ticket has had its one try
    ident = ticket.vm
    api, vm = _running(ctx, ident)
    per_vm, per_user = settings.FLEXPLANE_CONSOLE_MAX_PER_VM, settings.FLEXPLANE_CONSOLE_MAX_PER_USER
    slots = ConsoleSlots()
    try:
        if not _take_slot(ctx, slots.stack, f"{SLOT_PREFIX}vm-{vm.zone}-{vm.vmid}-", per_vm, f"VM {vm.id}"):
            raise QuotaExceeded(
                f"VM {vm.id} already has {per_vm} console{'s' if per_vm != 1 else ''} open, "
                "the most allowed: close one to open another"
            )
        user = f"{SLOT_PREFIX}user-{_user_key(ctx.principal.subject)}-"
        if not _take_slot(ctx, slots.stack, user, per_user, "your consoles"):
            raise QuotaExceeded(
                f"you already have {per_user} console{'s' if per_user != 1 else ''} open, the most allowed: "
                "close one to open another"
            )
    except BaseException:
        slots.release()
        raise
    identity = host_identity(vm.zone, vm.host)
    agent = next((t for t in api.targets.targets if t.identity == identity), None)
    if agent is None:
        slots.release()
        raise NotFound(VM, ident)  # the VM's host is not one the catalog lists: nothing to open it on
    return ConsoleTarget(vm, agent, api.source.pool.tls, api.source.pool.proxy_for(agent)), slots


@dataclass
class Console:
    """An open console: the VM's bytes to and from its node's agent, and the slots it holds. What fails
    on the way is a domain error (``UpstreamFailure`` naming the host); ``close`` ends it all."""

    vm: VirtualMachine
    stream: ConsoleStream = field(repr=False)
    slots: ConsoleSlots = field(repr=False)
    # Seconds the checks and slots took, and the node's agent (for the log).
    checked_in: float = 0.0
    opened_in: float = 0.0

    async def send(self, data: bytes) -> None:
        try:
            await self.stream.send(data)
        except AgentError as exc:
            raise _ended(self.vm, exc) from None

    async def receive(self) -> bytes | None:
        """The VM's next bytes; None once its side ended the console."""
        try:
            return await self.stream.receive()
        except AgentError as exc:
            raise _ended(self.vm, exc) from None

    async def close(self) -> None:
        await self.stream.close()
        await asyncio.to_thread(self.slots.release)


def _ended(vm: VirtualMachine, exc: AgentError) -> UpstreamFailure:
    return UpstreamFailure(f"{vm.zone}/{vm.host}", f"the console ended: {exc.detail}")


async def connect(ctx: Context, ticket: Ticket) -> Console:
    """Open ``ticket``'s console: spend it, check again, take the slots (``open_console``), then open the
    stream on the VM's node within ``OPEN_TIMEOUT``. The errors of ``open_console``, and
    ``UpstreamFailure`` when the node's agent or Proxmox would not open it (the slots released)."""
    started = time.monotonic()
    target, slots = await asyncio.to_thread(open_console, ctx, ticket)
    checked = time.monotonic()
    try:
        stream = await open_stream(
            target.tls, target.agent, target.vm.vmid, timeout=OPEN_TIMEOUT, proxy=target.proxy
        )
    except AgentError as exc:
        await asyncio.to_thread(slots.release)
        vm = target.vm
        raise UpstreamFailure(f"{vm.zone}/{vm.host}", f"the console could not open: {exc.detail}") from None
    except BaseException:
        await asyncio.to_thread(slots.release)
        raise
    return Console(target.vm, stream, slots, checked - started, time.monotonic() - checked)
