"""kopf's registrations for the control-plane provider: each handler calls :mod:`.steps` and nothing else.

A FlexControlPlane is reconciled on create, on a spec change (version, replicas, service type) and
on resume; the handler keeps being called (kopf's temporary error) until the control plane is all
its spec asks (available, every replica ready at the spec's version), so ``status`` follows a
rollout. A timer then checks every minute for drift (a replica lost, an endpoint moved). Deletion
waits on the finalizer ``controlplane.flexplane.io/finalizer`` (kopf's, per provider) until the
control plane's namespace and the VDC's two Secrets are gone.

Settings, from the environment: ``FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS`` (the address nodes reach a
NodePort Service on) and ``FLEXPLANE_PROVIDERS_ETCD_MEMBERS`` (1 or 3; see :mod:`.render`).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import kopf

from providers.common.kube import kube as management
from providers.common.operator import Provider
from providers.common.resources import CONTROLPLANE_GROUP, FLEX_CONTROL_PLANE
from providers.controlplane import steps
from providers.controlplane.kube import Kube, KubeError

PROVIDER = Provider("controlplane", steps.FINALIZER, CONTROLPLANE_GROUP)
registry = PROVIDER.registry
_FCP = (FLEX_CONTROL_PLANE.group, FLEX_CONTROL_PLANE.version, FLEX_CONTROL_PLANE.plural)
# How soon to look again while the control plane converges, and how often once it has.
CONVERGING_DELAY = 5.0
DRIFT_INTERVAL = 60.0
TRANSIENT = frozenset({408, 409, 429, 500, 502, 503, 504})


def settings() -> steps.Settings:
    members = int(os.environ.get("FLEXPLANE_PROVIDERS_ETCD_MEMBERS", "1"))
    if members not in (1, 3):
        raise kopf.PermanentError("FLEXPLANE_PROVIDERS_ETCD_MEMBERS must be 1 or 3")
    return steps.Settings(
        nodeport_address=os.environ.get("FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS", ""), etcd_members=members
    )


def _kube() -> Kube:
    return Kube(management().api_client)


def _reconcile(body: kopf.Body, *, converge: bool) -> None:
    kube, fcp = _kube(), dict(body)
    try:
        outcome = steps.reconcile(kube, fcp, settings())
    except steps.Waiting as waiting:
        steps.write(kube, fcp, steps.Outcome(status=steps.waiting_status(fcp, waiting)))
        raise kopf.TemporaryError(str(waiting), delay=waiting.delay) from waiting
    except KubeError as error:
        if error.status in TRANSIENT:
            raise kopf.TemporaryError(str(error), delay=CONVERGING_DELAY) from error
        raise kopf.PermanentError(str(error)) from error
    if outcome is None:
        return  # paused: the timer looks again
    steps.write(kube, fcp, outcome)
    if converge and not steps.converged(fcp, outcome.status):
        raise kopf.TemporaryError("the control plane is converging", delay=CONVERGING_DELAY)


@kopf.on.resume(*_FCP, registry=registry)
@kopf.on.create(*_FCP, registry=registry)
@kopf.on.update(*_FCP, field="spec", registry=registry)
def reconcile_control_plane(body: kopf.Body, **_: Any) -> None:
    _reconcile(body, converge=True)


@kopf.timer(*_FCP, interval=DRIFT_INTERVAL, idle=DRIFT_INTERVAL, registry=registry)
def check_control_plane(body: kopf.Body, **_: Any) -> None:
    if body.get("metadata", {}).get("deletionTimestamp"):
        return
    with contextlib.suppress(kopf.TemporaryError):  # the next tick looks again
        _reconcile(body, converge=False)


@kopf.on.delete(*_FCP, registry=registry)
def delete_control_plane(body: kopf.Body, **_: Any) -> None:
    if not steps.delete(_kube(), dict(body)):
        raise kopf.TemporaryError("the control plane's namespace is being deleted", delay=2.0)
