from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import SecurityGroupErrorCode
from .fragments import SecurityGroupFields


class UpdateSecurityGroup(BaseModel):
    update_security_group: Optional["UpdateSecurityGroupUpdateSecurityGroup"] = Field(
        alias="updateSecurityGroup"
    )


class UpdateSecurityGroupUpdateSecurityGroup(BaseModel):
    security_group: Optional["UpdateSecurityGroupUpdateSecurityGroupSecurityGroup"] = Field(
        alias="securityGroup"
    )
    errors: list["UpdateSecurityGroupUpdateSecurityGroupErrors"]


class UpdateSecurityGroupUpdateSecurityGroupSecurityGroup(SecurityGroupFields):
    pass


class UpdateSecurityGroupUpdateSecurityGroupErrors(BaseModel):
    field: str | None
    message: str
    code: SecurityGroupErrorCode


UpdateSecurityGroup.model_rebuild()
UpdateSecurityGroupUpdateSecurityGroup.model_rebuild()
