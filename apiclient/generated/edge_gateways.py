from pydantic import Field

from .base_model import BaseModel
from .fragments import EdgeGatewayFields


class EdgeGateways(BaseModel):
    edge_gateways: list["EdgeGatewaysEdgeGateways"] = Field(alias="edgeGateways")


class EdgeGatewaysEdgeGateways(EdgeGatewayFields):
    pass


EdgeGateways.model_rebuild()
