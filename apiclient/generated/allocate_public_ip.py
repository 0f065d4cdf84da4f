from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import PublicIpFields


class AllocatePublicIp(BaseModel):
    allocate_public_ip: Optional["AllocatePublicIpAllocatePublicIp"] = Field(alias="allocatePublicIp")


class AllocatePublicIpAllocatePublicIp(BaseModel):
    public_ip: Optional["AllocatePublicIpAllocatePublicIpPublicIp"] = Field(alias="publicIp")
    errors: list["AllocatePublicIpAllocatePublicIpErrors"]


class AllocatePublicIpAllocatePublicIpPublicIp(PublicIpFields):
    pass


class AllocatePublicIpAllocatePublicIpErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


AllocatePublicIp.model_rebuild()
AllocatePublicIpAllocatePublicIp.model_rebuild()
