from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields, VolumeFields


class CreateVolumeFromSnapshot(BaseModel):
    create_volume_from_snapshot: Optional["CreateVolumeFromSnapshotCreateVolumeFromSnapshot"] = Field(
        alias="createVolumeFromSnapshot"
    )


class CreateVolumeFromSnapshotCreateVolumeFromSnapshot(BaseModel):
    volume: Optional["CreateVolumeFromSnapshotCreateVolumeFromSnapshotVolume"]
    task: Optional["CreateVolumeFromSnapshotCreateVolumeFromSnapshotTask"]
    errors: list["CreateVolumeFromSnapshotCreateVolumeFromSnapshotErrors"]


class CreateVolumeFromSnapshotCreateVolumeFromSnapshotVolume(VolumeFields):
    pass


class CreateVolumeFromSnapshotCreateVolumeFromSnapshotTask(TaskFields):
    pass


class CreateVolumeFromSnapshotCreateVolumeFromSnapshotErrors(VolumeErrorFields):
    pass


CreateVolumeFromSnapshot.model_rebuild()
CreateVolumeFromSnapshotCreateVolumeFromSnapshot.model_rebuild()
