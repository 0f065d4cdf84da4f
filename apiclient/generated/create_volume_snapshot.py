from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields, VolumeSnapshotFields


class CreateVolumeSnapshot(BaseModel):
    create_volume_snapshot: Optional["CreateVolumeSnapshotCreateVolumeSnapshot"] = Field(
        alias="createVolumeSnapshot"
    )


class CreateVolumeSnapshotCreateVolumeSnapshot(BaseModel):
    snapshot: Optional["CreateVolumeSnapshotCreateVolumeSnapshotSnapshot"]
    task: Optional["CreateVolumeSnapshotCreateVolumeSnapshotTask"]
    errors: list["CreateVolumeSnapshotCreateVolumeSnapshotErrors"]


class CreateVolumeSnapshotCreateVolumeSnapshotSnapshot(VolumeSnapshotFields):
    pass


class CreateVolumeSnapshotCreateVolumeSnapshotTask(TaskFields):
    pass


class CreateVolumeSnapshotCreateVolumeSnapshotErrors(VolumeErrorFields):
    pass


CreateVolumeSnapshot.model_rebuild()
CreateVolumeSnapshotCreateVolumeSnapshot.model_rebuild()
