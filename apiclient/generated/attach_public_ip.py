from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import PublicIpFields


class AttachPublicIp(BaseModel):
    attach_public_ip: Optional["AttachPublicIpAttachPublicIp"] = Field(alias="attachPublicIp")


class AttachPublicIpAttachPublicIp(BaseModel):
    public_ip: Optional["AttachPublicIpAttachPublicIpPublicIp"] = Field(alias="publicIp")
    errors: list["AttachPublicIpAttachPublicIpErrors"]


class AttachPublicIpAttachPublicIpPublicIp(PublicIpFields):
    pass


class AttachPublicIpAttachPublicIpErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


AttachPublicIp.model_rebuild()
AttachPublicIpAttachPublicIp.model_rebuild()
