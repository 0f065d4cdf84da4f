"""Creating a VM: the template on the host, the clone, its configuration, its start.

A create follows docs/architecture.md's flow. Under the VDC's lock (which serializes creates of one VDC
across replicas): an existing VM of the same idempotency key or name is returned instead of a second
one; the quota is checked against the VDC's live usage; placement picks the host; the VM is cloned
from the image's template and tagged, so that it is visible (and counted) before the lock is
released. Then, outside the lock, it is configured (profile, cloud-init), its disk grown, given its
firewall, and started. Whatever fails after the clone removes the VM again, so that nothing half-made is
left behind.

The image's template must be ready on the chosen host within ``TEMPLATE_WAIT`` (a few seconds): images are
cached on every host when they are published and when a host joins (``services.image_cache``), and
placement prefers hosts that have the image. A create that still finds its host downloading or importing
the image is refused (``ImagePreparing``: UNAVAILABLE, saying how far it is and when to retry) before
anything is made; the host's agent carries on, and the retry clones from the finished template.

A create that dies between its tag and its end (its replica killed, say) leaves a VM tagged
``fp-state-creating`` (``models.vms``): found by the retry, which completes it with the same idempotent steps
(configuration, cloud-init, disk, firewall, then the start: never a start before its firewall) and takes
the tag away last. A retry never returns a half-made VM as made.

A tenant's own cloud-init data (``user_data``) reaches the VM as cloud-init *vendor* data: Proxmox reads
custom cloud-init only from a snippet file on the node, so the node's agent writes it as
``fp-<vdc>-<vmid>-vendor.yaml`` and the VM's ``cicustom`` names it. Proxmox keeps generating the user
data (user, SSH keys, network), and cloud-init merges the tenant's cloud-config in. The snippet goes
with the VM: a failed create and a delete remove it.

A VM another system configures (a Cluster API machine: ``bootstrap``) gets its user data and its meta
data as snippets too (``fp-<vdc>-<vmid>-user.yaml``, ``-meta.yaml``; ``cicustom`` ``user=...,meta=...``):
Proxmox then generates only the network configuration. The meta data's ``instance-id`` is the clone's
SMBIOS uuid, which the machine's provider ID names. They go with the VM as the vendor snippet does.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from orchestrator.errors import FlexPlaneError, ImagePreparing, Unavailable, UpstreamFailure, ValidationFailed
from orchestrator.models import Host, Vdc
from orchestrator.models.networks import DEFAULT_NETWORK, Network, address_tag
from orchestrator.models.tasks import Task
from orchestrator.models.vms import CREATING_TAG, VirtualMachine, vdc_in
from orchestrator.services import catalog, inventory, networks, security_groups, tasks, vdcs
from orchestrator.services.clusters.quota import reserved_for_clusters
from orchestrator.services.context import Context
from orchestrator.services.locks import HeldLock
from orchestrator.services.networks import nics
from orchestrator.services.networks.nics import NicRequest
from orchestrator.services.placement import Placement, place, place_in_zones
from orchestrator.services.vms.lifecycle import (
    TASK_TIMEOUT,
    destroy,
    grow,
    power,
    remove_snippets,
    snippet_name,
    vendor_snippet_name,
)
from orchestrator.services.vms.listing import reread
from orchestrator.services.vms.plan import (
    Created,
    CreateVm,
    Plan,
    everything_now,
    existing,
    marker,
    plan,
    still_held,
    usage,
    vdc_lock,
)
from orchestrator.sources.proxmox import (
    ClusterResources,
    ConfigChange,
    Drive,
    Guest,
    QemuConfig,
    Template,
    VmidTaken,
    ZoneApi,
    cloud_init_drive,
)
from orchestrator.sources.proxmox.zone import duration_text

logger = logging.getLogger(__name__)

CLONE_TIMEOUT = 300.0
# How long a create waits for its image's template on the chosen host. Images are cached on every host
# ahead of creates (``services.image_cache``); a create that finds the download still under way gives it
# this long to end, then is refused, saying how far it is, while the host's agent carries on. A create's
# request is never held for a download: behind an ingress that would be a failed request.
TEMPLATE_WAIT = 5.0
# Concurrent creates in one zone can be handed the same next free VMID: the loser asks again.
VMID_ATTEMPTS = 8


def _host(ctx: Context, zone: str, node: str) -> Host:
    for host in catalog.hosts(ctx):
        if host.zone == zone and host.node == node:
            return host
    raise Unavailable(f"{zone}/{node}", f"host {node} of zone {zone} is no longer in the catalog")


def ensure_template(ctx: Context, api: ZoneApi, plan: Plan, node: str) -> Template:
    """The image's template on ``node``, if it is ready within ``TEMPLATE_WAIT``; otherwise ``ImagePreparing``
    (the download or import goes on on the host: a retry finds it done), before anything is made."""
    _host(ctx, plan.placed, node)
    image = plan.image
    try:
        return api.ensure_template(
            node, image.name, image.source_url, image.checksum, plan.storage, timeout=TEMPLATE_WAIT
        )
    except ImagePreparing as exc:
        when = (
            f"in about {duration_text(exc.retry_after)}"
            if exc.retry_after is not None
            else "in a minute or so"
        )
        exc.message = f"{exc.message}. The create made nothing: retry it {when}"
        exc.args = (exc.message,)
        logger.info("create of %s in VDC %s refused for now: %s", plan.name, plan.vdc.id, exc.message)
        raise


def clone(api: ZoneApi, plan: Plan, template: Template, node: str) -> tuple[int, Task]:
    """A linked clone of the template on ``node``, in the VDC's pool; retried on a VMID taken meanwhile."""
    for attempt in range(VMID_ATTEMPTS):
        vmid = api.next_vmid()
        try:
            answer = api.clone(
                template.node,
                template.vmid,
                vmid,
                name=plan.name,
                pool=plan.vdc.pool,
                description=plan.description,
                target=node if template.node != node else None,
            )
        except VmidTaken:
            # Another create took the id between nextid and clone: nothing was made, ask again.
            if attempt + 1 < VMID_ATTEMPTS:
                time.sleep(random.uniform(0.01, 0.1))  # noqa: S311 - jitter, not security
                continue
            raise
        try:
            task = tasks.run(api, answer, plan.vdc.id, f"cloning VM {plan.name}", CLONE_TIMEOUT)
            if task.running:
                raise Unavailable(
                    f"{api.zone}/{template.node}",
                    f"the clone of VM {plan.name} ({api.zone}/{vmid}) did not end within {CLONE_TIMEOUT:g} s",
                )
        except FlexPlaneError as exc:
            discard(api, plan, vmid, exc, tagged=False)
            raise
        return vmid, task
    raise AssertionError("unreachable: the last attempt returns or raises")


