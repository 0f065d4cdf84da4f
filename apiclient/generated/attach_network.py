from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import NetworkErrorCode


class AttachNetwork(BaseModel):
    attach_network: Optional["AttachNetworkAttachNetwork"] = Field(alias="attachNetwork")


class AttachNetworkAttachNetwork(BaseModel):
    errors: list["AttachNetworkAttachNetworkErrors"]


class AttachNetworkAttachNetworkErrors(BaseModel):
    field: str | None
    message: str
    code: NetworkErrorCode


AttachNetwork.model_rebuild()
AttachNetworkAttachNetwork.model_rebuild()
