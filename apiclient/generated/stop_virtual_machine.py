from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import VirtualMachineErrorCode
from .fragments import TaskFields, VirtualMachineFields


class StopVirtualMachine(BaseModel):
    stop_virtual_machine: Optional["StopVirtualMachineStopVirtualMachine"] = Field(alias="stopVirtualMachine")


class StopVirtualMachineStopVirtualMachine(BaseModel):
    virtual_machine: Optional["StopVirtualMachineStopVirtualMachineVirtualMachine"] = Field(
        alias="virtualMachine"
    )
    task: Optional["StopVirtualMachineStopVirtualMachineTask"]
    errors: list["StopVirtualMachineStopVirtualMachineErrors"]


class StopVirtualMachineStopVirtualMachineVirtualMachine(VirtualMachineFields):
    pass


class StopVirtualMachineStopVirtualMachineTask(TaskFields):
    pass


class StopVirtualMachineStopVirtualMachineErrors(BaseModel):
    field: str | None
    message: str
    code: VirtualMachineErrorCode


StopVirtualMachine.model_rebuild()
StopVirtualMachineStopVirtualMachine.model_rebuild()
