from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import KubernetesClusterFields


class KubernetesCluster(BaseModel):
    kubernetes_cluster: Optional["KubernetesClusterKubernetesCluster"] = Field(alias="kubernetesCluster")


class KubernetesClusterKubernetesCluster(KubernetesClusterFields):
    pass


KubernetesCluster.model_rebuild()
