"""Snapshot rules fakepve leaves out, closed for the harness (``devstack.fakezones.HarnessPve``).

fakepve keeps QEMU snapshots (list, take, roll back, delete, with the config lock and Proxmox's
``snapshot feature is not available`` for disks that cannot snapshot), but its rollback to a snapshot
that holds the guest's memory leaves the guest stopped. Proxmox resumes it from that memory
(qemu-server's snapshot_rollback starts the VM with the saved state; its API documents "VMs will be
automatically started if the snapshot includes RAM"), and so does this.
"""

from __future__ import annotations

from typing import Any


class SnapshotRules:
    """A mixin placed before ``FakePve`` in the harness's bases."""

    async def _qm_rollback(self, v: dict[str, Any], user: str) -> Any:
        vm = self.find(v["node"], v["vmid"])  # type: ignore[attr-defined]  # FakePve's, next in the MRO
        snap = vm.snapshots.get(v.get("snapname"))
        if snap is not None and snap.get("vmstate") and not v.get("start"):
            v = {**v, "start": True}  # the saved memory is resumed: the guest runs again
        return await super()._qm_rollback(v, user)  # type: ignore[misc]  # FakePve's, next in the MRO
