from pydantic import Field

from .base_model import BaseModel


class VolumeStorageProfiles(BaseModel):
    storage_profiles: list["VolumeStorageProfilesStorageProfiles"] = Field(alias="storageProfiles")


class VolumeStorageProfilesStorageProfiles(BaseModel):
    name: str
    min_gb: int = Field(alias="minGb")
    max_gb: int = Field(alias="maxGb")


VolumeStorageProfiles.model_rebuild()
