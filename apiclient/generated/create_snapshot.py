from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import SnapshotErrorFields, SnapshotFields, TaskFields


class CreateSnapshot(BaseModel):
    create_snapshot: Optional["CreateSnapshotCreateSnapshot"] = Field(alias="createSnapshot")


class CreateSnapshotCreateSnapshot(BaseModel):
    snapshot: Optional["CreateSnapshotCreateSnapshotSnapshot"]
    task: Optional["CreateSnapshotCreateSnapshotTask"]
    message: str | None
    errors: list["CreateSnapshotCreateSnapshotErrors"]


class CreateSnapshotCreateSnapshotSnapshot(SnapshotFields):
    pass


class CreateSnapshotCreateSnapshotTask(TaskFields):
    pass


class CreateSnapshotCreateSnapshotErrors(SnapshotErrorFields):
    pass


CreateSnapshot.model_rebuild()
CreateSnapshotCreateSnapshot.model_rebuild()
