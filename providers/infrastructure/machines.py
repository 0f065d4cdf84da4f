"""``ensure_machine`` and ``ensure_machine_deleted``: a ProxmoxMachine's VM, made and unmade.

A machine is a VM of its VDC, made by the orchestrator's own create path (``create_vm``) as the service
identity ``flexplane-capi``, so it gets everything a tenant's VM gets: the VDC's catalog choices, quota,
placement, networks and security groups. Its name is the Machine's; its idempotency key is the
ProxmoxMachine's uid (tagged on the VM), so a provider restarted mid-create finds the VM it made instead
of making a second one. The bootstrap data goes in as cloud-init user data, with meta data whose
``instance-id`` is the VM's SMBIOS uuid: the provider ID ``proxmox://<uuid>`` is what the kubelet reports.

A create that fails removes what it made (the create path's discard). One that could not (its host went
away mid-create) leaves a tagged VM that was never started: the next attempt finds it, deletes it, and
tries again, so no half-made VM stays behind. A host whose agent did not answer is avoided by the next
attempts (placement chooses another), a hint this process keeps in memory until the machine is made.

A ProxmoxMachine restored from a backup of the management cluster (``manage.py restore``) is a new object:
a new uid, no status, but its spec's ``providerID`` as it was. Its VM still runs, tagged with the old uid,
so the idempotency key would not find it, and a create would make a second one. Such a machine (a
``providerID`` and no provisioned status) is adopted instead (:func:`adopt`): its VM is found in its VDC
by the SMBIOS uuid its ``providerID`` names (the VM named after the Machine first, then the VDC's other
Cluster API VMs), its idempotency tag becomes the new uid's (so its deletion finds it), and nothing is
created. A VM that is gone is reported (``VmNotFound``), never replaced: the ``providerID`` is the node's,
and a Machine with another VM is a new Machine, Cluster API's remediation to make.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from orchestrator.errors import (
    FlexPlaneError,
    ImagePreparing,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
    ValidationFailed,
)
from orchestrator.models.networks import addresses_in
from orchestrator.models.vms import (
    IDEMPOTENCY_TAG_PREFIX,
    VirtualMachine,
    idempotency_tag,
    vdc_in,
)
from orchestrator.services import inventory
from orchestrator.services.context import Context
from orchestrator.services.locks import vdc_lock
from orchestrator.services.networks.nics import NicRequest
from orchestrator.services.placement import NoCapacity
from orchestrator.services.vms import Bootstrap, CreateVm, create_vm, delete_vm
from orchestrator.services.vms.plan import BOOTSTRAP_TAG
from orchestrator.sources.kube_objects import (
    CLUSTER,
    INFRASTRUCTURE_GROUP,
    MACHINE,
    PAUSED_ANNOTATION,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE,
    vdc_of_namespace,
)
from orchestrator.sources.proxmox import ConfigChange, Guest
from providers.common import conditions
from providers.common import status as common_status
from providers.common.errors import Retry
from providers.common.identity import service_context
from providers.common.kube import Kube, KubeError
from providers.common.objects import Body, meta, owner_reference
from providers.infrastructure import spec as s

logger = logging.getLogger(__name__)

# A machine waiting for its Machine, bootstrap data or cluster is looked at again with the handler's
# backoff (1, 2, 4, ... seconds, at most a minute): the wait is usually short (CABPK writes the data soon).
WAIT = None
# How soon after a create refused for what it asks (quota, catalog) it is tried again.
REFUSED_RETRY = 60.0
BOOTSTRAP_KEY = "value"
# Refusals that only a change elsewhere (the VDC's quota, the catalog, the spec) can lift.
_REFUSALS = (ValidationFailed, QuotaExceeded, NotFound, PermissionDenied)
# Per ProxmoxMachine (uid): the hosts (``<zone>/<node>``) whose agent was away during one of its creates.
# Only a hint (a restarted provider tries such a host once more); dropped once the machine is made.
_avoid: dict[str, set[str]] = {}


def _ready(obj: Body, value: bool, reason: str, message: str = "") -> conditions.Condition:
    return conditions.condition(conditions.READY, value, reason, message, meta(obj).get("generation"))


def _write(kube: Kube, obj: Body, changes: Mapping[str, Any], ready: conditions.Condition) -> Body:
    return common_status.write_status(kube, PROXMOX_MACHINE, obj, changes, ready)


def _wait(kube: Kube, obj: Body, reason: str, message: str, delay: float | None = WAIT) -> Retry:
    """Say why the machine waits (its Ready condition) and answer the ``Retry`` to raise."""
    _write(kube, obj, {}, _ready(obj, False, reason, message))
    return Retry(message, delay)


def paused(kube: Kube, obj: Body, namespace: str, cluster_name: str | None) -> bool:
    """Cluster API's pause: the object's ``cluster.x-k8s.io/paused`` annotation, or its Cluster's
    ``spec.paused`` (a restore, a ``clusterctl move``): nothing is done for it meanwhile."""
    if PAUSED_ANNOTATION in (meta(obj).get("annotations") or {}):
        return True
    cluster = kube.get(CLUSTER, namespace, cluster_name) if cluster_name else None
    return bool(((cluster or {}).get("spec") or {}).get("paused"))


def owner_machine(kube: Kube, obj: Body) -> Body | None:
    """The Cluster API Machine that owns this ProxmoxMachine (None until core has set the reference)."""
    ref = owner_reference(obj, MACHINE)
    if ref is None:
        return None
    return kube.get(MACHINE, str(meta(obj)["namespace"]), str(ref["name"]))


def cluster_network(kube: Kube, namespace: str, cluster_name: str | None) -> str | None:
    """The network of the machine's ProxmoxCluster (found through its Cluster's ``infrastructureRef``)."""
    if cluster_name is None:
        return None
    cluster = kube.get(CLUSTER, namespace, cluster_name)
    name = s.infrastructure_ref_name(cluster, PROXMOX_CLUSTER.kind, INFRASTRUCTURE_GROUP) if cluster else None
    infra = kube.get(PROXMOX_CLUSTER, namespace, name) if name else None
    if infra is None:
        return None
    try:
        return s.ClusterSpec.parse(infra).network
    except s.SpecError:
        return None


def create_request(obj: Body, machine: Body, wanted: s.MachineSpec, network: str, bootstrap: str) -> CreateVm:
    """What ``create_vm`` is asked: the Machine's name and zone, the spec's profiles, image and network,
    the bootstrap data as user data, and the ProxmoxMachine's uid as idempotency key."""
    name = str(meta(machine)["name"])
    return CreateVm(
        name=name,
        compute_profile=wanted.compute_profile,
        storage_profile=wanted.storage_profile,
        image=wanted.image,
        disk_gb=wanted.disk_gb,
        zone=s.owner_machine_failure_domain(machine),
        idempotency_key=str(meta(obj)["uid"]),
        networks=(NicRequest(network),),
        bootstrap=Bootstrap(user_data=bootstrap, hostname=name),
        avoid_hosts=frozenset(_avoid.get(str(meta(obj)["uid"]), ())),
    )


