from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EdgeGatewayErrorCode
from .fragments import EdgeGatewayFields


class RemoveGatewayFirewallRule(BaseModel):
    remove_gateway_firewall_rule: Optional["RemoveGatewayFirewallRuleRemoveGatewayFirewallRule"] = Field(
        alias="removeGatewayFirewallRule"
    )


class RemoveGatewayFirewallRuleRemoveGatewayFirewallRule(BaseModel):
    edge_gateway: Optional["RemoveGatewayFirewallRuleRemoveGatewayFirewallRuleEdgeGateway"] = Field(
        alias="edgeGateway"
    )
    errors: list["RemoveGatewayFirewallRuleRemoveGatewayFirewallRuleErrors"]


class RemoveGatewayFirewallRuleRemoveGatewayFirewallRuleEdgeGateway(EdgeGatewayFields):
    pass


class RemoveGatewayFirewallRuleRemoveGatewayFirewallRuleErrors(BaseModel):
    field: str | None
    message: str
    code: EdgeGatewayErrorCode


RemoveGatewayFirewallRule.model_rebuild()
RemoveGatewayFirewallRuleRemoveGatewayFirewallRule.model_rebuild()
