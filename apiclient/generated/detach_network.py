from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import NetworkErrorCode


class DetachNetwork(BaseModel):
    detach_network: Optional["DetachNetworkDetachNetwork"] = Field(alias="detachNetwork")


class DetachNetworkDetachNetwork(BaseModel):
    errors: list["DetachNetworkDetachNetworkErrors"]


class DetachNetworkDetachNetworkErrors(BaseModel):
    field: str | None
    message: str
    code: NetworkErrorCode


DetachNetwork.model_rebuild()
DetachNetworkDetachNetwork.model_rebuild()
