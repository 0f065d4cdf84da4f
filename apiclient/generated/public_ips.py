from pydantic import Field

from .base_model import BaseModel
from .fragments import PublicIpFields


class PublicIps(BaseModel):
    public_ips: list["PublicIpsPublicIps"] = Field(alias="publicIps")


class PublicIpsPublicIps(PublicIpFields):
    pass


PublicIps.model_rebuild()
