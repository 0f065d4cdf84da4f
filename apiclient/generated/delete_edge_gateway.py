from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode


class DeleteEdgeGateway(BaseModel):
    delete_edge_gateway: Optional["DeleteEdgeGatewayDeleteEdgeGateway"] = Field(alias="deleteEdgeGateway")


class DeleteEdgeGatewayDeleteEdgeGateway(BaseModel):
    errors: list["DeleteEdgeGatewayDeleteEdgeGatewayErrors"]


class DeleteEdgeGatewayDeleteEdgeGatewayErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


DeleteEdgeGateway.model_rebuild()
DeleteEdgeGatewayDeleteEdgeGateway.model_rebuild()
