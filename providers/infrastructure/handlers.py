"""kopf's registrations for the infrastructure provider: each handler only calls its ``ensure_*`` step
and turns its ``Retry`` into kopf's temporary error (kopf calls it again later, with backoff).

A ProxmoxMachine waiting for its bootstrap data is woken at once when its Machine gets
``spec.bootstrap.dataSecretName`` (Machines are watched, as controller-runtime's ``Watches`` maps an
owner's event to its infrastructure object; see :mod:`providers.common.wakeups`): the backoff is only the
safety net there, and the pace of real failures (a create that failed, the management cluster away).

Settings, from the environment, in seconds: ``FLEXPLANE_PROVIDERS_BACKOFF_FIRST`` (the first retry's
delay, 1; each next one doubles) and ``FLEXPLANE_PROVIDERS_MAX_BACKOFF`` (at most, 60).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import kopf

from orchestrator.sources.kube_objects import INFRASTRUCTURE_GROUP, MACHINE, PROXMOX_CLUSTER, PROXMOX_MACHINE
from providers.common.errors import Retry
from providers.common.kube import KubeError, kube
from providers.common.objects import Body
from providers.common.operator import Provider
from providers.common.settings import seconds
from providers.common.wakeups import Key, Wakeups, run_woken
from providers.infrastructure.clusters import ensure_cluster
from providers.infrastructure.machines import ensure_machine, ensure_machine_deleted
from providers.infrastructure.spec import FINALIZER

PROVIDER = Provider("infrastructure", FINALIZER, INFRASTRUCTURE_GROUP)
registry = PROVIDER.registry
# The first retry's delay, and the longest a handler waits between two attempts (kopf's backoff
# otherwise doubles up to this).
BACKOFF_FIRST = seconds("BACKOFF_FIRST", 1.0)
MAX_BACKOFF = seconds("MAX_BACKOFF", 60.0)
WAKEUPS = Wakeups()


def _backoff(retry: int) -> float:
    return min(BACKOFF_FIRST * 2.0 ** min(retry, 16), MAX_BACKOFF)


def _step(step: Callable[..., Any], body: kopf.Body, retry: int) -> None:
    try:
        step(kube(), dict(body))
    except Retry as exc:
        delay = exc.delay if exc.delay is not None else _backoff(retry)
        raise kopf.TemporaryError(exc.message, delay=delay) from exc
    except KubeError as exc:
        if not exc.transient:
            raise kopf.PermanentError(exc.message) from exc
        raise kopf.TemporaryError(exc.message, delay=_backoff(retry)) from exc


def _key(obj: Body | kopf.Body) -> Key:
    return str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"])


_CLUSTERS = (PROXMOX_CLUSTER.group, PROXMOX_CLUSTER.version, PROXMOX_CLUSTER.plural)
_MACHINES = (PROXMOX_MACHINE.group, PROXMOX_MACHINE.version, PROXMOX_MACHINE.plural)


@kopf.on.resume(*_CLUSTERS, registry=registry)
@kopf.on.create(*_CLUSTERS, registry=registry)
@kopf.on.update(*_CLUSTERS, field="spec", registry=registry)
def reconcile_cluster(body: kopf.Body, retry: int, **_: Any) -> None:
    _step(ensure_cluster, body, retry)


@kopf.on.resume(*_MACHINES, registry=registry)
@kopf.on.create(*_MACHINES, registry=registry)
@kopf.on.update(*_MACHINES, field="spec", registry=registry)
def reconcile_machine(body: kopf.Body, retry: int, **_: Any) -> None:
    """One reconcile of a machine at a time; woken while it ran (its Machine changed), a wait is retried
    at once rather than after the backoff."""
    key = _key(body)
    with WAKEUPS.serial(key):
        try:
            _step(ensure_machine, body, retry)
        except kopf.TemporaryError as error:
            if WAKEUPS.woken(key):
                raise kopf.TemporaryError(str(error), delay=0) from error
            raise


@kopf.on.delete(*_MACHINES, registry=registry)
def delete_machine(body: kopf.Body, retry: int, **_: Any) -> None:
    with WAKEUPS.serial(_key(body)):  # never while a create of it runs
        _step(ensure_machine_deleted, body, retry)


def awaited_machine(machine: Body | kopf.Body) -> Key | None:
    """The ProxmoxMachine a Machine's change may let go on: one of ours, whose Machine has its bootstrap
    data and no providerID yet (so not made yet), and is not being deleted; None for any other."""
    meta, spec = machine.get("metadata") or {}, machine.get("spec") or {}
    ref = spec.get("infrastructureRef") or {}
    if ref.get("kind") != PROXMOX_MACHINE.kind or ref.get("apiGroup") != INFRASTRUCTURE_GROUP:
        return None
    if meta.get("deletionTimestamp") or spec.get("providerID"):
        return None
    if not (spec.get("bootstrap") or {}).get("dataSecretName") or not ref.get("name"):
        return None
    return str(meta["namespace"]), str(ref["name"])


def _awaited(body: kopf.Body, **_: Any) -> bool:
    return awaited_machine(body) is not None


@kopf.on.event(MACHINE.group, MACHINE.version, MACHINE.plural, when=_awaited, registry=registry)
def machine_changed(body: kopf.Body, type: str | None, **_: Any) -> None:
    """A Machine got its bootstrap data: its ProxmoxMachine's reconcile, now."""
    key = awaited_machine(body)
    if type is None or key is None:  # the first listing: the machines' resume handlers run anyway
        return

    def reconcile() -> None:
        obj = kube().get(PROXMOX_MACHINE, *key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        with contextlib.suppress(Retry):  # its handler's retry looks again
            ensure_machine(kube(), obj)

    run_woken(WAKEUPS, key, reconcile)
