from pydantic import Field

from .base_model import BaseModel


class KubernetesVersions(BaseModel):
    kubernetes_versions: list["KubernetesVersionsKubernetesVersions"] = Field(alias="kubernetesVersions")


class KubernetesVersionsKubernetesVersions(BaseModel):
    version: str
    image: str


KubernetesVersions.model_rebuild()
