from pydantic import Field

from .base_model import BaseModel
from .fragments import VirtualMachineFields


class VirtualMachines(BaseModel):
    virtual_machines: "VirtualMachinesVirtualMachines" = Field(alias="virtualMachines")


class VirtualMachinesVirtualMachines(BaseModel):
    edges: list["VirtualMachinesVirtualMachinesEdges"]
    page_info: "VirtualMachinesVirtualMachinesPageInfo" = Field(alias="pageInfo")


class VirtualMachinesVirtualMachinesEdges(BaseModel):
    cursor: str
    node: "VirtualMachinesVirtualMachinesEdgesNode"


class VirtualMachinesVirtualMachinesEdgesNode(VirtualMachineFields):
    pass


class VirtualMachinesVirtualMachinesPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: str | None = Field(alias="endCursor")


VirtualMachines.model_rebuild()
VirtualMachinesVirtualMachines.model_rebuild()
VirtualMachinesVirtualMachinesEdges.model_rebuild()
