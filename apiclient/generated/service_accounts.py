from pydantic import Field

from .base_model import BaseModel
from .fragments import ServiceAccountFields


class ServiceAccounts(BaseModel):
    service_accounts: list["ServiceAccountsServiceAccounts"] = Field(alias="serviceAccounts")


class ServiceAccountsServiceAccounts(ServiceAccountFields):
    pass


ServiceAccounts.model_rebuild()
