from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields, VolumeFields


class ResizeVolume(BaseModel):
    resize_volume: Optional["ResizeVolumeResizeVolume"] = Field(alias="resizeVolume")


class ResizeVolumeResizeVolume(BaseModel):
    volume: Optional["ResizeVolumeResizeVolumeVolume"]
    task: Optional["ResizeVolumeResizeVolumeTask"]
    errors: list["ResizeVolumeResizeVolumeErrors"]


class ResizeVolumeResizeVolumeVolume(VolumeFields):
    pass


class ResizeVolumeResizeVolumeTask(TaskFields):
    pass


class ResizeVolumeResizeVolumeErrors(VolumeErrorFields):
    pass


ResizeVolume.model_rebuild()
ResizeVolumeResizeVolume.model_rebuild()
