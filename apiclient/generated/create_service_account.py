from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import ServiceAccountErrorCode
from .fragments import ServiceAccountFields


class CreateServiceAccount(BaseModel):
    create_service_account: Optional["CreateServiceAccountCreateServiceAccount"] = Field(
        alias="createServiceAccount"
    )


class CreateServiceAccountCreateServiceAccount(BaseModel):
    service_account: Optional["CreateServiceAccountCreateServiceAccountServiceAccount"] = Field(
        alias="serviceAccount"
    )
    key: str | None
    errors: list["CreateServiceAccountCreateServiceAccountErrors"]


class CreateServiceAccountCreateServiceAccountServiceAccount(ServiceAccountFields):
    pass


class CreateServiceAccountCreateServiceAccountErrors(BaseModel):
    field: str | None
    message: str
    code: ServiceAccountErrorCode


CreateServiceAccount.model_rebuild()
CreateServiceAccountCreateServiceAccount.model_rebuild()
