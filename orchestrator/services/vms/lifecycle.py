"""A VM's life after its create: power (start, stop, shutdown, reboot), resize, delete; and the steps a
create shares with them (power, grow a disk, destroy, remove its cloud-init snippet)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, UpstreamFailure, ValidationFailed
from orchestrator.models import ComputeProfile, Usage
from orchestrator.models.security_groups import groups_in
from orchestrator.models.tasks import Task
from orchestrator.models.vms import (
    COMPUTE_PROFILE_TAG_PREFIX,
    GIB,
    REQUEST_TAG_PREFIX,
    VirtualMachine,
    is_tag,
    render_tags,
    request_tag,
    requested_in,
)
from orchestrator.models.volumes import Volume
from orchestrator.services import catalog, security_groups, tasks, vdcs
from orchestrator.services.clusters.quota import reserved_for_clusters
from orchestrator.services.context import Context
from orchestrator.services.vms.disks import release_from
from orchestrator.services.vms.listing import VM, locate, reread
from orchestrator.services.vms.plan import (
    BOOTSTRAP_TAG,
    allowed_compute_profile,
    everything_now,
    still_held,
    usage,
    vdc_lock,
)
from orchestrator.sources.proxmox import ConfigChange, ZoneApi

logger = logging.getLogger(__name__)

# How long a request follows Proxmox's tasks before it answers with the task still running (seconds).
TASK_TIMEOUT = 120.0
# A graceful shutdown may take its whole timeout; the answer waits at most this long for it.
SHUTDOWN_WAIT = 30.0
DEFAULT_SHUTDOWN_TIMEOUT = 60
MAX_SHUTDOWN_TIMEOUT = 3600


@dataclass(frozen=True)
class Outcome:
    """A VM after an operation, and the Proxmox task that did it (None when there was nothing to do)."""

    vm: VirtualMachine
    task: Task | None


# ------------------------------------------------------------------------------------------ steps


def power(
    api: ZoneApi, vm: VirtualMachine, action: str, doing: str, wait: float, *, timeout: int | None = None
) -> Task:
    answer = api.power(vm.host, vm.vmid, action, timeout=timeout)
    return tasks.run(api, answer, vm.vdc, doing, wait)


def grow(
    api: ZoneApi, vdc: str, node: str, vmid: int, disk: str, size_bytes: int, want_gb: int
) -> Task | None:
    """Grow the disk to ``want_gb`` GiB (Proxmox never shrinks one); nothing to do when it is that big."""
    if size_bytes >= want_gb * GIB:
        return None
    answer = api.resize_disk(node, vmid, disk, want_gb * GIB)
    if answer is None:  # Proxmox releases before 8 resize synchronously
        return None
    return tasks.run(api, answer, vdc, f"growing the disk of VM {vmid} to {want_gb} GiB", TASK_TIMEOUT)


def destroy(api: ZoneApi, vm: VirtualMachine) -> Task:
    """Stop (if need be) and destroy the VM with its disks; it leaves its pool and nothing remains."""
    if vm.status != "stopped":
        power(api, vm, "stop", f"stopping VM {vm.name}", TASK_TIMEOUT)
    answer = api.destroy(vm.host, vm.vmid)
    return tasks.run(api, answer, vm.vdc, f"deleting VM {vm.name}", TASK_TIMEOUT)


def snippet_name(vdc: str, vmid: int, part: str) -> str:
    """The cloud-init snippet holding one part of a VM's cloud-init data (``vendor``: its tenant's user
    data; ``user`` and ``meta``: a ``Bootstrap``'s), on the VM's node."""
    return f"fp-{vdc}-{vmid}-{part}.yaml"


def vendor_snippet_name(vdc: str, vmid: int) -> str:
    """The cloud-init snippet holding a VM's vendor data (its tenant's user data), on the VM's node."""
    return snippet_name(vdc, vmid, "vendor")


def remove_snippets(api: ZoneApi, vdc: str, node: str, vmid: int, parts: Iterable[str]) -> str | None:
    """Remove a VM's cloud-init snippets of those parts (there may be none); a problem to report, or None."""
    problems: list[str] = []
    for part in parts:
        name = snippet_name(vdc, vmid, part)
        try:
            api.delete_snippet(node, name)
        except FlexPlaneError as exc:
            logger.warning("snippet %s on %s/%s not removed: %s", name, api.zone, node, exc.message)
            problems.append(
                f"its cloud-init snippet {name} on host {node} could not be removed ({exc.message})"
            )
    return "; ".join(problems) or None


def remove_vendor_data(api: ZoneApi, vdc: str, node: str, vmid: int) -> str | None:
    """Remove a VM's vendor-data snippet (there may be none); a problem to report, or None."""
    return remove_snippets(api, vdc, node, vmid, ("vendor",))


