from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import SecurityGroupErrorCode
from .fragments import SecurityGroupFields


class CreateSecurityGroup(BaseModel):
    create_security_group: Optional["CreateSecurityGroupCreateSecurityGroup"] = Field(
        alias="createSecurityGroup"
    )


class CreateSecurityGroupCreateSecurityGroup(BaseModel):
    security_group: Optional["CreateSecurityGroupCreateSecurityGroupSecurityGroup"] = Field(
        alias="securityGroup"
    )
    errors: list["CreateSecurityGroupCreateSecurityGroupErrors"]


class CreateSecurityGroupCreateSecurityGroupSecurityGroup(SecurityGroupFields):
    pass


class CreateSecurityGroupCreateSecurityGroupErrors(BaseModel):
    field: str | None
    message: str
    code: SecurityGroupErrorCode


CreateSecurityGroup.model_rebuild()
CreateSecurityGroupCreateSecurityGroup.model_rebuild()
