from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import SnapshotErrorFields, SnapshotFields, TaskFields


class RollbackSnapshot(BaseModel):
    rollback_snapshot: Optional["RollbackSnapshotRollbackSnapshot"] = Field(alias="rollbackSnapshot")


class RollbackSnapshotRollbackSnapshot(BaseModel):
    snapshot: Optional["RollbackSnapshotRollbackSnapshotSnapshot"]
    task: Optional["RollbackSnapshotRollbackSnapshotTask"]
    message: str | None
    errors: list["RollbackSnapshotRollbackSnapshotErrors"]


class RollbackSnapshotRollbackSnapshotSnapshot(SnapshotFields):
    pass


class RollbackSnapshotRollbackSnapshotTask(TaskFields):
    pass


class RollbackSnapshotRollbackSnapshotErrors(SnapshotErrorFields):
    pass


RollbackSnapshot.model_rebuild()
RollbackSnapshotRollbackSnapshot.model_rebuild()
