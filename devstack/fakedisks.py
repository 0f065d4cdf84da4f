"""Disk rules fakepve leaves out, closed for the harness (``devstack.fakezones.HarnessPve``).

- **A disk moved to another VM** (``POST /nodes/{node}/qemu/{vmid}/move_disk`` with ``target-vmid``,
  Proxmox's "reassign"): fakepve answers it from the schema alone and moves nothing. As qemu-server's
  ``move_vm_disk`` does, this checks both VMs (the same node, neither a template, neither locked, the
  disk there and not a CD drive, the target's key free, no snapshot of the source using the volume, the
  source running only for an ``unused<n>`` disk), then in a ``qmmove`` task holding both configs' locks
  renames the volume to the target's next free ``vm-<target>-disk-<n>``, removes the disk from the source
  and writes it, options kept, under the target's key (hot-plugged into a running target; its ``size=``
  recorded, as a config update does for an existing volume; an ``unused<n>`` is the volume alone). A move to
  another storage (``storage``) is not played: flex.plane never asks for one.
- **A disk detached** (a config's ``delete`` naming a drive): Proxmox keeps the volume as the VM's next
  ``unused<n>`` (qemu-server's ``vmconfig_delete_or_detach_drive``), and on a running VM unplugs it at
  once (its default ``hotplug`` includes ``disk``); fakepve forgets the volume, or holds the delete as
  pending. Deleting an ``unused<n>`` frees its volume, as Proxmox does.
- **A disk attached to a running VM** (a config write of a new ``scsi<n>``/``virtio<n>`` naming an
  existing volume) is hot-plugged at once, where fakepve holds it as pending.
"""

from __future__ import annotations

import re
from typing import Any

from fakepve import PveError, TaskError
from fakepve.lxc import format_size
from fakepve.qemu import join_drive, split_drive, volume_ref

_DRIVE = re.compile(r"(?:scsi|virtio|sata|ide)[0-9]+")
_HOTPLUG_BUS = re.compile(r"(?:scsi|virtio)[0-9]+")
_UNUSED = re.compile(r"unused[0-9]+")
MAX_UNUSED = 256


def _is_disk(value: Any) -> bool:
    """A drive value holding a volume (not a CD drive, not cloud-init's drive)."""
    volume, props = split_drive(str(value))
    return bool(volume) and props.get("media") != "cdrom" and volume not in ("none", "cdrom")


def _next_unused(config: dict[str, Any]) -> str:
    for n in range(MAX_UNUSED):
        if f"unused{n}" not in config:
            return f"unused{n}"
    raise PveError(500, "Too many unused volumes - please delete them first.")


