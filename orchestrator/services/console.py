"""A VM's browser console: who may open it, the ticket that carries that decision to the websocket, and
how many may be open at once.

Authorization: USER or ADMIN, and membership of the VM's VDC; another VDC's VM is NotFound, exactly like
a missing one. The VM must be running.

The console page (a plain HTTP request, with the session's CSRF and Origin rules) checks the caller and
hands the browser a **ticket**: the caller's subject and the VM, signed with the app's secret key,
valid ``FLEXPLANE_CONSOLE_TICKET_TTL`` seconds (long enough for the page to connect, no longer). The
websocket redeems it for the same subject only, and checks again, live, before it opens anything: a
forged, altered, expired or someone else's ticket is refused.

Limits: at most ``FLEXPLANE_CONSOLE_MAX_PER_VM`` consoles per VM and ``FLEXPLANE_CONSOLE_MAX_PER_USER``
per user are open at once, across every replica. Each open console holds one numbered slot of each, a
Lease in the management cluster taken with the locks' optimistic writes (``services.locks``) and
renewed while the console is open: the (N+1)th finds every slot held and is refused with a message
saying so. A replica that dies lets its slots expire after the locks' ttl. Nothing is kept in memory.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core import signing

from agentclient import AgentTarget, ClientTLS, host_identity
from orchestrator.auth import Principal
from orchestrator.errors import Conflict, NotFound, PermissionDenied, QuotaExceeded
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import locks
from orchestrator.services.context import Context
from orchestrator.services.vms.listing import VM, locate

TICKET_SALT = "flexplane.console.ticket"
SLOT_PREFIX = "fp-lock-console-"
# A slot's lease: renewed every third of this while the console is open; a dead replica's expire.
SLOT_TTL = 30.0


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
    """A ticket for the caller to open VM ``ident``'s console through the websocket; checks first that
    they may (NotFound, PermissionDenied, Conflict when the VM is not running)."""
    _, vm = _running(ctx, ident)
    return signing.dumps({"sub": ctx.principal.subject, "vm": vm.id}, salt=TICKET_SALT, compress=False)


def redeem_ticket(principal: Principal, ticket: str) -> str:
    """The VM a ticket is for, if it is genuine, fresh and the principal's; PermissionDenied otherwise."""
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
    ):
        raise PermissionDenied("the console ticket is not valid")
    return str(data["vm"])


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


def open_console(ctx: Context, ident: str) -> tuple[ConsoleTarget, ConsoleSlots]:
    """Check again that the caller may open VM ``ident``'s console, and take its slots.

    Raises NotFound, PermissionDenied, Conflict (the VM is not running) and QuotaExceeded when the VM
    or the user already has the most consoles open that are allowed.
    """
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
