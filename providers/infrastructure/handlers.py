"""kopf's registrations for the infrastructure provider: each handler only calls its ``ensure_*`` step
and turns its ``Retry`` into kopf's temporary error (kopf calls it again later, with backoff)."""

from __future__ import annotations

from typing import Any

import kopf

from providers.common.errors import Retry
from providers.common.kube import KubeError, kube
from providers.common.operator import Provider
from providers.common.resources import INFRASTRUCTURE_GROUP, PROXMOX_CLUSTER, PROXMOX_MACHINE
from providers.infrastructure.clusters import ensure_cluster
from providers.infrastructure.machines import ensure_machine, ensure_machine_deleted
from providers.infrastructure.spec import FINALIZER

PROVIDER = Provider("infrastructure", FINALIZER, INFRASTRUCTURE_GROUP)
registry = PROVIDER.registry
# The longest a handler waits between two attempts (kopf's backoff otherwise doubles up to this).
MAX_BACKOFF = 60.0


def _backoff(retry: int) -> float:
    return min(2.0 ** min(retry, 16), MAX_BACKOFF)


def _step(step: Any, body: kopf.Body, retry: int) -> None:
    try:
        step(kube(), dict(body))
    except Retry as exc:
        delay = exc.delay if exc.delay is not None else _backoff(retry)
        raise kopf.TemporaryError(exc.message, delay=delay) from exc
    except KubeError as exc:
        if not exc.transient:
            raise kopf.PermanentError(exc.message) from exc
        raise kopf.TemporaryError(exc.message, delay=_backoff(retry)) from exc


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
    _step(ensure_machine, body, retry)


@kopf.on.delete(*_MACHINES, registry=registry)
def delete_machine(body: kopf.Body, retry: int, **_: Any) -> None:
    _step(ensure_machine_deleted, body, retry)
