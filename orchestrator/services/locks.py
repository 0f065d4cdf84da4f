"""Locks across orchestrator replicas, kept in the management cluster as Leases (no shared memory).

``vdc_lock`` serializes what must not interleave within one VDC, such as checking its quota and
creating a VM: however many replicas run, one holder at a time. It is a Lease
``fp-lock-vdc-<id>`` of the platform namespace, written with optimistic concurrency: a create, or
a takeover of a free or expired lease, names the version it read, so of two contenders exactly
one write succeeds and the other is answered 409 and tries again (with jittered backoff) until
its ``wait`` runs out. Every write sets ``renewTime`` to now, so every write changes the lease.

While held, the lease is renewed in the background (every third of its ``ttl``): a holder that
is alive keeps it however long it works; one that died lets it expire after ``ttl``.
"""

from __future__ import annotations

import datetime
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from orchestrator import metrics
from orchestrator.errors import Conflict, FlexPlaneError
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import Lease
from orchestrator.sources.protocols import KubeApi

logger = logging.getLogger(__name__)

LEASE_PREFIX = "fp-lock-vdc-"
SDN_LEASE_PREFIX = "fp-lock-sdn-"
DEFAULT_TTL = 30.0
DEFAULT_WAIT = 10.0
_FIRST_BACKOFF = 0.02
_MAX_BACKOFF = 0.25
_random = secrets.SystemRandom()


def lease_name(vdc_id: str) -> str:
    return f"{LEASE_PREFIX}{vdc_id}"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def is_free(lease: Lease, now: datetime.datetime) -> bool:
    """Nobody holds it: released, or its holder stopped renewing it for longer than its duration."""
    if not lease.holder:
        return True
    if lease.renew_time is None or lease.duration_seconds is None:
        return True  # a lease that cannot say until when it is held is held by nobody
    return lease.renew_time + datetime.timedelta(seconds=lease.duration_seconds) <= now


@dataclass
class HeldLock:
    """A lock while it is held: the lease it is, and whether it was lost meanwhile.

    ``lost`` turns true if a renewal found the lease taken over (this holder had stopped renewing
    for longer than its ttl, e.g. a paused process): whatever the lock guarded may then interleave.
    """

    name: str
    holder: str
    ttl: float
    lease: Lease
    lost: bool = False
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)


def _acquire(source: KubeApi, name: str, holder: str, ttl: int, wait: float, what: str) -> Lease:
    deadline = time.monotonic() + wait
    backoff = _FIRST_BACKOFF
    while True:
        now = _now()
        current = source.get_lease(name)
        try:
            if current is None:
                return source.write_lease(Lease(name, holder, now, now, ttl, 0), None)
            if is_free(current, now):
                taken = replace(
                    current,
                    holder=holder,
                    acquire_time=now,
                    renew_time=now,
                    duration_seconds=ttl,
                    transitions=current.transitions + 1,
                )
                return source.write_lease(taken, current.resource_version)
        except Conflict:
            pass  # another contender wrote first: look again
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            held_by = f" (held by {current.holder})" if current is not None and current.holder else ""
            raise Conflict(f"{what} is busy{held_by}, retry")
        time.sleep(min(remaining, backoff * _random.uniform(0.5, 1.5)))
        backoff = min(backoff * 2, _MAX_BACKOFF)


def _renew(source: KubeApi, held: HeldLock) -> None:
    """Extend the lease once; mark it lost when someone else has it now."""
    with held._guard:
        if held.lost:
            return
        renewed = replace(held.lease, renew_time=_now())
        try:
            held.lease = source.write_lease(renewed, held.lease.resource_version)
        except Conflict:
            current = source.get_lease(held.name)
            if current is not None and current.holder == held.holder:
                held.lease = current  # our own write went through before the answer was lost
            else:
                held.lost = True
                metrics.LOCKS_LOST.inc()
                logger.warning("lock %s: lost to %s", held.name, current.holder if current else "nobody")


def _keep_renewed(source: KubeApi, held: HeldLock, stop: threading.Event) -> None:
    while not stop.wait(held.ttl / 3):
        try:
            _renew(source, held)
        except FlexPlaneError as exc:  # the cluster is away: try again, the lease still runs
            logger.warning("lock %s: could not renew: %s", held.name, exc.message)
        if held.lost:
            return


