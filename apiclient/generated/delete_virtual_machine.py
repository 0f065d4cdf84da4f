from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import VirtualMachineErrorCode
from .fragments import TaskFields, VirtualMachineFields


class DeleteVirtualMachine(BaseModel):
    delete_virtual_machine: Optional["DeleteVirtualMachineDeleteVirtualMachine"] = Field(
        alias="deleteVirtualMachine"
    )


class DeleteVirtualMachineDeleteVirtualMachine(BaseModel):
    virtual_machine: Optional["DeleteVirtualMachineDeleteVirtualMachineVirtualMachine"] = Field(
        alias="virtualMachine"
    )
    task: Optional["DeleteVirtualMachineDeleteVirtualMachineTask"]
    errors: list["DeleteVirtualMachineDeleteVirtualMachineErrors"]


class DeleteVirtualMachineDeleteVirtualMachineVirtualMachine(VirtualMachineFields):
    pass


class DeleteVirtualMachineDeleteVirtualMachineTask(TaskFields):
    pass


class DeleteVirtualMachineDeleteVirtualMachineErrors(BaseModel):
    field: str | None
    message: str
    code: VirtualMachineErrorCode


DeleteVirtualMachine.model_rebuild()
DeleteVirtualMachineDeleteVirtualMachine.model_rebuild()
