from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import VolumeSnapshotFields


class VolumeSnapshot(BaseModel):
    volume_snapshot: Optional["VolumeSnapshotVolumeSnapshot"] = Field(alias="volumeSnapshot")


class VolumeSnapshotVolumeSnapshot(VolumeSnapshotFields):
    pass


VolumeSnapshot.model_rebuild()
