from pydantic import Field

from .base_model import BaseModel
from .fragments import KubernetesClusterFields


class KubernetesClusters(BaseModel):
    kubernetes_clusters: list["KubernetesClustersKubernetesClusters"] = Field(alias="kubernetesClusters")


class KubernetesClustersKubernetesClusters(KubernetesClusterFields):
    pass


KubernetesClusters.model_rebuild()
