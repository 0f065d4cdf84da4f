"""``ensure_cluster``: a ProxmoxCluster's VDC and network found, its failure domains the VDC's zones.

The VDC is the namespace's (``vdc-<vdc>``): a ProxmoxCluster that names another VDC is refused with
``Ready=False VdcMismatch`` and nothing else happens (a tenant's objects never reach another VDC).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.services import catalog, networks, vdcs
from orchestrator.sources.kube_objects import PROXMOX_CLUSTER, vdc_of_namespace
from providers.common import conditions
from providers.common import status as common_status
from providers.common.errors import Retry
from providers.common.identity import service_context
from providers.common.kube import Kube
from providers.common.objects import Body, meta
from providers.infrastructure import spec as s
from providers.infrastructure.machines import paused

logger = logging.getLogger(__name__)

# How soon a cluster whose VDC or network is missing is looked at again (seconds).
RECHECK = 30.0


def write_status(kube: Kube, obj: Body, changes: Mapping[str, Any], ready: conditions.Condition) -> None:
    common_status.write_status(kube, PROXMOX_CLUSTER, obj, changes, ready)


def ensure_cluster(kube: Kube, obj: Body) -> None:
    """Make the ProxmoxCluster's status say what its VDC and network are; ``Retry`` while they are not
    found (or cannot be read now)."""
    generation = meta(obj).get("generation")

    def ready(value: bool, reason: str, message: str = "") -> conditions.Condition:
        return conditions.condition(conditions.READY, value, reason, message, generation)

    namespace = str(meta(obj)["namespace"])
    if paused(kube, obj, namespace, s.cluster_name(obj)):
        raise Retry(s.PAUSED_MESSAGE, s.PAUSED_RECHECK)
    try:
        wanted = s.ClusterSpec.parse(obj)
    except s.SpecError as exc:
        write_status(kube, obj, {}, ready(False, s.PROVISIONING_FAILED, str(exc)))
        return
    vdc_id = vdc_of_namespace(namespace)
    if vdc_id != wanted.vdc:
        message = f"spec.vdc is {wanted.vdc!r}, but namespace {namespace} is VDC {vdc_id or '(none)'}'s"
        write_status(kube, obj, {}, ready(False, s.VDC_MISMATCH, message))
        return
    ctx = service_context(wanted.vdc)
    try:
        vdc = vdcs.get_vdc(ctx, wanted.vdc)
        known = {z.id for z in catalog.zones(ctx)}
        network = networks.get_network(ctx, wanted.network)
    except NotFound as exc:
        reason = s.VDC_NOT_FOUND if exc.kind == "VDC" else s.NETWORK_NOT_FOUND
        write_status(kube, obj, {}, ready(False, reason, exc.message))
        raise Retry(exc.message, RECHECK) from exc
    except FlexPlaneError as exc:
        write_status(kube, obj, {}, ready(False, s.PROVISIONING_FAILED, exc.message))
        raise Retry(exc.message) from exc
    zones = [z for z in vdc.zones if z in known]
    write_status(
        kube,
        obj,
        s.cluster_status(zones),
        ready(True, s.PROVISIONED, f"VDC {vdc.id}, network {network.id}"),
    )