def configuration(
    plan: Plan, config: QemuConfig, cicustom: str | None, zone: str
) -> tuple[ConfigChange, Drive]:
    """The change that gives the clone its profile, cloud-init and I/O limits, and its boot disk."""
    disk = config.boot_disk
    if disk is None:
        raise UpstreamFailure(zone, "the VM has no disk to boot from: its template has none")
    drives: list[Drive] = []
    if not config.has_cloud_init_drive:
        slot = config.free_cloud_init_slot
        if slot is None:
            raise UpstreamFailure(zone, "the VM has no free IDE slot for its cloud-init drive")
        drives.append(cloud_init_drive(slot, plan.storage))
    limits = plan.storage_profile.disk_limits()
    if limits:
        drives.append(disk.with_options({option: str(value) for option, value in limits.items()}))
    change = ConfigChange(
        cores=plan.compute.vcpus,
        sockets=1,
        memory_mib=plan.compute.memory_mib,
        cpu=plan.compute.cpu_type,
        guest_agent=True,
        ciuser=plan.image.default_user,
        ssh_keys=tuple(plan.ssh_keys),
        cicustom=cicustom,
        drives=tuple(drives),
    )
    return change, disk


def configure(api: ZoneApi, plan: Plan, node: str, vmid: int, cicustom: str | None) -> Drive:
    """Profile, cloud-init and I/O limits in one config write; answers the boot disk."""
    change, disk = configuration(plan, api.config(node, vmid), cicustom, api.zone)
    api.set_config(node, vmid, change)
    return disk


