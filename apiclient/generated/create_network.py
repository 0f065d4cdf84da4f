from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import NetworkErrorCode
from .fragments import NetworkFields


class CreateNetwork(BaseModel):
    create_network: Optional["CreateNetworkCreateNetwork"] = Field(alias="createNetwork")


class CreateNetworkCreateNetwork(BaseModel):
    network: Optional["CreateNetworkCreateNetworkNetwork"]
    errors: list["CreateNetworkCreateNetworkErrors"]


class CreateNetworkCreateNetworkNetwork(NetworkFields):
    pass


class CreateNetworkCreateNetworkErrors(BaseModel):
    field: str | None
    message: str
    code: NetworkErrorCode


CreateNetwork.model_rebuild()
CreateNetworkCreateNetwork.model_rebuild()
