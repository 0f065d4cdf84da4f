"""Proxmox tasks: the ids handed out for them, reading them, and following them to their end.

A task id holds the zone and the task's UPID (which names its node), and the VDC whose VM the task
acts on, encrypted with a key derived from the deployment's secret key (AES-SIV: authenticated and
deterministic). A caller can read a task only if they may see that VDC, nobody can forge an id for
another VDC's task, and nobody can read what an id holds: a UPID names the Proxmox token, the node and
the worker's pid. The id holds no state: any replica opens it, and a task of a VM that was since
deleted stays readable by its VDC. It holds no time either (and no random nonce: SIV derives its IV
from what it encrypts): one task of one VDC has one id, whether a mutation answered it or a listing
showed it, so a client can tell the tasks it follows apart from new ones.

A listing (:func:`recent_tasks`) reads ``/nodes/{node}/tasks`` of every node of each zone that holds
the VMs in scope, once per node and in parallel, and keeps the tasks of those VMs: a VM's tasks are
on whichever node ran them, so a VM migrated keeps its history (its earlier tasks are on the node it
left). Each task carries its VM's name, as the zone's ``/cluster/resources`` says it now. A listing
cannot keep the tasks of VMs deleted since: Proxmox's task list names a task's node, type, VMID and
user, nothing more, and a deleted VM's tags and pool membership go with it (the orchestrator keeps no
record of its own), so nothing says whose a freed VMID's tasks were; its next guest may be another
VDC's. The ids a mutation answered for them stay readable with :func:`get_task`.

Following a task a write started to its end (:func:`run`) is here too: the id it answers with is this
module's to make. The zone's Proxmox itself is ``sources.proxmox.ZoneApi`` (``inventory.zone_api``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from orchestrator.errors import Conflict, NotFound, Unavailable, UpstreamFailure, ValidationFailed
from orchestrator.models.tasks import Task, Upid
from orchestrator.models.vms import vdc_in
from orchestrator.services import access, inventory
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import (
    ClusterResources,
    TaskEntry,
    ZoneApi,
    ZoneTargets,
    is_lock_message,
)

# What the key of task ids is derived for (HKDF's info): another use of the secret key gets another key.
_KEY_INFO = b"flexplane.orchestrator.task-id.v1"
# Bound to every id as associated data: a ciphertext made for another purpose is not a task id.
_AAD = b"task"
# The longest id opened (a zone, a UPID and a VDC are well under it).
_MAX_ID = 1024
_ID = re.compile(r"[A-Za-z0-9_-]+")
# The most log lines a task answer carries (Proxmox sends 50 unless asked for more).
LOG_LIMIT = 1000
_POLL_FIRST = 0.05
_POLL_MAX = 1.0


# --------------------------------------------------------------------------- errors


class TaskFailed(UpstreamFailure):
    """A Proxmox task ended in ``TASK ERROR``; ``task`` is it, to be read with its log."""

    def __init__(self, zone: str, message: str, task: Task) -> None:
        super().__init__(zone, message)
        self.task = task


class TaskLocked(Conflict):
    """A Proxmox task could not take the VM's lock: another operation holds it."""

    def __init__(self, message: str, task: Task) -> None:
        super().__init__(message)
        self.task = task


def task_failure(zone: str, task: Task, doing: str) -> TaskFailed | TaskLocked:
    """The error of a task that ended in ``TASK ERROR``, carrying Proxmox's message and the task."""
    message = task.exitstatus or "the task failed without a message"
    if is_lock_message(message):
        return TaskLocked(f"{doing} failed, the VM is locked by another operation: {message}", task)
    return TaskFailed(zone, f"{doing} failed in Proxmox (task {task.kind} on {task.node}): {message}", task)


def failed_task(exc: Exception) -> Task | None:
    """The task whose ``TASK ERROR`` an error reports, if it reports one."""
    return exc.task if isinstance(exc, TaskFailed | TaskLocked) else None


# --------------------------------------------------------------------------- ids


@functools.lru_cache(maxsize=4)
def _cipher(secret: str) -> AESSIV:
    """AES-SIV (512-bit key: two AES-256 keys) keyed from the deployment's secret key."""
    key = HKDF(algorithm=hashes.SHA256(), length=64, salt=None, info=_KEY_INFO).derive(secret.encode())
    return AESSIV(key)


def encode_task_id(zone: str, upid: str, vdc: str) -> str:
    """The id of a task of ``zone`` acting on a VM of ``vdc``: encrypted and authenticated (it can be
    neither read nor forged), and the same every time (SIV is deterministic: no nonce, no timestamp)."""
    plain = json.dumps([zone, upid, vdc], separators=(",", ":")).encode()
    sealed = _cipher(settings.SECRET_KEY).encrypt(plain, [_AAD])
    return base64.urlsafe_b64encode(sealed).decode().rstrip("=")