def nic_change(ctx: Context, api: ZoneApi, plan: Plan, resources: ClusterResources) -> ConfigChange:
    """The NICs the VM gets (``netN`` on its networks' VNets, ``ipconfigN`` with the next free address of
    each, the networks' resolvers, and the address tags with the VM's own), decided under the VDC's lock
    from the address tags of the zone's VMs. A VM that names no network gets one on the VDC's default
    network, made now if the VDC has none there yet and its quota of networks has room."""
    zone = next(z for z in catalog.zones(ctx) if z.id == api.zone)
    mine = [n for v in api.sdn.vnets() if (n := Network.from_vnet(api.zone, v)) and n.vdc == plan.vdc.id]
    requests = plan.networks if plan.networks is not None else (NicRequest(DEFAULT_NETWORK),)
    if plan.networks is None and not any(n.is_default for n in mine):
        mine.append(networks.default_network(ctx, zone, plan.vdc))
    chosen: list[tuple[Network, str | None]] = []
    for position, request in enumerate(requests):
        network = nics.resolve(request, mine, api.zone, f"networks[{position}].network")
        if any(network is n for n, _ in chosen):
            raise ValidationFailed(f"networks[{position}].network", f"network {network.id} is named twice")
        chosen.append((network, request.address))
    addresses = nics.allocate(chosen, resources, "networks")
    cards = [nics.nic_on(network, address) for (network, _), address in zip(chosen, addresses, strict=True)]
    return ConfigChange(
        nets=tuple((index, device) for index, (device, _ip) in enumerate(cards)),
        ipconfigs=tuple((index, ip) for index, (_device, ip) in enumerate(cards)),
        nameservers=nics.nameservers(n for n, _ in chosen) or None,
        tags=(
            *plan.tags,
            *(address_tag(n.vnet, a) for (n, _), a in zip(chosen, addresses, strict=True)),
        ),
    )


def discard(api: ZoneApi, plan: Plan, vmid: int, error: FlexPlaneError, *, tagged: bool) -> None:
    """Remove a VM whose create failed; the error then says whether that worked."""
    try:
        guest = api.resources("vm").vm(vmid)
        if guest is None:
            note = "nothing was left behind"
        else:
            vm = VirtualMachine.from_guest(api.zone, guest)
            destroy(api, vm)
            note = f"the half-made VM {vm.id} was removed"
    except FlexPlaneError as cleanup:
        logger.warning("create of %s: VM %s/%s could not be removed: %s", plan.name, api.zone, vmid, cleanup)
        where = (
            f"it stays in VDC {plan.vdc.id}, tagged, for you to delete once its host is back"
            if tagged
            else f"the VDC's next create removes it once its host is back (it sits untagged in pool "
            f"{plan.vdc.pool})"
        )
        note = f"the half-made VM {api.zone}/{vmid} could not be removed ({cleanup.message}): {where}"
    error.message = f"{error.message}; {note}"
    error.args = (error.message,)


def meta_data(instance_id: str, hostname: str) -> str:
    """A ``Bootstrap``'s cloud-init meta data (the ``meta=`` snippet): YAML of two plain scalars (a uuid and
    a DNS label need no quoting)."""
    return f"instance-id: {instance_id}\nlocal-hostname: {hostname}\n"


def _write_cloud_init(api: ZoneApi, plan: Plan, node: str, vmid: int) -> str | None:
    """Write the VM's cloud-init snippets: the plan's user data as vendor data, and a ``Bootstrap``'s user and
    meta data (instance-id: the clone's SMBIOS uuid); the VM's ``cicustom`` (None without any)."""
    parts: list[str] = []
    if plan.bootstrap is not None:
        uuid = api.config(node, vmid).smbios_uuid
        if uuid is None:
            raise UpstreamFailure(api.zone, f"the clone {api.zone}/{vmid} has no SMBIOS uuid (smbios1)")
        user = plan.bootstrap.user_data.encode("utf-8")
        meta = meta_data(uuid, plan.bootstrap.hostname).encode("utf-8")
        parts.append(f"user={api.write_snippet(node, snippet_name(plan.vdc.id, vmid, 'user'), user)}")
        parts.append(f"meta={api.write_snippet(node, snippet_name(plan.vdc.id, vmid, 'meta'), meta)}")
    if plan.user_data is not None:
        vendor = plan.user_data.encode("utf-8")
        parts.append(f"vendor={api.write_snippet(node, vendor_snippet_name(plan.vdc.id, vmid), vendor)}")
    return ",".join(parts) or None