def _release(source: KubeApi, held: HeldLock) -> None:
    """Clear the holder, only if the lease is still ours; a failure only lets the lease expire."""
    with held._guard:
        if held.lost:
            return
        try:
            # Our lease as we last wrote it: a Conflict means it is no longer ours to release.
            source.write_lease(
                replace(held.lease, holder=None, renew_time=_now()), held.lease.resource_version
            )
        except Conflict:
            logger.info("lock %s: taken over before release", held.name)
        except FlexPlaneError as exc:
            logger.warning("lock %s: not released (it expires in %gs): %s", held.name, held.ttl, exc.message)


@contextmanager
def vdc_lock(
    ctx: Context,
    vdc_id: str,
    holder: str | None = None,
    ttl: float = DEFAULT_TTL,
    wait: float = DEFAULT_WAIT,
) -> Iterator[HeldLock]:
    """Hold VDC ``vdc_id``'s lock for the ``with`` block; after ``wait``: ``Conflict`` "VDC x is busy, retry".

    ``holder`` says who holds it (default: the caller's subject); a random suffix makes each call
    its own holder, so that two requests of one caller exclude each other too.
    """
    with lock(ctx, lease_name(vdc_id), f"VDC {vdc_id}", holder, ttl, wait) as held:
        yield held


def sdn_lease_name(zone: str) -> str:
    return f"{SDN_LEASE_PREFIX}{zone}"


@contextmanager
def sdn_lock(
    ctx: Context, zone: str, ttl: float = DEFAULT_TTL, wait: float = DEFAULT_WAIT
) -> Iterator[HeldLock]:
    """Hold zone ``zone``'s SDN lock: what hands out its VNet ids and tags, and applies its SDN, holds
    it (taken after a VDC's lock when both are, never before)."""
    with lock(ctx, sdn_lease_name(zone), f"the networks of zone {zone}", None, ttl, wait) as held:
        yield held


@contextmanager
def lock(
    ctx: Context,
    name: str,
    what: str,
    holder: str | None = None,
    ttl: float = DEFAULT_TTL,
    wait: float = DEFAULT_WAIT,
) -> Iterator[HeldLock]:
    """Hold the lease ``name`` for the ``with`` block, as the caller (or ``holder``); after ``wait``:
    ``Conflict`` "<what> is busy"."""
    with lease(ctx.kube, name, what, holder or ctx.principal.subject, ttl, wait) as held:
        yield held


@contextmanager
def lease(
    source: KubeApi, name: str, what: str, holder: str, ttl: float = DEFAULT_TTL, wait: float = DEFAULT_WAIT
) -> Iterator[HeldLock]:
    """Hold the lease ``name`` of ``source`` for the ``with`` block as ``holder`` (a process of the
    platform, such as the providers' leader, rather than a caller); after ``wait``: ``Conflict``."""
    identity = f"{holder}/{secrets.token_hex(6)}"
    seconds = max(1, round(ttl))
    kind = name.removeprefix("fp-lock-").partition("-")[0]  # vdc, sdn: a label of few values
    started = time.monotonic()
    try:
        taken = _acquire(source, name, identity, seconds, wait, what)
    except Conflict:
        metrics.LOCK_WAIT.labels(kind, "busy").observe(time.monotonic() - started)
        raise
    metrics.LOCK_WAIT.labels(kind, "acquired").observe(time.monotonic() - started)
    held = HeldLock(name=name, holder=identity, ttl=float(seconds), lease=taken)
    stop = threading.Event()
    renewer = threading.Thread(
        target=_keep_renewed, args=(source, held, stop), name=f"renew-{name}", daemon=True
    )
    renewer.start()
    try:
        yield held
    finally:
        stop.set()
        renewer.join()
        _release(source, held)


def forget_vdc_lock(ctx: Context, vdc_id: str) -> None:
    """Delete the lease of a VDC that is gone, if nobody holds it; anything else leaves it be."""
    source = ctx.kube
    name = lease_name(vdc_id)
    try:
        lease = source.get_lease(name)
        if lease is not None and lease.resource_version and is_free(lease, _now()):
            source.delete_lease(name, lease.resource_version)
    except FlexPlaneError as exc:  # taken meanwhile, or the cluster is away: a stray lease is harmless
        logger.info("lock %s: not deleted: %s", name, exc.message)
