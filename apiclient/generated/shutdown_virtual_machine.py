from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import VirtualMachineErrorCode
from .fragments import TaskFields, VirtualMachineFields


class ShutdownVirtualMachine(BaseModel):
    shutdown_virtual_machine: Optional["ShutdownVirtualMachineShutdownVirtualMachine"] = Field(
        alias="shutdownVirtualMachine"
    )


class ShutdownVirtualMachineShutdownVirtualMachine(BaseModel):
    virtual_machine: Optional["ShutdownVirtualMachineShutdownVirtualMachineVirtualMachine"] = Field(
        alias="virtualMachine"
    )
    task: Optional["ShutdownVirtualMachineShutdownVirtualMachineTask"]
    errors: list["ShutdownVirtualMachineShutdownVirtualMachineErrors"]


class ShutdownVirtualMachineShutdownVirtualMachineVirtualMachine(VirtualMachineFields):
    pass


class ShutdownVirtualMachineShutdownVirtualMachineTask(TaskFields):
    pass


class ShutdownVirtualMachineShutdownVirtualMachineErrors(BaseModel):
    field: str | None
    message: str
    code: VirtualMachineErrorCode


ShutdownVirtualMachine.model_rebuild()
ShutdownVirtualMachineShutdownVirtualMachine.model_rebuild()
