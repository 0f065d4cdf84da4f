from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import KubernetesClusterErrorCode
from .fragments import KubernetesClusterFields


class CreateKubernetesCluster(BaseModel):
    create_kubernetes_cluster: Optional["CreateKubernetesClusterCreateKubernetesCluster"] = Field(
        alias="createKubernetesCluster"
    )


class CreateKubernetesClusterCreateKubernetesCluster(BaseModel):
    kubernetes_cluster: Optional["CreateKubernetesClusterCreateKubernetesClusterKubernetesCluster"] = Field(
        alias="kubernetesCluster"
    )
    errors: list["CreateKubernetesClusterCreateKubernetesClusterErrors"]


class CreateKubernetesClusterCreateKubernetesClusterKubernetesCluster(KubernetesClusterFields):
    pass


class CreateKubernetesClusterCreateKubernetesClusterErrors(BaseModel):
    field: str | None
    message: str
    code: KubernetesClusterErrorCode


CreateKubernetesCluster.model_rebuild()
CreateKubernetesClusterCreateKubernetesCluster.model_rebuild()
