"""Bringing hosts in line with gateways' desired state, called in this process against the world:
``manage.py reconcile_gateways`` sends what a host did not confirm once its agent answers again, and a
cordoned host's gateway moves to the other allowed host (and leaves the cordoned one)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command

from devstack.world import World
from orchestrator.models.gateways import Gateway
from orchestrator.services.gateways import reconcile, store
from orchestrator.sources.kube import KubeSource
from tests.apikit import GraphQL
from tests.gatewaykit import ZONE, bridge, clean_gateway, external_network, unbridge, vnets_of
from tests.orchestrator.hostkit import reached_again
from tests.orchestrator.services.conftest import MakeContext, context
from tests.vmkit import payload, scratch_vdcs

RULE = """mutation($zone: String, $input: GatewayFirewallRuleInput!) {
  addGatewayFirewallRule(zone: $zone, input: $input) { errors { field message code } } }"""
CORDON = """mutation($zone: String!, $host: String!, $on: Boolean!) {
  updateHost(zone: $zone, host: $host, input: {cordoned: $on}) { errors { message } } }"""


@pytest.fixture(scope="module")
def vdc(api: GraphQL, world: World, wired: KubeSource) -> Iterator[str]:
    """A scratch VDC of zone-a with a gateway (made by a firewall rule) on an external network."""
    with external_network(api, world, "r"), scratch_vdcs(api, world) as make:
        ident = make()
        vnets = vnets_of(api, ident)
        for vnet in vnets:
            bridge(vnet)
        try:
            rule = {"direction": "in", "action": "allow", "protocol": "tcp", "portFrom": 22}
            made = payload(
                api(RULE, user="admin", vdc=ident, variables={"zone": ZONE, "input": rule}),
                "addGatewayFirewallRule",
            )
            assert made["errors"] == []
            yield ident
        finally:
            clean_gateway(api, ident)
            for vnet in vnets:
                unbridge(vnet)


def stored(vdc: str) -> Gateway:
    found = store.load(context("ADMIN"), vdc, ZONE)
    assert found is not None
    return found


def test_the_reconcile_command_sends_what_a_host_that_did_not_answer_missed(
    api: GraphQL, world: World, vdc: str
) -> None:
    host = stored(vdc).node
    assert host is not None
    world.stop_agent(ZONE, host)
    try:
        rule = {"direction": "out", "action": "deny", "protocol": "udp", "portFrom": 53}
        answer = payload(
            api(RULE, user="admin", vdc=vdc, variables={"zone": ZONE, "input": rule}),
            "addGatewayFirewallRule",
        )
        assert [e["code"] for e in answer["errors"]] == ["UNAVAILABLE"]
        assert not stored(vdc).applied
    finally:
        world.start_agent(ZONE, host)
        reached_again(api, ZONE, host)
    out = io.StringIO()
    call_command("reconcile_gateways", stdout=out, stderr=io.StringIO())
    assert f"gateway {vdc}.{ZONE}: applied on {host}" in out.getvalue()
    after = stored(vdc)
    assert after.applied
    assert len(after.rules) == 2


def test_a_cordoned_hosts_gateway_moves_to_the_other_allowed_host_and_leaves_the_cordoned_one(
    api: GraphQL, vdc: str, make_context: MakeContext
) -> None:
    before = stored(vdc)
    host = before.node
    assert host is not None
    other = "pve2" if host == "pve1" else "pve1"
    variables: dict[str, Any] = {"zone": ZONE, "host": host, "on": True}
    assert payload(api(CORDON, user="admin", variables=variables), "updateHost")["errors"] == []
    try:
        done = reconcile.reconcile(make_context("ADMIN"), only=lambda g: g.vdc == vdc)
        assert [(d.action, d.node, d.error) for d in done] == [("moved", other, None)]
        after = stored(vdc)
        assert (after.node, after.applied, after.left_on, after.generation) == (
            other,
            True,
            (),
            before.generation,  # the same desired state, elsewhere
        )
        again = reconcile.reconcile(make_context("ADMIN"), only=lambda g: g.vdc == vdc)
        assert [d.action for d in again] == ["kept"]
    finally:
        api(CORDON, user="admin", variables={**variables, "on": False})
