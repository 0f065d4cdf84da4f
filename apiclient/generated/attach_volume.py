from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields, VolumeFields


class AttachVolume(BaseModel):
    attach_volume: Optional["AttachVolumeAttachVolume"] = Field(alias="attachVolume")


class AttachVolumeAttachVolume(BaseModel):
    volume: Optional["AttachVolumeAttachVolumeVolume"]
    task: Optional["AttachVolumeAttachVolumeTask"]
    errors: list["AttachVolumeAttachVolumeErrors"]


class AttachVolumeAttachVolumeVolume(VolumeFields):
    pass


class AttachVolumeAttachVolumeTask(TaskFields):
    pass


class AttachVolumeAttachVolumeErrors(VolumeErrorFields):
    pass


AttachVolume.model_rebuild()
AttachVolumeAttachVolume.model_rebuild()