def snippet_parts(tags: Iterable[str]) -> tuple[str, ...]:
    """The parts of cloud-init data a VM of these tags may have in snippets: vendor data (any VM), user and
    meta data (a VM made with a ``Bootstrap``)."""
    return ("vendor", "user", "meta") if BOOTSTRAP_TAG in tags else ("vendor",)


# ------------------------------------------------------------------------------------------ power


def start_vm(ctx: Context, ident: str) -> Outcome:
    """Start a stopped VM; a running one is left as it is."""
    api, vm = locate(ctx, ident)
    if vm.running:
        return Outcome(vm, None)
    task = power(api, vm, "start", f"starting VM {vm.name}", TASK_TIMEOUT)
    return Outcome(reread(api, vm), task)


def stop_vm(ctx: Context, ident: str) -> Outcome:
    """Stop a VM at once (power off); a stopped one is left as it is."""
    api, vm = locate(ctx, ident)
    if vm.status == "stopped":
        return Outcome(vm, None)
    task = power(api, vm, "stop", f"stopping VM {vm.name}", TASK_TIMEOUT)
    return Outcome(reread(api, vm), task)


def shutdown_vm(ctx: Context, ident: str, timeout: int | None = None) -> Outcome:
    """Ask the guest OS to power off, giving up after ``timeout`` seconds (the VM keeps running then).

    The answer waits for the shutdown at most ``SHUTDOWN_WAIT`` seconds; beyond that its task is
    returned still running, to be followed with ``task(id)``.
    """
    seconds = DEFAULT_SHUTDOWN_TIMEOUT if timeout is None else timeout
    if not 1 <= seconds <= MAX_SHUTDOWN_TIMEOUT:
        raise ValidationFailed("timeout", f"the timeout must be between 1 and {MAX_SHUTDOWN_TIMEOUT} seconds")
    api, vm = locate(ctx, ident)
    if vm.status == "stopped":
        return Outcome(vm, None)
    wait = min(seconds + 5.0, SHUTDOWN_WAIT)
    task = power(api, vm, "shutdown", f"shutting down VM {vm.name}", wait, timeout=seconds)
    return Outcome(reread(api, vm), task)


def reboot_vm(ctx: Context, ident: str) -> Outcome:
    """Reboot a running VM through its guest OS (it picks up pending configuration changes)."""
    api, vm = locate(ctx, ident)
    if not vm.running:
        raise Conflict(f"VM {vm.name} is {vm.status}, not running: start it instead")
    task = power(api, vm, "reboot", f"rebooting VM {vm.name}", TASK_TIMEOUT)
    return Outcome(reread(api, vm), task)


def delete_vm(ctx: Context, ident: str) -> Outcome:
    """Stop the VM and destroy it with its disks and its cloud-init snippet; it leaves its VDC's pool.
    Volumes attached to it are given back to their holders first, once it is stopped: they outlive it.
    ``vm`` is its last state."""
    api, vm = locate(ctx, ident)
    resources = api.resources("vm")
    if any(Volume.from_guest(api.zone, g).attached_vmid == vm.vmid for g in resources.volumes):
        if vm.status != "stopped":
            power(api, vm, "stop", f"stopping VM {vm.name}", TASK_TIMEOUT)
            vm.status = "stopped"
        release_from(api, vm, resources)
    task = destroy(api, vm)
    if not task.running:  # while the destroy may still fail, the VM keeps its cloud-init data
        remove_snippets(api, vm.vdc, vm.host, vm.vmid, snippet_parts(vm.tags))
        _forget_addresses(ctx, vm)
    vm.status = "deleted"
    return Outcome(vm, task)


def _forget_addresses(ctx: Context, vm: VirtualMachine) -> None:
    """Best effort: the VM's address leaves the IP sets of the VMs whose rules name its security groups
    (the next change of those groups brings whatever could not be updated now in line)."""
    try:
        security_groups.forget_vm(ctx, vdcs.get_vdc(ctx, vm.vdc), groups_in(vm.tags))
    except FlexPlaneError as exc:
        logger.warning("security groups after deleting %s: %s", vm.id, exc.message)


# ------------------------------------------------------------------------------------------ resize


@dataclass(frozen=True)
class Resize:
    """What a resize changes: the compute profile (None: kept), the disk's new size (None: kept), and
    what that adds to the VDC's usage."""

    compute: ComputeProfile | None
    grow_gb: int | None
    delta: Usage

    @property
    def nothing(self) -> bool:
        return self.compute is None and self.grow_gb is None


