"""What the volume pages let a user do, and the GraphQL mutation behind each (the parity test reads
:data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

from portal.actions import Action, registry

CREATE = Action("volume.create", "createVolume")
ATTACH = Action("volume.attach", "attachVolume")
DETACH = Action("volume.detach", "detachVolume")
RESIZE = Action("volume.resize", "resizeVolume")
DELETE = Action("volume.delete", "deleteVolume")
# Its snapshots, which outlive it.
SNAPSHOT = Action("volume.snapshot", "createVolumeSnapshot")
SNAPSHOT_DELETE = Action("volume-snapshot.delete", "deleteVolumeSnapshot")
FROM_SNAPSHOT = Action("volume-snapshot.new-volume", "createVolumeFromSnapshot")

MUTATIONS: dict[str, str] = registry(
    CREATE, ATTACH, DETACH, RESIZE, DELETE, SNAPSHOT, SNAPSHOT_DELETE, FROM_SNAPSHOT
)
