from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import VirtualMachineFields


class VirtualMachine(BaseModel):
    virtual_machine: Optional["VirtualMachineVirtualMachine"] = Field(alias="virtualMachine")


class VirtualMachineVirtualMachine(VirtualMachineFields):
    ip_addresses: list[str] | None = Field(alias="ipAddresses")
    security_groups: list[str] | None = Field(alias="securityGroups")
    nics: list["VirtualMachineVirtualMachineNics"] | None


class VirtualMachineVirtualMachineNics(BaseModel):
    key: str
    mac: str | None
    ip_address: str | None = Field(alias="ipAddress")
    prefix: int | None
    gateway: str | None
    network: Optional["VirtualMachineVirtualMachineNicsNetwork"]


class VirtualMachineVirtualMachineNicsNetwork(BaseModel):
    id: str
    name: str


VirtualMachine.model_rebuild()
VirtualMachineVirtualMachine.model_rebuild()
VirtualMachineVirtualMachineNics.model_rebuild()
