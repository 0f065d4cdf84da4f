from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import VirtualMachineErrorCode
from .fragments import TaskFields, VirtualMachineFields


class CreateVirtualMachine(BaseModel):
    create_virtual_machine: Optional["CreateVirtualMachineCreateVirtualMachine"] = Field(
        alias="createVirtualMachine"
    )


class CreateVirtualMachineCreateVirtualMachine(BaseModel):
    virtual_machine: Optional["CreateVirtualMachineCreateVirtualMachineVirtualMachine"] = Field(
        alias="virtualMachine"
    )
    task: Optional["CreateVirtualMachineCreateVirtualMachineTask"]
    placement: Optional["CreateVirtualMachineCreateVirtualMachinePlacement"]
    errors: list["CreateVirtualMachineCreateVirtualMachineErrors"]


class CreateVirtualMachineCreateVirtualMachineVirtualMachine(VirtualMachineFields):
    pass


class CreateVirtualMachineCreateVirtualMachineTask(TaskFields):
    pass


class CreateVirtualMachineCreateVirtualMachinePlacement(BaseModel):
    zone: str
    host: str | None
    reasons: list[str]


class CreateVirtualMachineCreateVirtualMachineErrors(BaseModel):
    field: str | None
    message: str
    code: VirtualMachineErrorCode


CreateVirtualMachine.model_rebuild()
CreateVirtualMachineCreateVirtualMachine.model_rebuild()
