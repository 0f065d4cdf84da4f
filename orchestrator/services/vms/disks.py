"""A VM's volumes, as disks: a volume's disk moved between its holder and the VM it is attached to
(``orchestrator.models.volumes``), and the volumes given back before a VM is deleted.

The primitives of ``orchestrator.services.volumes`` that a VM's own life needs too (a VM deleted gives its
volumes back first: its own disks go with it, never a volume), here below both.
"""

from __future__ import annotations

from orchestrator.errors import Conflict, FlexPlaneError
from orchestrator.models.tasks import Task
from orchestrator.models.vms import VirtualMachine
from orchestrator.models.volumes import ATTACHED_TAG_PREFIX, IN_USE, Volume
from orchestrator.services import tasks
from orchestrator.sources.proxmox import ClusterResources, ConfigChange, Drive, QemuConfig, ZoneApi

TASK_TIMEOUT = 120.0
HOLDER_DISK = "scsi0"


def label_holder(api: ZoneApi, volume: Volume, node: str, *, attached: int | None) -> None:
    """The holder's tags with ``fp-on-<vmid>`` for the VM it is attached to (None: none), and its disk, when
    it has it, with the volume's serial (a detach through ``unused<n>`` drops a disk's options, and one that
    stopped before writing it back left it without): one read of its config, one write."""
    config = api.config(node, volume.vmid)
    tags = [t for t in config.tags if not t.startswith(ATTACHED_TAG_PREFIX)]
    if attached is not None:
        tags.append(f"{ATTACHED_TAG_PREFIX}{attached}")
    held = next((d for d in config.drives if d.key == HOLDER_DISK), None)
    drives: tuple[Drive, ...] = ()
    if held is not None and held.option("serial") != volume.serial:
        drives = (held.with_options({"serial": volume.serial}),)
    api.set_config(node, volume.vmid, ConfigChange(tags=tuple(tags), drives=drives))


def give_back(api: ZoneApi, vm: VirtualMachine, volume: Volume) -> Task:
    """Move the volume's disk from ``vm`` back to its holder as ``scsi0``; its serial and the tag's removal
    last, in one write."""
    if volume.node != vm.host:  # the VM moved since (a host drained): its holder follows, it has no disk
        answer = api.migrate(volume.node, volume.vmid, vm.host, online=False, with_local_disks=False)
        tasks.run(
            api, answer, volume.vdc, f"moving volume {volume.name}'s holder to host {vm.host}", TASK_TIMEOUT
        )
    config = api.config(vm.host, vm.vmid)
    drive = drive_of(config, volume)
    if drive is None:
        raise Conflict(f"VM {vm.name} has no disk of volume {volume.name} (serial {volume.serial})")
    key = drive.key
    if vm.running and not key.startswith("unused"):
        api.set_config(vm.host, vm.vmid, ConfigChange(delete=(key,)))  # unplugged: now an unused<n>
        unplugged = next((d for d in api.config(vm.host, vm.vmid).drives if d.volume == drive.volume), None)
        if unplugged is None or not unplugged.key.startswith("unused"):
            raise Conflict(f"VM {vm.name} did not release volume {volume.name}'s disk; retry the detach")
        key = unplugged.key
    answer = api.move_disk(vm.host, vm.vmid, key, volume.vmid, HOLDER_DISK)
    task = tasks.run(
        api, answer, volume.vdc, f"detaching volume {volume.name} from VM {vm.name}", TASK_TIMEOUT
    )
    label_holder(api, volume, vm.host, attached=None)
    return task


def drive_of(config: QemuConfig, volume: Volume) -> Drive | None:
    """The VM's drive that is the volume: the one of its serial; else the VM's only ``unused<n>``, which
    keeps no options (a detach from a running VM unplugged it and stopped before moving it back: flex.plane
    leaves no other unused disk on a VM)."""
    for drive in config.drives:
        if drive.option("serial") == volume.serial:
            return drive
    unused = [d for d in config.drives if d.bus == "unused"]
    return unused[0] if len(unused) == 1 else None


def release_from(api: ZoneApi, vm: VirtualMachine, resources: ClusterResources) -> list[str]:
    """Give every volume attached to the stopped VM ``vm`` back to its holder, before the VM is
    destroyed; the names of those given back. A volume that cannot be is an error: the VM is kept."""
    given: list[str] = []
    for guest in resources.volumes:
        volume = Volume.from_guest(api.zone, guest)
        if volume.status == IN_USE and volume.attached_vmid == vm.vmid:
            try:
                give_back(api, vm, volume)
            except FlexPlaneError as exc:
                exc.message = f"VM {vm.name} keeps volume {volume.name}, not detached: {exc.message}"
                exc.args = (exc.message,)
                raise
            given.append(volume.name)
    return given