def ensure_machine(kube: Kube, obj: Body) -> Body:
    """Make the ProxmoxMachine's VM exist and its spec and status say so; ``Retry`` while it waits
    (for its Machine, its bootstrap data, its cluster) or a create failed. The object as it is now."""
    namespace = str(meta(obj)["namespace"])
    vdc = vdc_of_namespace(namespace)
    if vdc is None:
        raise _wait(kube, obj, s.PROVISIONING_FAILED, f"namespace {namespace} is no VDC's (vdc-<vdc>)", None)
    try:
        wanted = s.MachineSpec.parse(obj)
    except s.SpecError as exc:
        raise _wait(kube, obj, s.PROVISIONING_FAILED, str(exc), REFUSED_RETRY) from exc
    if s.provisioned(obj) and wanted.provider_id:
        return obj  # made, and said so: a resync costs no call to Proxmox
    machine = owner_machine(kube, obj)
    if paused(kube, obj, namespace, s.cluster_name(obj, machine)):
        raise Retry(s.PAUSED_MESSAGE, s.PAUSED_RECHECK)
    if wanted.provider_id:  # made before, by another object of this name (restored from a backup)
        return _adopted(kube, obj, machine, vdc, wanted.provider_id)
    if machine is None:
        raise _wait(kube, obj, s.WAITING_FOR_BOOTSTRAP_DATA, "waiting for its Machine (an owner reference)")
    secret = s.bootstrap_secret_name(machine)
    data = kube.secret_value(namespace, secret, BOOTSTRAP_KEY) if secret else None
    if data is None:
        raise _wait(
            kube, obj, s.WAITING_FOR_BOOTSTRAP_DATA, "waiting for Machine.spec.bootstrap.dataSecretName"
        )
    network = wanted.network or cluster_network(kube, namespace, s.cluster_name(obj, machine))
    if network is None:
        raise _wait(kube, obj, s.WAITING_FOR_CLUSTER, "waiting for the ProxmoxCluster that names its network")

    ctx = service_context(vdc)
    uid = str(meta(obj)["uid"])
    request = create_request(obj, machine, wanted, network, data.decode("utf-8", "replace"))
    if not s.provisioned(obj):
        _write(kube, obj, {}, _ready(obj, False, s.PROVISIONING, f"creating VM {request.name} in VDC {vdc}"))
    try:
        created = create_vm(ctx, request)
        vm = created.vm
        if not created.created and not vm.running and not s.provisioned(obj):
            # Left by a create that failed and could not remove it (its host was away): never started.
            delete_vm(ctx, vm.id)
            raise Retry(f"removed {vm.id}, left half-made by an earlier attempt; creating it again", 0)
        uuid = inventory.zone_api(ctx, vm.zone).config(vm.host, vm.vmid).smbios_uuid
    except NoCapacity as exc:
        _avoid.pop(uid, None)  # with every host again, next time
        raise _wait(kube, obj, s.PROVISIONING_FAILED, exc.message, REFUSED_RETRY) from exc
    except _REFUSALS as exc:
        raise _wait(kube, obj, s.PROVISIONING_FAILED, exc.message, REFUSED_RETRY) from exc
    except ImagePreparing as exc:  # the host is fine, its image's download goes on: the same host again
        raise _wait(kube, obj, s.PROVISIONING_FAILED, exc.message, None) from exc
    except FlexPlaneError as exc:
        if isinstance(exc, Unavailable) and exc.where.count("/") == 1:  # a host's own agent: try another
            _avoid.setdefault(uid, set()).add(exc.where)
        raise _wait(kube, obj, s.PROVISIONING_FAILED, exc.message, None) from exc
    _avoid.pop(uid, None)
    if uuid is None:
        raise _wait(kube, obj, s.PROVISIONING_FAILED, f"VM {vm.id} has no SMBIOS uuid", None)
    provider = s.provider_id(uuid)
    if wanted.provider_id != provider:
        obj = kube.patch(
            PROXMOX_MACHINE, namespace, str(meta(obj)["name"]), {"spec": {"providerID": provider}}
        )
    addresses = [str(address) for _vnet, address in addresses_in(vm.tags)]
    return _write(
        kube,
        obj,
        s.machine_status(request.name, addresses, vm.zone, vm.host, vm.vmid),
        _ready(obj, True, s.PROVISIONED, f"VM {vm.id} ({vm.status})"),
    )