def resize_of(vm: VirtualMachine, compute: ComputeProfile | None, disk_gb: int | None) -> Resize:
    """The change a resize makes to ``vm`` as it is now: ``ValidationFailed`` for a disk that would
    shrink, ``Conflict`` for a new profile while the VM runs."""
    current_gb = vm.disk_bytes / GIB
    if disk_gb is not None and disk_gb < current_gb:
        raise ValidationFailed(
            "disk_gb", f"disks only grow: this one has {current_gb:g} GiB, it cannot shrink to {disk_gb}"
        )
    change_profile = compute is not None and (
        compute.name != vm.compute_profile or compute.vcpus != vm.cores or compute.memory_mib != vm.memory_mb
    )
    if change_profile and vm.status != "stopped":
        raise Conflict(f"VM {vm.name} is {vm.status}: stop it before moving it to another compute profile")
    new = compute if change_profile else None
    grow_gb = disk_gb if disk_gb is not None and disk_gb > current_gb else None
    delta = Usage(
        vcpus=max(0, new.vcpus - vm.cores) if new else 0,
        memory_mib=max(0, new.memory_mib - vm.memory_mb) if new else 0,
        disk_gb=max(0, grow_gb - math.ceil(current_gb)) if grow_gb else 0,
    )
    return Resize(new, grow_gb, delta)


def profile_change(vm: VirtualMachine, compute: ComputeProfile) -> ConfigChange:
    """The config change that moves the VM to the compute profile (its tags with it: the profile's, and
    the size asked for, which the quota counts: the new profile's, with the disk it had asked for)."""
    tags = [t for t in vm.tags if not t.startswith((COMPUTE_PROFILE_TAG_PREFIX, REQUEST_TAG_PREFIX))]
    if is_tag(COMPUTE_PROFILE_TAG_PREFIX + compute.name):
        tags.append(COMPUTE_PROFILE_TAG_PREFIX + compute.name)
    asked = requested_in(render_tags(vm.tags))
    disk_gb = max(math.ceil(vm.disk_gb), asked[2] if asked else 0)
    tags.append(request_tag(compute.vcpus, compute.memory_mib, disk_gb))
    return ConfigChange(
        cores=compute.vcpus,
        sockets=1,
        memory_mib=compute.memory_mib,
        cpu=compute.cpu_type,
        tags=tuple(tags),
    )


def resize_vm(
    ctx: Context, ident: str, compute_profile: str | None = None, disk_gb: int | None = None
) -> Outcome:
    """Move a VM to another compute profile (it must be stopped) and/or grow its disk (never shrink).

    Checked against the VDC's quota under its lock, as a create is.
    """
    if not compute_profile and disk_gb is None:
        raise ValidationFailed("compute_profile", "give a compute profile, a disk size, or both")
    api, vm = locate(ctx, ident)
    vdc = vdcs.get_vdc(ctx, vm.vdc)
    compute: ComputeProfile | None = None
    if compute_profile:
        compute = allowed_compute_profile(ctx, vdc, compute_profile, "compute_profile")
    if disk_gb is not None:
        _check_disk_size(ctx, vm, disk_gb)

    with vdc_lock(ctx, vdc) as held:
        now = everything_now(ctx, vdc)  # read again, under the lock
        guest = now[vm.zone].vm(vm.vmid) if vm.zone in now else None
        if guest is None:
            raise NotFound(VM, ident)
        vm = VirtualMachine.from_guest(vm.zone, guest)
        change = resize_of(vm, compute, disk_gb)
        if change.nothing:
            return Outcome(vm, None)
        vdcs.check_quota(
            ctx, vdc, change.delta, current=usage(now.values(), vdc) + reserved_for_clusters(ctx, vdc, now)
        )
        still_held(held, vdc)
        task: Task | None = None
        if change.compute is not None:
            answer = api.change_config(vm.host, vm.vmid, profile_change(vm, change.compute))
            task = tasks.run(
                api,
                answer,
                vm.vdc,
                f"moving VM {vm.name} to compute profile {change.compute.name}",
                TASK_TIMEOUT,
            )
        if change.grow_gb is not None:
            disk = api.config(vm.host, vm.vmid).boot_disk
            if disk is None:
                raise UpstreamFailure(api.zone, "the VM has no disk to boot from: its template has none")
            task = grow(api, vm.vdc, vm.host, vm.vmid, disk.key, disk.size, change.grow_gb) or task
    return Outcome(reread(api, vm), task)


def _check_disk_size(ctx: Context, vm: VirtualMachine, disk_gb: int) -> None:
    """The new size against the limits of the VM's storage profile (when it still is in the catalog)."""
    if disk_gb < 1:
        raise ValidationFailed("disk_gb", "the disk size is in GiB and at least 1")
    if not vm.storage_profile:
        return
    try:
        profile = catalog.storage_profile(ctx, vm.storage_profile)
    except NotFound:
        return  # removed from the catalog since: the VM keeps working, only the floor (its size) applies
    if disk_gb > profile.max_gb:
        raise ValidationFailed(
            "disk_gb", f"storage profile {profile.name} allows disks of at most {profile.max_gb} GiB"
        )
