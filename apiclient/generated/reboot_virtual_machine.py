from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import VirtualMachineErrorCode
from .fragments import TaskFields, VirtualMachineFields


class RebootVirtualMachine(BaseModel):
    reboot_virtual_machine: Optional["RebootVirtualMachineRebootVirtualMachine"] = Field(
        alias="rebootVirtualMachine"
    )


class RebootVirtualMachineRebootVirtualMachine(BaseModel):
    virtual_machine: Optional["RebootVirtualMachineRebootVirtualMachineVirtualMachine"] = Field(
        alias="virtualMachine"
    )
    task: Optional["RebootVirtualMachineRebootVirtualMachineTask"]
    errors: list["RebootVirtualMachineRebootVirtualMachineErrors"]


class RebootVirtualMachineRebootVirtualMachineVirtualMachine(VirtualMachineFields):
    pass


class RebootVirtualMachineRebootVirtualMachineTask(TaskFields):
    pass


class RebootVirtualMachineRebootVirtualMachineErrors(BaseModel):
    field: str | None
    message: str
    code: VirtualMachineErrorCode


RebootVirtualMachine.model_rebuild()
RebootVirtualMachineRebootVirtualMachine.model_rebuild()
