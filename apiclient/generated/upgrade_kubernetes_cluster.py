from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import KubernetesClusterErrorCode
from .fragments import KubernetesClusterFields


class UpgradeKubernetesCluster(BaseModel):
    upgrade_kubernetes_cluster: Optional["UpgradeKubernetesClusterUpgradeKubernetesCluster"] = Field(
        alias="upgradeKubernetesCluster"
    )


class UpgradeKubernetesClusterUpgradeKubernetesCluster(BaseModel):
    kubernetes_cluster: Optional["UpgradeKubernetesClusterUpgradeKubernetesClusterKubernetesCluster"] = Field(
        alias="kubernetesCluster"
    )
    errors: list["UpgradeKubernetesClusterUpgradeKubernetesClusterErrors"]


class UpgradeKubernetesClusterUpgradeKubernetesClusterKubernetesCluster(KubernetesClusterFields):
    pass


class UpgradeKubernetesClusterUpgradeKubernetesClusterErrors(BaseModel):
    field: str | None
    message: str
    code: KubernetesClusterErrorCode


UpgradeKubernetesCluster.model_rebuild()
UpgradeKubernetesClusterUpgradeKubernetesCluster.model_rebuild()
