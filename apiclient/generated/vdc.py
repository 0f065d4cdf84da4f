from typing import Optional

from .base_model import BaseModel
from .fragments import VdcFields


class Vdc(BaseModel):
    vdc: Optional["VdcVdc"]


class VdcVdc(VdcFields):
    pass


Vdc.model_rebuild()