def leftovers(zones: Mapping[str, ClusterResources], vdc: Vdc) -> list[tuple[str, Guest]]:
    """The VMs failed creates of the VDC may have left behind: in the VDC's pool without the VDC's tag
    (they failed before they were tagged), and not being cloned."""
    return [
        (zone, guest)
        for zone, resources in zones.items()
        for guest in resources.vms
        if guest.pool == vdc.pool and vdc_in(guest.tags) is None and guest.lock != "clone"
    ]


def _remove_leftovers(ctx: Context, now: Mapping[str, ClusterResources], vdc: Vdc) -> None:
    """Remove what failed creates of the VDC could not remove at the time (their host was away).

    Of the ``leftovers``, only those whose description is flex.plane's for this VDC: a VM an admin
    moved into the pool by hand is never touched. Called under the VDC's lock, so no create of the VDC
    is between its clone and its tag. What still cannot be removed is left for the next time.
    """
    for zone, guest in leftovers(now, vdc):
        vm = VirtualMachine.from_guest(zone, guest)
        try:
            api = inventory.zone_api(ctx, zone)
            if api.config(vm.host, vm.vmid).description.startswith(marker(vdc)):
                destroy(api, vm)
                logger.info("removed %s, left over by a failed create in VDC %s", vm.id, vdc.id)
        except FlexPlaneError as exc:
            logger.warning("leftover %s of VDC %s not removed yet: %s", vm.id, vdc.id, exc.message)


def _likely(
    ctx: Context, planned: Plan, hosts: list[Host], seen: Mapping[str, ClusterResources]
) -> Placement:
    """Where the VM will likely go, before the lock: in the zone named, from that zone read now; across
    the VDC's zones when none was, from the request's inventory (one read per zone, in parallel), the
    zones that did not answer skipped and named."""
    if planned.zone is not None:
        return place(planned.placement_request, hosts, inventory.zone_api(ctx, planned.zone).resources())
    unanswered = {u.where: f"it did not answer ({u.message})" for u in ctx.unavailable}
    return place_in_zones(planned.placement_requests, hosts, seen, unanswered)


def create_vm(ctx: Context, spec: CreateVm) -> Created:
    """Create, configure and start a VM; or return the one an earlier create of it made."""
    planned = plan(ctx, spec)
    seen = inventory.zone_resources(ctx).resources
    earlier = existing(seen, planned)
    if earlier is not None:
        return returned(ctx, planned, earlier)
    # Fail fast, without the lock, when even this read shows the quota full (it is checked again under it).
    vdcs.check_quota(ctx, planned.vdc, planned.usage, current=usage(seen.values(), planned.vdc))

    hosts = [h for h in catalog.hosts(ctx) if f"{h.zone}/{h.node}" not in spec.avoid_hosts]
    # Make the template ready on the likely host before taking the lock: a first download takes long.
    likely = _likely(ctx, planned, hosts, seen)
    assert likely.host is not None  # placement raises NoCapacity otherwise
    api = inventory.zone_api(ctx, likely.zone)
    template = ensure_template(ctx, api, planned.in_zone(likely.zone), likely.host)

    with vdc_lock(ctx, planned.vdc) as held:
        # Every zone of the VDC, read now: all must answer, as its VMs in each count against its quota.
        now = everything_now(ctx, planned.vdc)
        earlier = existing(now, planned)
        if earlier is None:
            made = _clone_tagged(ctx, held, planned, hosts, now, likely, template)
    if earlier is not None:  # made by a create that ended, or that died half-way: completed outside the lock
        return returned(ctx, planned, earlier)
    task = finish(ctx, made.api, made.planned, made.vm)
    return Created(reread(made.api, made.vm), task, made.placement, created=True)


@dataclass(frozen=True)
class _Cloned:
    """A new VM, cloned and tagged (``fp-state-creating``), where placement put it."""

    api: ZoneApi
    planned: Plan
    vm: VirtualMachine
    placement: Placement


