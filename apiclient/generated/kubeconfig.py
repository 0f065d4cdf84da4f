from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class Kubeconfig(BaseModel):
    kubeconfig: Optional["KubeconfigKubeconfig"]


class KubeconfigKubeconfig(BaseModel):
    cluster: str
    endpoint: str
    kubeconfig: str
    expires_at: datetime = Field(alias="expiresAt")


Kubeconfig.model_rebuild()
