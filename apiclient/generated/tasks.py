from .base_model import BaseModel
from .fragments import TaskFields


class Tasks(BaseModel):
    tasks: list["TasksTasks"]


class TasksTasks(TaskFields):
    pass


Tasks.model_rebuild()
