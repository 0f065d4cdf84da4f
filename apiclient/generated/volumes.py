from .base_model import BaseModel
from .fragments import VolumeFields


class Volumes(BaseModel):
    volumes: list["VolumesVolumes"]


class VolumesVolumes(VolumeFields):
    pass


Volumes.model_rebuild()
