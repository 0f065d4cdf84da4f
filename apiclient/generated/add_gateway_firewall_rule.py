from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import EdgeGatewayFields


class AddGatewayFirewallRule(BaseModel):
    add_gateway_firewall_rule: Optional["AddGatewayFirewallRuleAddGatewayFirewallRule"] = Field(
        alias="addGatewayFirewallRule"
    )


class AddGatewayFirewallRuleAddGatewayFirewallRule(BaseModel):
    edge_gateway: Optional["AddGatewayFirewallRuleAddGatewayFirewallRuleEdgeGateway"] = Field(
        alias="edgeGateway"
    )
    errors: list["AddGatewayFirewallRuleAddGatewayFirewallRuleErrors"]


class AddGatewayFirewallRuleAddGatewayFirewallRuleEdgeGateway(EdgeGatewayFields):
    pass


class AddGatewayFirewallRuleAddGatewayFirewallRuleErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


AddGatewayFirewallRule.model_rebuild()
AddGatewayFirewallRuleAddGatewayFirewallRule.model_rebuild()
