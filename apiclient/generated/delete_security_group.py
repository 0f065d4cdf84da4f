from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import SecurityGroupErrorCode
from .fragments import SecurityGroupFields


class DeleteSecurityGroup(BaseModel):
    delete_security_group: Optional["DeleteSecurityGroupDeleteSecurityGroup"] = Field(
        alias="deleteSecurityGroup"
    )


class DeleteSecurityGroupDeleteSecurityGroup(BaseModel):
    security_group: Optional["DeleteSecurityGroupDeleteSecurityGroupSecurityGroup"] = Field(
        alias="securityGroup"
    )
    errors: list["DeleteSecurityGroupDeleteSecurityGroupErrors"]


class DeleteSecurityGroupDeleteSecurityGroupSecurityGroup(SecurityGroupFields):
    pass


class DeleteSecurityGroupDeleteSecurityGroupErrors(BaseModel):
    field: str | None
    message: str
    code: SecurityGroupErrorCode


DeleteSecurityGroup.model_rebuild()
DeleteSecurityGroupDeleteSecurityGroup.model_rebuild()
