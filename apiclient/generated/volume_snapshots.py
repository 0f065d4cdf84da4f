from pydantic import Field

from .base_model import BaseModel
from .fragments import VolumeSnapshotFields


class VolumeSnapshots(BaseModel):
    volume_snapshots: list["VolumeSnapshotsVolumeSnapshots"] = Field(alias="volumeSnapshots")


class VolumeSnapshotsVolumeSnapshots(VolumeSnapshotFields):
    pass


VolumeSnapshots.model_rebuild()
