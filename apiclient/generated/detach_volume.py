from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields, VolumeFields


class DetachVolume(BaseModel):
    detach_volume: Optional["DetachVolumeDetachVolume"] = Field(alias="detachVolume")


class DetachVolumeDetachVolume(BaseModel):
    volume: Optional["DetachVolumeDetachVolumeVolume"]
    task: Optional["DetachVolumeDetachVolumeTask"]
    errors: list["DetachVolumeDetachVolumeErrors"]


class DetachVolumeDetachVolumeVolume(VolumeFields):
    pass


class DetachVolumeDetachVolumeTask(TaskFields):
    pass


class DetachVolumeDetachVolumeErrors(VolumeErrorFields):
    pass


DetachVolume.model_rebuild()
DetachVolumeDetachVolume.model_rebuild()