class DiskRules:
    """A mixin placed before ``FakePve`` in the harness's bases."""

    # ------------------------------------------------------------------ detach and hot-plug

    async def _apply_config(self, vm: Any, user: str, p: dict[str, Any]) -> None:
        deletes = [k for k in str(p.get("delete") or "").split(",") if k]
        detached = {k: vm.config[k] for k in deletes if _DRIVE.fullmatch(k) and _is_disk(vm.config.get(k))}
        freed = [vm.config[k] for k in deletes if _UNUSED.fullmatch(k) and k in vm.config]
        plugged = [k for k in p if _HOTPLUG_BUS.fullmatch(k) and k not in vm.config]
        await super()._apply_config(vm, user, p)  # type: ignore[misc]  # FakePve's, next in the MRO
        for key, value in detached.items():
            vm.pending.pop(key, None)
            vm.config.pop(key, None)
            vm.config[_next_unused(vm.config)] = split_drive(str(value))[0]
        for volume in freed:
            self._qm_free(volume)  # type: ignore[attr-defined]
        if vm.status == "running":
            for key in plugged:
                if key in vm.pending and vm.pending[key] is not None:
                    vm.config[key] = vm.pending.pop(key)

    # ------------------------------------------------------------------ move to another VM

    def _routes_qemu_move_disk(self) -> list[tuple[str, str, Any]]:
        return [("POST", "/nodes/{node}/qemu/{vmid}/move_disk", self._qemu_move_disk)]

    def _reassign_checked(self, v: dict[str, Any]) -> tuple[Any, Any, str, str]:
        """Both VMs and the keys, as qemu-server's checks find them; its error otherwise."""
        source = self.find(v["node"], v["vmid"])  # type: ignore[attr-defined]
        target_id = int(v["target-vmid"])
        disk = str(v["disk"])
        target_disk = str(v.get("target-disk") or disk)
        if target_id == source.vmid:
            raise PveError(
                500,
                "Moving a disk to the same VM is not possible. Did you mean to move the disk to a "
                "different storage?",
            )
        target = self.vm(target_id)  # type: ignore[attr-defined]
        if target is None:
            raise PveError(500, f"could not find target VM {target_id}")
        if target.node != source.node:
            raise PveError(500, f"Both VMs need to be on the same node ({source.node} != {target.node})")
        for vm in (source, target):
            self._check_lock(vm)  # type: ignore[attr-defined]
        if source.config.get("template") or target.config.get("template"):
            raise PveError(500, "Can't move disks from or to template VMs")
        value = source.config.get(disk)
        if value is None:
            raise PveError(500, f"Disk '{disk}' for VM '{source.vmid}' does not exist")
        if target_disk in target.config or target.pending.get(target_disk) is not None:
            raise PveError(500, f"Target disk key '{target_disk}' is already in use for VM '{target_id}'")
        volume, props = split_drive(str(value))
        if props.get("media") == "cdrom":
            raise PveError(500, "CD drive contents can't be moved to another VM")
        if any(split_drive(str(x))[0] == volume for snap in source.snapshots.values() for x in snap.values()):
            raise PveError(500, "Can't move disk used by a snapshot to another VM")
        if source.status == "running" and not _UNUSED.fullmatch(disk):
            raise PveError(
                500, "Cannot move disk to another VM while the source VM is running - detach first"
            )
        return source, target, disk, target_disk

    async def _qemu_move_disk(self, v: dict[str, Any], user: str) -> Any:
        if v.get("target-vmid") is None:
            raise PveError(
                501, "the harness plays a disk's move to another VM (target-vmid), not to a storage"
            )
        source, target, disk, target_disk = self._reassign_checked(v)
        for vm in (source, target):
            self._qm_perm(user, vm.vmid, None, "VM.Config.Disk")  # type: ignore[attr-defined]

        async def body() -> str:
            await self.acquire(target, "qmmove")  # type: ignore[attr-defined]
            try:
                source_now, target_now, _, _ = self._reassign_checked(v)
                volume, props = split_drive(str(source_now.config[disk]))
                moved = self._rename_to(volume, target_now.vmid)
                del source_now.config[disk]
                if _UNUSED.fullmatch(target_disk):
                    target_now.config[target_disk] = moved
                else:  # written as a config update does: an existing volume gets its size recorded
                    size = self._size_of(moved)
                    if "size" not in props and size:
                        props["size"] = format_size(size)
                    target_now.config[target_disk] = join_drive(moved, props)
            except PveError as exc:
                raise TaskError(exc.message) from exc
            finally:
                self.release(target, "qmmove")  # type: ignore[attr-defined]
            return f"moving disk '{disk}' from VM '{source_now.vmid}' to '{target_now.vmid}'"

        return await self.task(source.node, "qmmove", source.vmid, user, body, vm=source)  # type: ignore[attr-defined]

    def _size_of(self, volume: str) -> int:
        """The volume's size in bytes as its storage has it (0: unknown)."""
        sid, name = volume_ref(volume)
        return int(self._volumes(sid).get(name, {}).get("size") or 0)  # type: ignore[attr-defined]

    def _rename_to(self, volume: str, owner: int) -> str:
        """The volume renamed to ``owner``'s next free disk name (PVE::Storage::rename_volume)."""
        sid, name = volume_ref(volume)
        store = self._store(sid)  # type: ignore[attr-defined]
        fmt = store.get("volumes", {}).get(name, {}).get("format") or self._ext_format(name)  # type: ignore[attr-defined]
        new_name, _ = self._volume_name(store, owner, fmt, self._qm_free_name(sid, owner, fmt))  # type: ignore[attr-defined]
        volumes = store.setdefault("volumes", {})
        if name in volumes:
            entry = volumes.pop(name)
            volumes[new_name] = {**entry, "vmid": owner}
        return f"{sid}:{new_name}"
