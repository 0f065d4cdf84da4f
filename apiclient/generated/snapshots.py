from .base_model import BaseModel
from .fragments import SnapshotFields


class Snapshots(BaseModel):
    snapshots: list["SnapshotsSnapshots"]


class SnapshotsSnapshots(SnapshotFields):
    pass


Snapshots.model_rebuild()