def _clone_tagged(
    ctx: Context,
    held: HeldLock,
    planned: Plan,
    hosts: list[Host],
    now: Mapping[str, ClusterResources],
    likely: Placement,
    template: Template,
) -> _Cloned:
    """Under the VDC's lock: the quota checked against ``now``, the host chosen, the clone made, and
    tagged with its NICs' addresses before the lock is released: from then on the VM is found, counted and
    listed, and its addresses are taken. It is being created until ``finish`` takes fp-state-creating away."""
    _remove_leftovers(ctx, now, planned.vdc)
    current = usage(now.values(), planned.vdc) + reserved_for_clusters(ctx, planned.vdc, now, planned.name)
    vdcs.check_quota(ctx, planned.vdc, planned.usage, current=current)
    placement = place_in_zones(planned.placement_requests, hosts, now)
    assert placement.host is not None
    node = placement.host
    api = inventory.zone_api(ctx, placement.zone)
    planned = planned.in_zone(placement.zone)
    if template.node != node or placement.zone != likely.zone:
        template = ensure_template(ctx, api, planned, node)
    cards = nic_change(ctx, api, planned, now[placement.zone])
    tags = (*(cards.tags or ()), CREATING_TAG)
    still_held(held, planned.vdc)
    vmid, _clone_task = clone(api, planned, template, node)
    try:
        api.set_config(node, vmid, replace(cards, tags=tags))
    except FlexPlaneError as exc:
        discard(api, planned, vmid, exc, tagged=False)
        raise
    vm = VirtualMachine.made(api.zone, vmid, planned.name, node, planned.vdc.id, list(tags))
    return _Cloned(api, planned, vm, placement)


def returned(ctx: Context, planned: Plan, vm: VirtualMachine) -> Created:
    """An earlier create's VM, for its retry: as it is once that create ended; completed first when that
    create died half-way (``fp-state-creating``), so that a retry never answers a half-made VM as made."""
    if not vm.creating:
        return Created(vm, None, None, created=False)
    logger.info("completing %s, whose create in VDC %s did not end", vm.id, planned.vdc.id)
    api = inventory.zone_api(ctx, vm.zone)
    try:
        task = finish(ctx, api, planned.in_zone(vm.zone), vm, discard_on_failure=False)
    except FlexPlaneError as exc:
        exc.message = f"{exc.message}; {vm.id} stays as it is, not started: retry the create to complete it"
        exc.args = (exc.message,)
        raise
    return Created(reread(api, vm), task, None, created=False)


def finish(
    ctx: Context, api: ZoneApi, planned: Plan, vm: VirtualMachine, *, discard_on_failure: bool = True
) -> Task | None:
    """A tagged clone made what ``planned`` asks: its cloud-init, configuration, disk and firewall, then
    started, then ``fp-state-creating`` taken away (last: only a VM made whole loses it). Each step is
    idempotent, so a retry runs them again on a VM a dead create left at any point. One that runs
    already got past its firewall and its start: only the tag is left to take.

    What fails removes the VM (the create's error says whether that worked), so that the next retry starts
    anew; except for a retry completing a VM (``discard_on_failure`` False): its create may be alive and
    only slow (the client gave up waiting), and a VM it is still making is not taken from under it."""
    node, vmid = vm.host, vm.vmid
    task: Task | None = None
    try:
        if not vm.running:
            cicustom = _write_cloud_init(api, planned, node, vmid)
            disk = configure(api, planned, node, vmid, cicustom)
            grow(api, planned.vdc.id, node, vmid, disk.key, disk.size, planned.disk_gb)
            # Its firewall as its security groups say, before it first runs.
            security_groups.realise_new_vm(ctx, api, planned.vdc, node, vmid, planned.security_groups)
            try:
                task = power(api, vm, "start", f"starting VM {planned.name}", TASK_TIMEOUT)
            except FlexPlaneError:
                # A retry that overlapped its create (not dead, only slow): both started it, one lost.
                if not reread(api, vm).running:
                    raise
        # Its tags as it was tagged (the clone's, or what /cluster/resources showed the retry), less one.
        api.set_config(node, vmid, ConfigChange(tags=tuple(t for t in vm.tags if t != CREATING_TAG)))
    except FlexPlaneError as exc:
        if not discard_on_failure:
            raise
        discard(api, planned, vmid, exc, tagged=True)
        # Also when the write itself failed: one that timed out may have written the file.
        parts = [*(("user", "meta") if planned.bootstrap else ())]
        parts += ["vendor"] if planned.user_data is not None else []
        if parts and (problem := remove_snippets(api, planned.vdc.id, node, vmid, parts)):
            exc.message = f"{exc.message}; {problem}"
            exc.args = (exc.message,)
        raise
    return task
