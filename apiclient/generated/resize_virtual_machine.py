from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import VirtualMachineErrorCode
from .fragments import TaskFields, VirtualMachineFields


class ResizeVirtualMachine(BaseModel):
    resize_virtual_machine: Optional["ResizeVirtualMachineResizeVirtualMachine"] = Field(
        alias="resizeVirtualMachine"
    )


class ResizeVirtualMachineResizeVirtualMachine(BaseModel):
    virtual_machine: Optional["ResizeVirtualMachineResizeVirtualMachineVirtualMachine"] = Field(
        alias="virtualMachine"
    )
    task: Optional["ResizeVirtualMachineResizeVirtualMachineTask"]
    errors: list["ResizeVirtualMachineResizeVirtualMachineErrors"]


class ResizeVirtualMachineResizeVirtualMachineVirtualMachine(VirtualMachineFields):
    pass


class ResizeVirtualMachineResizeVirtualMachineTask(TaskFields):
    pass


class ResizeVirtualMachineResizeVirtualMachineErrors(BaseModel):
    field: str | None
    message: str
    code: VirtualMachineErrorCode


ResizeVirtualMachine.model_rebuild()
ResizeVirtualMachineResizeVirtualMachine.model_rebuild()
