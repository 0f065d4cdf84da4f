from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import ServiceAccountErrorCode
from .fragments import ServiceAccountFields


class RevokeServiceAccount(BaseModel):
    revoke_service_account: Optional["RevokeServiceAccountRevokeServiceAccount"] = Field(
        alias="revokeServiceAccount"
    )


class RevokeServiceAccountRevokeServiceAccount(BaseModel):
    service_account: Optional["RevokeServiceAccountRevokeServiceAccountServiceAccount"] = Field(
        alias="serviceAccount"
    )
    errors: list["RevokeServiceAccountRevokeServiceAccountErrors"]


class RevokeServiceAccountRevokeServiceAccountServiceAccount(ServiceAccountFields):
    pass


class RevokeServiceAccountRevokeServiceAccountErrors(BaseModel):
    field: str | None
    message: str
    code: ServiceAccountErrorCode


RevokeServiceAccount.model_rebuild()
RevokeServiceAccountRevokeServiceAccount.model_rebuild()
