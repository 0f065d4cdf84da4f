from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import KubernetesClusterErrorCode


class DeleteKubernetesCluster(BaseModel):
    delete_kubernetes_cluster: Optional["DeleteKubernetesClusterDeleteKubernetesCluster"] = Field(
        alias="deleteKubernetesCluster"
    )


class DeleteKubernetesClusterDeleteKubernetesCluster(BaseModel):
    errors: list["DeleteKubernetesClusterDeleteKubernetesClusterErrors"]


class DeleteKubernetesClusterDeleteKubernetesClusterErrors(BaseModel):
    field: str | None
    message: str
    code: KubernetesClusterErrorCode


DeleteKubernetesCluster.model_rebuild()
DeleteKubernetesClusterDeleteKubernetesCluster.model_rebuild()
