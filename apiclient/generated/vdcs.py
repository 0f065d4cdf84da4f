from .base_model import BaseModel
from .fragments import VdcFields


class Vdcs(BaseModel):
    vdcs: list["VdcsVdcs"]


class VdcsVdcs(VdcFields):
    pass


Vdcs.model_rebuild()
