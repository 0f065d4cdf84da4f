"""A guest's Proxmox snapshots in flex.plane's terms: list, take, roll back, delete; and whether its
storage can take one at all.

The calls are ``/nodes/{node}/qemu/{vmid}/snapshot`` (list, create), ``.../snapshot/{snapname}``
(delete) and ``.../snapshot/{snapname}/rollback``; each write answers a task. They go through the zone's
agents as ``ZoneApi``'s own calls do (reads fail over, writes are sent once, a held lock is a
``Conflict``): this module is a sibling of ``zone``, in the same package, and uses its transport.

Whether a guest can be snapshotted is Proxmox's ``has_feature('snapshot')``: every disk (CD-ROMs and
the cloud-init drive aside) lives on a storage type that snapshots its volumes (LVM-thin, ZFS, Ceph
RBD, Btrfs), or is a qcow2 file on a file storage (directory, NFS, CIFS, ...). A raw file on a
directory cannot; neither can thick LVM nor iSCSI LUNs. :func:`snapshot_blockers` applies that rule
to the guest's config and the zone's storage types (``/cluster/resources?type=storage``).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.sources.proxmox.zone import ZoneApi, _upid, with_set
from orchestrator.sources.qemu_config import QemuConfig

# Storage types whose volumes snapshot whatever their format (PVE::Storage's plugins with 'snapshot').
SNAPSHOT_TYPES = frozenset({"lvmthin", "zfspool", "zfs", "rbd", "btrfs"})
# File storages: a qcow2 volume on them snapshots (inside the file), a raw one does not.
FILE_TYPES = frozenset({"dir", "nfs", "cifs", "glusterfs", "cephfs"})
# The name of the "You are here!" entry of a snapshot listing: not a snapshot.
CURRENT = "current"


def _time(value: Any) -> datetime.datetime | None:
    try:
        seconds = int(value or 0)
    except (TypeError, ValueError):
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC) if seconds > 0 else None


@dataclass(frozen=True)
class SnapshotEntry:
    """One snapshot of a guest, as Proxmox lists it."""

    name: str
    description: str
    taken_at: datetime.datetime | None
    # Whether it holds the guest's memory (taken of a running guest with its RAM): a rollback resumes it.
    vmstate: bool
    parent: str | None
    # ``prepare`` while it is being taken, ``delete`` while it is being removed; None once whole.
    state: str | None

    @classmethod
    def parse(cls, item: Mapping[str, Any]) -> SnapshotEntry:
        return cls(
            name=str(item["name"]),
            description=str(item.get("description") or "").strip(),
            taken_at=_time(item.get("snaptime")),
            vmstate=bool(int(item.get("vmstate") or 0)),
            parent=str(item["parent"]) if item.get("parent") else None,
            state=str(item["snapstate"]) if item.get("snapstate") else None,
        )


@dataclass(frozen=True)
class Snapshots:
    """A guest's snapshots, oldest first, and the one its present state descends from."""

    entries: tuple[SnapshotEntry, ...]
    # The snapshot the guest's present state was taken after or rolled back to (None: none).
    current_parent: str | None

    @classmethod
    def parse(cls, listing: Any) -> Snapshots:
        entries: list[SnapshotEntry] = []
        parent: str | None = None
        for item in listing or []:
            if not isinstance(item, Mapping) or not item.get("name"):
                continue
            if item["name"] == CURRENT:
                parent = str(item["parent"]) if item.get("parent") else None
                continue
            entries.append(SnapshotEntry.parse(item))
        entries.sort(key=lambda e: (e.taken_at or datetime.datetime.max.replace(tzinfo=datetime.UTC), e.name))
        return cls(tuple(entries), parent)

    def get(self, name: str) -> SnapshotEntry | None:
        return next((entry for entry in self.entries if entry.name == name), None)


def storage_types(api: ZoneApi) -> dict[str, str]:
    """Each storage of the zone -> its type (``lvmthin``, ``dir``, ...), from ``/cluster/resources``."""
    types: dict[str, str] = {}
    for item in api._read("/cluster/resources", {"type": "storage"}) or []:
        if isinstance(item, Mapping) and item.get("storage") and item.get("plugintype"):
            types[str(item["storage"])] = str(item["plugintype"])
    return types


def snapshot_blockers(config: QemuConfig, types: Mapping[str, str]) -> list[str]:
    """The guest's disks that cannot be snapshotted, each as ``<key> (<volume> on <type> storage)``;
    empty when Proxmox would take a snapshot. A storage of unknown type is not held against it."""
    blockers: list[str] = []
    for drive in config.drives:
        if not drive.is_disk or ":" not in drive.volume:
            continue
        storage, volume = drive.volume.split(":", 1)
        kind = types.get(storage)
        if kind is None or kind in SNAPSHOT_TYPES:
            continue
        qcow2 = volume.endswith(".qcow2") or drive.option("format") == "qcow2"
        if kind in FILE_TYPES and qcow2:
            continue
        blockers.append(f"{drive.key} ({drive.volume} on {kind} storage {storage})")
    return blockers


def list_snapshots(api: ZoneApi, node: str, vmid: int) -> Snapshots:
    return Snapshots.parse(api._read(f"/nodes/{node}/qemu/{vmid}/snapshot", node=node))


def take(api: ZoneApi, node: str, vmid: int, name: str, description: str, *, vmstate: bool) -> str | None:
    """Take snapshot ``name`` (with the guest's memory when ``vmstate``: a running guest only); the task."""
    params = with_set({"snapname": name}, {"description": description, "vmstate": vmstate})
    return _upid(api._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/snapshot", params))


def rollback(api: ZoneApi, node: str, vmid: int, name: str, *, start: bool) -> str | None:
    """Roll the guest back to snapshot ``name`` (Proxmox stops a running guest first; it starts it again
    afterwards when ``start``, or when the snapshot holds its memory); answers the task."""
    params = {"start": True} if start else None
    return _upid(api._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/snapshot/{name}/rollback", params))


def delete(api: ZoneApi, node: str, vmid: int, name: str) -> str | None:
    """Delete snapshot ``name`` (its data merges into its children); answers the task."""
    return _upid(api._write(node, "DELETE", f"/nodes/{node}/qemu/{vmid}/snapshot/{name}"))
