from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import NetworkErrorCode
from .fragments import NetworkFields


class DeleteNetwork(BaseModel):
    delete_network: Optional["DeleteNetworkDeleteNetwork"] = Field(alias="deleteNetwork")


class DeleteNetworkDeleteNetwork(BaseModel):
    network: Optional["DeleteNetworkDeleteNetworkNetwork"]
    errors: list["DeleteNetworkDeleteNetworkErrors"]


class DeleteNetworkDeleteNetworkNetwork(NetworkFields):
    pass


class DeleteNetworkDeleteNetworkErrors(BaseModel):
    field: str | None
    message: str
    code: NetworkErrorCode


DeleteNetwork.model_rebuild()
DeleteNetworkDeleteNetwork.model_rebuild()