def _adopted(kube: Kube, obj: Body, machine: Body | None, vdc: str, provider: str) -> Body:
    """The machine's VM adopted (:func:`adopt`) and its status written; ``Retry`` while it cannot be."""
    name = str(meta(machine or obj)["name"])
    try:
        vm = adopt(service_context(vdc), vdc, obj, name, provider)
    except FlexPlaneError as exc:
        raise _wait(kube, obj, s.PROVISIONING_FAILED, f"adopting its VM: {exc.message}", None) from exc
    if vm is None:
        message = (
            f"its VM ({provider}) is not in VDC {vdc}: it is not made again under the same providerID; "
            "delete the Machine to have another made"
        )
        raise _wait(kube, obj, s.VM_NOT_FOUND, message, REFUSED_RETRY)
    logger.info("%s/%s: adopted VM %s (%s)", meta(obj)["namespace"], meta(obj)["name"], vm.id, provider)
    addresses = [str(address) for _vnet, address in addresses_in(vm.tags)]
    return _write(
        kube,
        obj,
        s.machine_status(vm.name, addresses, vm.zone, vm.host, vm.vmid),
        _ready(obj, True, s.PROVISIONED, f"VM {vm.id} ({vm.status}), adopted"),
    )


def _candidates(guests: Mapping[str, Iterable[Guest]], vdc: str, name: str) -> list[tuple[str, Guest]]:
    """The VDC's VMs that may be the machine's: those of its name first, then its other machines' VMs."""
    mine = [(zone, g) for zone, found in guests.items() for g in found if g.is_vm and vdc_in(g.tags) == vdc]
    named = [(zone, g) for zone, g in mine if g.name == name]
    others = [(zone, g) for zone, g in mine if g.name != name and BOOTSTRAP_TAG in g.tag_list]
    return named + others