def decode_task_id(value: str) -> tuple[str, Upid, str]:
    """``(zone, upid, vdc)`` of an id this API handed out; ``NotFound`` for anything else."""
    if len(value) > _MAX_ID or not _ID.fullmatch(value):
        raise NotFound("task", value)
    try:
        sealed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        if base64.urlsafe_b64encode(sealed).decode().rstrip("=") != value:
            raise ValueError("not the canonical encoding")  # one task, one id: no spare bits set
        zone, raw, vdc = json.loads(_cipher(settings.SECRET_KEY).decrypt(sealed, [_AAD]))
    except (InvalidTag, binascii.Error, ValueError, TypeError):
        raise NotFound("task", value) from None
    upid = Upid.parse(raw) if isinstance(raw, str) else None
    if upid is None or not isinstance(zone, str) or not isinstance(vdc, str):
        raise NotFound("task", value)
    return zone, upid, vdc


# --------------------------------------------------------------------------- following a task


def read_task(api: ZoneApi, task_id: str, upid: Upid, *, log: bool = False) -> Task:
    """A task as its status says (with its log when ``log``); ``NotFound`` when Proxmox knows none."""
    status = api.task_status(upid.node, upid.raw)
    lines = api.task_log(upid.node, upid.raw, LOG_LIMIT) if log else None
    task = Task.from_status(task_id, api.zone, upid, status, lines)
    if task.status == "stopped" and task.ended_at is None and log:
        task.ended_at = _ended_at(api, upid)
    return task


def _ended_at(api: ZoneApi, upid: Upid) -> datetime | None:
    """When a finished task ended: only Proxmox's task list says (its status does not)."""
    try:
        listing = api.tasks(upid.node, limit=500, since=int(upid.started_at.timestamp()), vmid=upid.vmid)
    except (UpstreamFailure, Unavailable):
        return None  # the end time is a detail: the task itself was read
    for entry in listing:
        if entry.upid == upid.raw and entry.status.ended:
            return datetime.fromtimestamp(entry.status.ended, tz=upid.started_at.tzinfo)
    return None


def wait(api: ZoneApi, task_id: str, upid: Upid, timeout: float) -> Task:
    """The task once it ended, or as it is when ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    delay = _POLL_FIRST
    while True:
        task = Task.from_status(task_id, api.zone, upid, api.task_status(upid.node, upid.raw))
        if not task.running or time.monotonic() + delay > deadline:
            return task
        time.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)


def started(zone: str, answer: str | None, vdc: str, doing: str) -> tuple[str, Upid]:
    """The id and UPID of the task a write answered with."""
    upid = Upid.parse(answer) if answer is not None else None
    if upid is None:
        raise UpstreamFailure(zone, f"{doing}: Proxmox answered {answer!r} instead of a task id")
    return encode_task_id(zone, upid.raw, vdc), upid


def run(api: ZoneApi, answer: str | None, vdc: str, doing: str, timeout: float) -> Task:
    """Follow the task a write started to its end (or ``timeout``); its ``TASK ERROR`` is raised."""
    task_id, upid = started(api.zone, answer, vdc, doing)
    task = wait(api, task_id, upid, timeout)
    if task.failed:
        raise task_failure(api.zone, task, doing)
    return task


# --------------------------------------------------------------------------- the query


def get_task(ctx: Context, task_id: str) -> Task:
    """A task with its log; another VDC's task is reported as missing, exactly like an unknown id."""
    zone, upid, vdc = decode_task_id(task_id)
    vdcs = access.visible_vdcs(ctx)
    if vdcs is not None and vdc not in vdcs:
        raise NotFound("task", task_id)
    try:
        api = inventory.zone_api(ctx, zone)
    except NotFound:
        raise NotFound("task", task_id) from None
    try:
        task = read_task(api, task_id, upid, log=True)
    except NotFound:
        raise NotFound("task", task_id) from None
    task.vdc = vdc
    return task


# Tasks that end a VMID's life in its zone: its guest was destroyed there (on whichever node).
END_OF_LIFE = frozenset({"qmdestroy"})


