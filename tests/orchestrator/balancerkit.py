"""What the load-balancer tests share: the gateway rules a tenant cluster's cloud controller writes for a
Service's address, made with the controller's own functions (``providers.cloud.model``), as the gateway
stores them."""

from __future__ import annotations

from orchestrator.models.gateways import FirewallRule
from providers.cloud.model import Balancer, owner, wanted_rules


def marked_rules(cluster: str, balancer: Balancer, address: str) -> tuple[FirewallRule, ...]:
    """The inbound rules that let ``balancer``'s ports in to ``address`` and mark it as its Service's."""
    description = owner(cluster, balancer.namespace, balancer.name)
    return tuple(
        FirewallRule(
            "in",
            rule.action,
            rule.protocol,
            rule.source,
            rule.destination,
            None if rule.port_from is None or rule.port_to is None else (rule.port_from, rule.port_to),
            description,
        )
        for rule in wanted_rules(balancer, address)
    )
