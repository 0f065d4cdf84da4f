from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import EdgeGatewayFields


class CreateEdgeGateway(BaseModel):
    create_edge_gateway: Optional["CreateEdgeGatewayCreateEdgeGateway"] = Field(alias="createEdgeGateway")


class CreateEdgeGatewayCreateEdgeGateway(BaseModel):
    edge_gateway: Optional["CreateEdgeGatewayCreateEdgeGatewayEdgeGateway"] = Field(alias="edgeGateway")
    errors: list["CreateEdgeGatewayCreateEdgeGatewayErrors"]


class CreateEdgeGatewayCreateEdgeGatewayEdgeGateway(EdgeGatewayFields):
    pass


class CreateEdgeGatewayCreateEdgeGatewayErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


CreateEdgeGateway.model_rebuild()
CreateEdgeGatewayCreateEdgeGateway.model_rebuild()
