from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import PublicIpFields


class DetachPublicIp(BaseModel):
    detach_public_ip: Optional["DetachPublicIpDetachPublicIp"] = Field(alias="detachPublicIp")


class DetachPublicIpDetachPublicIp(BaseModel):
    public_ip: Optional["DetachPublicIpDetachPublicIpPublicIp"] = Field(alias="publicIp")
    errors: list["DetachPublicIpDetachPublicIpErrors"]


class DetachPublicIpDetachPublicIpPublicIp(PublicIpFields):
    pass


class DetachPublicIpDetachPublicIpErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


DetachPublicIp.model_rebuild()
DetachPublicIpDetachPublicIp.model_rebuild()
