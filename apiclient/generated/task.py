from typing import Optional

from .base_model import BaseModel
from .fragments import TaskFields


class Task(BaseModel):
    task: Optional["TaskTask"]


class TaskTask(TaskFields):
    log: list[str]


Task.model_rebuild()
