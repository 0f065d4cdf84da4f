from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import SecurityGroupErrorCode


class AssignSecurityGroups(BaseModel):
    assign_security_groups: Optional["AssignSecurityGroupsAssignSecurityGroups"] = Field(
        alias="assignSecurityGroups"
    )


class AssignSecurityGroupsAssignSecurityGroups(BaseModel):
    security_groups: list[str] | None = Field(alias="securityGroups")
    errors: list["AssignSecurityGroupsAssignSecurityGroupsErrors"]


class AssignSecurityGroupsAssignSecurityGroupsErrors(BaseModel):
    field: str | None
    message: str
    code: SecurityGroupErrorCode


AssignSecurityGroups.model_rebuild()
AssignSecurityGroupsAssignSecurityGroups.model_rebuild()