def _retagged(tags: Iterable[str], wanted: str) -> tuple[str, ...] | None:
    """A VM's tags with ``wanted`` as its only idempotency tag; None when they are so already."""
    current = tuple(tags)
    retagged = (*(t for t in current if not t.startswith(IDEMPOTENCY_TAG_PREFIX)), wanted)
    return None if set(retagged) == set(current) else retagged


def adopt(ctx: Context, vdc: str, obj: Body, name: str, provider: str) -> VirtualMachine | None:
    """The VM of the machine's ``providerID`` in VDC ``vdc``, tagged now with the machine's own
    idempotency key in place of the one that made it; None when the VDC has no such VM. ``Retry`` when a
    zone did not answer and none of the others has it (it may be there).

    Its name and its providerID's uuid find it: a VM is read (its config, for its SMBIOS uuid) only while
    it is one of the VDC's, named after the Machine or made for another machine, so an adoption costs one
    listing per zone and usually one config read.
    """
    uuid = s.uuid_of(provider)
    if uuid is None:
        message = f"spec.providerID {provider!r} is not a Proxmox VM's (proxmox://<SMBIOS uuid>)"
        raise Retry(message, REFUSED_RETRY)
    wanted_tag = idempotency_tag(str(meta(obj)["uid"]))
    resources = inventory.zone_resources(ctx)
    for zone, guest in _candidates(resources.guests, vdc, name):
        api = inventory.zone_api(ctx, zone)
        config = api.config(guest.node, guest.vmid)
        if config.smbios_uuid is None or config.smbios_uuid.lower() != uuid:
            continue
        with vdc_lock(ctx, vdc):  # as every write of a VDC's VMs' tags: never two at once
            tags = _retagged(api.config(guest.node, guest.vmid).tags, wanted_tag)
            if tags is not None:
                api.set_config(guest.node, guest.vmid, ConfigChange(tags=tags))
        return VirtualMachine.from_guest(zone, guest._replace(tags=";".join(tags or config.tags)))
    if ctx.unavailable:
        where = ", ".join(u.where for u in ctx.unavailable)
        raise Retry(f"cannot tell whether its VM is there: {where} did not answer")
    return None


def machine_vm(ctx: Context, obj: Body) -> VirtualMachine | None:
    """The VM this ProxmoxMachine made (by its uid's tag), in any zone; None when there is none. ``Retry``
    when a zone did not answer and none of the others has it (it may be there)."""
    tag = idempotency_tag(str(meta(obj)["uid"]))
    resources = inventory.zone_resources(ctx)
    for zone, guests in resources.guests.items():
        for guest in guests:
            if tag in guest.tag_list:
                return VirtualMachine.from_guest(zone, guest)
    if ctx.unavailable:
        where = ", ".join(u.where for u in ctx.unavailable)
        raise Retry(f"cannot tell whether its VM is gone: {where} did not answer")
    return None


def ensure_machine_deleted(kube: Kube, obj: Body) -> None:
    """Stop and delete the machine's VM and its snippets (a VM already gone is fine); ``Retry`` until done."""
    _avoid.pop(str(meta(obj)["uid"]), None)
    namespace = str(meta(obj)["namespace"])
    vdc = vdc_of_namespace(namespace)
    if vdc is None:
        return
    ctx = service_context(vdc)
    try:
        _write(kube, obj, {}, _ready(obj, False, s.DELETING, "deleting its VM"))
    except KubeError as exc:  # the status is a courtesy here: the delete goes on
        logger.info("%s/%s: status not written: %s", namespace, meta(obj).get("name"), exc.message)
    try:
        vm = machine_vm(ctx, obj)
        if vm is None:
            return
        outcome = delete_vm(ctx, vm.id)
    except NotFound:
        return
    except FlexPlaneError as exc:
        raise Retry(f"deleting its VM: {exc.message}") from exc
    if outcome.task is not None and outcome.task.running:
        raise Retry(f"VM {vm.id} is still being deleted")
    logger.info("%s/%s: deleted VM %s", namespace, meta(obj).get("name"), vm.id)