def of_the_guests_now(upids: Iterable[Upid], vmids: Collection[int]) -> list[Upid]:
    """The tasks, among those of a zone's nodes, of the guests that hold these VMIDs now.

    Proxmox gives a new guest the lowest free VMID, so the task lists may hold the tasks of an earlier
    guest of the same number, of another VDC maybe. A destroy of a VMID ends what was its: only the
    tasks surely started after every destroy of their VMID are kept (:func:`_after`). A migration ends
    nothing: the guest's tasks on the node it left are still its own.
    """
    mine: list[tuple[int, Upid]] = []
    ends: dict[int, list[Upid]] = {}
    for upid in upids:
        vmid = upid.vmid
        if vmid is None or vmid not in vmids:
            continue
        mine.append((vmid, upid))
        if upid.kind in END_OF_LIFE:
            ends.setdefault(vmid, []).append(upid)
    return [upid for vmid, upid in mine if all(_after(upid, end) for end in ends.get(vmid, ()))]


def _after(task: Upid, other: Upid) -> bool:
    """Whether ``task`` surely started after ``other``: on one node, by start and then by the worker's
    start; across nodes by start alone, in whole seconds (in the same second, which came first cannot
    be told, and another VDC's task must not show: it is not after)."""
    if task.node == other.node:
        return task.sequence > other.sequence
    return task.started_at > other.started_at


# --------------------------------------------------------------------------- listings

DEFAULT_TASKS = 20
MAX_TASKS = 100
# How many of a node's latest tasks a listing looks through (Proxmox answers 50 unless asked); a VM's
# own listing asks for that VM's alone. More than MAX_TASKS: Proxmox orders its list by start time in
# whole seconds, so the tasks of one second may come in any order, and its cut is not ours.
NODE_TASKS = 200
VM = "virtual machine"


@dataclass(frozen=True)
class Owner:
    """Who holds a VMID in a zone now: the VM's VDC and its name."""

    vdc: str
    name: str


# zone -> VMID -> the VM that holds it now
Owners = dict[str, dict[int, Owner]]
# (zone, node) -> the VMID whose tasks alone to list there (None: every task of the node)
Listings = dict[tuple[str, str], int | None]


def recent_tasks(ctx: Context, *, first: int | None = None, vm: str | None = None) -> list[Task]:
    """The latest tasks acting on the VMs in scope, newest first, at most ``first``.

    The scope is that of ``vms.list_vms``: the request's VDC, else the caller's VDCs (ADMIN: all); with
    ``vm``, that VM alone, which must be one the caller may see (``NotFound`` otherwise, exactly as for
    one that does not exist). Every node of each zone that holds the VMs is read once (a node that is
    not online is read only when it hosts one of them: it holds the history of none other that could
    be read), in parallel under the zone deadline; a zone or node that does not answer is reported on
    ``ctx`` (the list is then partial).
    """
    size = DEFAULT_TASKS if first is None else first
    if not 1 <= size <= MAX_TASKS:
        raise ValidationFailed("first", f"'first' must be between 1 and {MAX_TASKS}")
    visible = access.visible_vdcs(ctx)
    if vm is None:
        # Scoped to a few VDCs: their pools' VMs and their zones' nodes, never the fleet's guests.
        pooled = inventory.pool_scoped(visible)
        if pooled:
            assert visible is not None
            resources = inventory.vdc_resources(ctx, visible)
        else:
            resources = inventory.zone_resources(ctx).resources
        owners, hosting = _owners(resources, visible, pooled=pooled)
        wanted: dict[str, int | None] = dict.fromkeys(owners)
    else:
        zone, vmid, read = _visible_vm(ctx, vm, visible)
        resources = {zone: read}
        owners, hosting = _owners(resources, visible, vmid)
        wanted = {zone: vmid}
    listings: Listings = {
        (zone, node.node): only
        for zone, only in wanted.items()
        for node in resources[zone].nodes
        if node.online or (zone, node.node) in hosting
    }
    listings.update({key: wanted[key[0]] for key in hosting})  # a node the zone did not report too
    by_zone: dict[str, dict[Upid, TaskEntry]] = {}
    for (zone, _node), listing in _node_listings(ctx, listings).items():
        entries = by_zone.setdefault(zone, {})
        entries.update({upid: entry for entry in listing if (upid := Upid.parse(entry.upid)) is not None})
    found = [pair for zone, entries in by_zone.items() for pair in _tasks_of(zone, owners[zone], entries)]
    # Newest first: by start (whole seconds), then, on one node, by the worker's start.
    found.sort(key=lambda pair: (pair[0].started_at, pair[0].node, pair[0].pstart), reverse=True)
    return [task for _, task in found[:size]]


