from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import PublicIpFields


class ReleasePublicIp(BaseModel):
    release_public_ip: Optional["ReleasePublicIpReleasePublicIp"] = Field(alias="releasePublicIp")


class ReleasePublicIpReleasePublicIp(BaseModel):
    public_ip: Optional["ReleasePublicIpReleasePublicIpPublicIp"] = Field(alias="publicIp")
    errors: list["ReleasePublicIpReleasePublicIpErrors"]


class ReleasePublicIpReleasePublicIpPublicIp(PublicIpFields):
    pass


class ReleasePublicIpReleasePublicIpErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


ReleasePublicIp.model_rebuild()
ReleasePublicIpReleasePublicIp.model_rebuild()
