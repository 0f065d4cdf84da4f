from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields


class DeleteVolumeSnapshot(BaseModel):
    delete_volume_snapshot: Optional["DeleteVolumeSnapshotDeleteVolumeSnapshot"] = Field(
        alias="deleteVolumeSnapshot"
    )


class DeleteVolumeSnapshotDeleteVolumeSnapshot(BaseModel):
    snapshot: Optional["DeleteVolumeSnapshotDeleteVolumeSnapshotSnapshot"]
    task: Optional["DeleteVolumeSnapshotDeleteVolumeSnapshotTask"]
    errors: list["DeleteVolumeSnapshotDeleteVolumeSnapshotErrors"]


class DeleteVolumeSnapshotDeleteVolumeSnapshotSnapshot(BaseModel):
    id: str


class DeleteVolumeSnapshotDeleteVolumeSnapshotTask(TaskFields):
    pass


class DeleteVolumeSnapshotDeleteVolumeSnapshotErrors(VolumeErrorFields):
    pass


DeleteVolumeSnapshot.model_rebuild()
DeleteVolumeSnapshotDeleteVolumeSnapshot.model_rebuild()
