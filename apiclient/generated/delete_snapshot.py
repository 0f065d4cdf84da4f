from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import SnapshotErrorCode
from .fragments import TaskFields


class DeleteSnapshot(BaseModel):
    delete_snapshot: Optional["DeleteSnapshotDeleteSnapshot"] = Field(alias="deleteSnapshot")


class DeleteSnapshotDeleteSnapshot(BaseModel):
    task: Optional["DeleteSnapshotDeleteSnapshotTask"]
    message: str | None
    errors: list["DeleteSnapshotDeleteSnapshotErrors"]


class DeleteSnapshotDeleteSnapshotTask(TaskFields):
    pass


class DeleteSnapshotDeleteSnapshotErrors(BaseModel):
    field: str | None
    message: str
    code: SnapshotErrorCode


DeleteSnapshot.model_rebuild()
DeleteSnapshotDeleteSnapshot.model_rebuild()
