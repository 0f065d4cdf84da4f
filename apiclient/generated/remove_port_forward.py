from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import PublicIpFields


class RemovePortForward(BaseModel):
    remove_port_forward: Optional["RemovePortForwardRemovePortForward"] = Field(alias="removePortForward")


class RemovePortForwardRemovePortForward(BaseModel):
    public_ip: Optional["RemovePortForwardRemovePortForwardPublicIp"] = Field(alias="publicIp")
    errors: list["RemovePortForwardRemovePortForwardErrors"]


class RemovePortForwardRemovePortForwardPublicIp(PublicIpFields):
    pass


class RemovePortForwardRemovePortForwardErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


RemovePortForward.model_rebuild()
RemovePortForwardRemovePortForward.model_rebuild()
