from pydantic import Field

from .base_model import BaseModel


class CloudNodeVirtualMachines(BaseModel):
    virtual_machines: "CloudNodeVirtualMachinesVirtualMachines" = Field(alias="virtualMachines")


class CloudNodeVirtualMachinesVirtualMachines(BaseModel):
    edges: list["CloudNodeVirtualMachinesVirtualMachinesEdges"]
    page_info: "CloudNodeVirtualMachinesVirtualMachinesPageInfo" = Field(alias="pageInfo")


class CloudNodeVirtualMachinesVirtualMachinesEdges(BaseModel):
    node: "CloudNodeVirtualMachinesVirtualMachinesEdgesNode"


class CloudNodeVirtualMachinesVirtualMachinesEdgesNode(BaseModel):
    id: str
    name: str
    status: str
    zone: str
    host: str
    compute_profile: str | None = Field(alias="computeProfile")


class CloudNodeVirtualMachinesVirtualMachinesPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: str | None = Field(alias="endCursor")


CloudNodeVirtualMachines.model_rebuild()
CloudNodeVirtualMachinesVirtualMachines.model_rebuild()
CloudNodeVirtualMachinesVirtualMachinesEdges.model_rebuild()
