from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import KubernetesClusterErrorCode
from .fragments import KubernetesClusterFields


class ScaleNodePool(BaseModel):
    scale_node_pool: Optional["ScaleNodePoolScaleNodePool"] = Field(alias="scaleNodePool")


class ScaleNodePoolScaleNodePool(BaseModel):
    kubernetes_cluster: Optional["ScaleNodePoolScaleNodePoolKubernetesCluster"] = Field(
        alias="kubernetesCluster"
    )
    errors: list["ScaleNodePoolScaleNodePoolErrors"]


class ScaleNodePoolScaleNodePoolKubernetesCluster(KubernetesClusterFields):
    pass


class ScaleNodePoolScaleNodePoolErrors(BaseModel):
    field: str | None
    message: str
    code: KubernetesClusterErrorCode


ScaleNodePool.model_rebuild()
ScaleNodePoolScaleNodePool.model_rebuild()
