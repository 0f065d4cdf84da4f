from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields


class DeleteVolume(BaseModel):
    delete_volume: Optional["DeleteVolumeDeleteVolume"] = Field(alias="deleteVolume")


class DeleteVolumeDeleteVolume(BaseModel):
    volume: Optional["DeleteVolumeDeleteVolumeVolume"]
    task: Optional["DeleteVolumeDeleteVolumeTask"]
    errors: list["DeleteVolumeDeleteVolumeErrors"]


class DeleteVolumeDeleteVolumeVolume(BaseModel):
    id: str


class DeleteVolumeDeleteVolumeTask(TaskFields):
    pass


class DeleteVolumeDeleteVolumeErrors(VolumeErrorFields):
    pass


DeleteVolume.model_rebuild()
DeleteVolumeDeleteVolume.model_rebuild()
