from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TaskFields, VolumeErrorFields, VolumeFields


class CreateVolume(BaseModel):
    create_volume: Optional["CreateVolumeCreateVolume"] = Field(alias="createVolume")


class CreateVolumeCreateVolume(BaseModel):
    volume: Optional["CreateVolumeCreateVolumeVolume"]
    task: Optional["CreateVolumeCreateVolumeTask"]
    errors: list["CreateVolumeCreateVolumeErrors"]


class CreateVolumeCreateVolumeVolume(VolumeFields):
    pass


class CreateVolumeCreateVolumeTask(TaskFields):
    pass


class CreateVolumeCreateVolumeErrors(VolumeErrorFields):
    pass


CreateVolume.model_rebuild()
CreateVolumeCreateVolume.model_rebuild()
