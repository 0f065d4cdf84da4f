from pydantic import Field

from .base_model import BaseModel
from .fragments import SecurityGroupFields


class SecurityGroups(BaseModel):
    security_groups: list["SecurityGroupsSecurityGroups"] = Field(alias="securityGroups")


class SecurityGroupsSecurityGroups(SecurityGroupFields):
    pass


SecurityGroups.model_rebuild()