def _owners(
    resources: dict[str, ClusterResources],
    visible: frozenset[str] | None,
    vmid: int | None = None,
    *,
    pooled: bool = False,
) -> tuple[Owners, set[tuple[str, str]]]:
    """Who holds each VMID of the visible VDCs' VMs (``vmid``'s alone, if given), per zone, and the
    nodes that host them, from the zones' ``/cluster/resources`` (a VM is its VDC tag's), or from
    the VDCs' pools (``pooled``: a VM is its pool's)."""
    owners: Owners = {}
    hosting: set[tuple[str, str]] = set()
    for zone, read in resources.items():
        for guest in read.vms:
            if vmid is not None and guest.vmid != vmid:
                continue
            vdc = inventory.pool_vdc(guest.pool) if pooled else vdc_in(guest.tags)
            if vdc is not None and (visible is None or vdc in visible):
                owners.setdefault(zone, {})[guest.vmid] = Owner(vdc, guest.name)
                if guest.node:
                    hosting.add((zone, guest.node))
    return owners, hosting


def _visible_vm(
    ctx: Context, ident: str, visible: frozenset[str] | None
) -> tuple[str, int, ClusterResources]:
    """``(zone, vmid, its zone's /cluster/resources)`` of a VM the caller may see, read live (one call)."""
    zone, vmid, api = inventory.vm_zone_api(ctx, ident)
    read = api.resources()
    guest = read.vm(vmid)
    vdc = vdc_in(guest.tags) if guest is not None else None
    if guest is not None and vdc is not None and (visible is None or vdc in visible) and guest.node:
        return zone, vmid, read
    raise NotFound(VM, ident)


def _node_listings(ctx: Context, listings: Listings) -> dict[tuple[str, str], list[TaskEntry]]:
    """``/nodes/{node}/tasks`` of each ``(zone, node)``, in parallel under the zone deadline.

    A node that does not answer in time, or at all, is reported on ``ctx`` as ``<zone>/<node>``.
    """
    apis = {zone: inventory.zone_api(ctx, zone) for zone in {zone for zone, _ in listings}}
    nodes = {f"{zone}/{node}": (zone, node) for zone, node in listings}

    def read(key: ZoneTargets, _deadline_at: float) -> list[TaskEntry]:
        # The read's own deadline (the zone's) starts as the fan-out's does.
        zone, node = nodes[key.zone]
        try:
            return apis[zone].tasks(node, limit=NODE_TASKS, vmid=listings[zone, node])
        except (Unavailable, UpstreamFailure) as exc:
            raise Unavailable(
                key.zone, f"the task list of host {node} of zone {zone} could not be read: {exc.message}"
            ) from exc

    # The fan-out keys its answers by the targets' name: here one per node, "<zone>/<node>".
    fan = ctx.proxmox.fan_out(
        [ZoneTargets(key, apis[zone].targets.targets) for key, (zone, _) in nodes.items()], read
    )
    ctx.report_unavailable(list(fan.failures.values()))
    return {nodes[key]: listing for key, listing in fan.results.items()}


def _tasks_of(zone: str, owners: dict[int, Owner], entries: dict[Upid, TaskEntry]) -> list[tuple[Upid, Task]]:
    """The tasks, among a zone's nodes' listings, that act on the guests holding ``owners``' VMIDs now."""
    # Not those of an earlier guest of the same VMID (another VDC's, maybe): they are not the VDC's.
    kept: list[tuple[Upid, Task]] = []
    for upid in of_the_guests_now(entries, owners):
        if upid.vmid is not None:  # always: these are tasks of the owners' VMIDs
            owner = owners[upid.vmid]
            task = Task.from_status(
                encode_task_id(zone, upid.raw, owner.vdc), zone, upid, entries[upid].status
            )
            task.vdc, task.vm_name = owner.vdc, owner.name
            kept.append((upid, task))
    return kept


def vm_name(ctx: Context, task: Task) -> str | None:
    """The name of the VM a task acts on, if it still holds the task's VMID in the task's VDC (one
    ``/cluster/resources`` per zone and request, shared with every other reader of it)."""
    if task.vm_name or task.vmid is None or not task.vdc:
        return task.vm_name or None
    guests = inventory.zone_resources(ctx).guests.get(task.zone, ())
    guest = next((g for g in guests if g.vmid == task.vmid), None)
    if guest is not None and vdc_in(guest.tags) == task.vdc:
        task.vm_name = guest.name
    return task.vm_name or None


def task_log(ctx: Context, task: Task) -> list[str]:
    """The log lines of a task already authorized (read once per request)."""
    if task.log is not None:
        return list(task.log)
    upid = Upid.parse(task.upid)
    if upid is None:
        return []

    def read() -> list[str]:
        return inventory.zone_api(ctx, task.zone).task_log(upid.node, upid.raw, LOG_LIMIT)

    lines: list[str] = ctx.memoize(("task-log", task.id, task.status), read)
    task.with_log(lines)
    return lines
