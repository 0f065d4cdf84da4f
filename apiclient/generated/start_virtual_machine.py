from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import VirtualMachineErrorCode
from .fragments import TaskFields, VirtualMachineFields


class StartVirtualMachine(BaseModel):
    start_virtual_machine: Optional["StartVirtualMachineStartVirtualMachine"] = Field(
        alias="startVirtualMachine"
    )


class StartVirtualMachineStartVirtualMachine(BaseModel):
    virtual_machine: Optional["StartVirtualMachineStartVirtualMachineVirtualMachine"] = Field(
        alias="virtualMachine"
    )
    task: Optional["StartVirtualMachineStartVirtualMachineTask"]
    errors: list["StartVirtualMachineStartVirtualMachineErrors"]


class StartVirtualMachineStartVirtualMachineVirtualMachine(VirtualMachineFields):
    pass


class StartVirtualMachineStartVirtualMachineTask(TaskFields):
    pass


class StartVirtualMachineStartVirtualMachineErrors(BaseModel):
    field: str | None
    message: str
    code: VirtualMachineErrorCode


StartVirtualMachine.model_rebuild()
StartVirtualMachineStartVirtualMachine.model_rebuild()
