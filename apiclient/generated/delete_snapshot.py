from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import SnapshotErrorFields, TaskFields


class DeleteSnapshot(BaseModel):
    delete_snapshot: Optional["DeleteSnapshotDeleteSnapshot"] = Field(alias="deleteSnapshot")


class DeleteSnapshotDeleteSnapshot(BaseModel):
    task: Optional["DeleteSnapshotDeleteSnapshotTask"]
    message: str | None
    errors: list["DeleteSnapshotDeleteSnapshotErrors"]


class DeleteSnapshotDeleteSnapshotTask(TaskFields):
    pass


class DeleteSnapshotDeleteSnapshotErrors(SnapshotErrorFields):
    pass


DeleteSnapshot.model_rebuild()
DeleteSnapshotDeleteSnapshot.model_rebuild()
