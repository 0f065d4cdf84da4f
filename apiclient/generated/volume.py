from typing import Optional

from .base_model import BaseModel
from .fragments import VolumeFields


class Volume(BaseModel):
    volume: Optional["VolumeVolume"]


class VolumeVolume(VolumeFields):
    pass


Volume.model_rebuild()
