from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class CloudNodeVirtualMachine(BaseModel):
    virtual_machine: Optional["CloudNodeVirtualMachineVirtualMachine"] = Field(alias="virtualMachine")


class CloudNodeVirtualMachineVirtualMachine(BaseModel):
    id: str
    name: str
    zone: str
    host: str
    compute_profile: str | None = Field(alias="computeProfile")
    smbios_uuid: str | None = Field(alias="smbiosUuid")
    nics: list["CloudNodeVirtualMachineVirtualMachineNics"] | None


class CloudNodeVirtualMachineVirtualMachineNics(BaseModel):
    key: str
    ip_address: str | None = Field(alias="ipAddress")


CloudNodeVirtualMachine.model_rebuild()
CloudNodeVirtualMachineVirtualMachine.model_rebuild()
