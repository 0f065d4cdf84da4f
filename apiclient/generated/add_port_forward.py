from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import PublicIpFields


class AddPortForward(BaseModel):
    add_port_forward: Optional["AddPortForwardAddPortForward"] = Field(alias="addPortForward")


class AddPortForwardAddPortForward(BaseModel):
    public_ip: Optional["AddPortForwardAddPortForwardPublicIp"] = Field(alias="publicIp")
    errors: list["AddPortForwardAddPortForwardErrors"]


class AddPortForwardAddPortForwardPublicIp(PublicIpFields):
    pass


class AddPortForwardAddPortForwardErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


AddPortForward.model_rebuild()
AddPortForwardAddPortForward.model_rebuild()
