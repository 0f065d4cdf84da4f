"""The security groups' glue the VM create and delete call (``realise_new_vm``, ``forget_vm``), against
the world's fakes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devstack.world import World
from orchestrator.errors import NotFound
from orchestrator.services import inventory, security_groups, vdcs
from orchestrator.services.security_groups.rules import parse_group
from orchestrator.services.security_groups.store import change_groups
from tests.apikit import GraphQL
from tests.orchestrator.api.light.test_security_groups import firewall
from tests.orchestrator.services.conftest import MakeContext
from tests.vmkit import act, create, ok, present, vm_names


@pytest.fixture
def vm_name(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    with vm_names(api, world) as name:
        yield name


def address(world: World, ident: str) -> str:
    ipconfig = str(present(world, ident)["config"].get("ipconfig0", ""))
    return ipconfig.split("ip=")[1].split("/")[0]


def test_a_new_vms_firewall_is_made_and_its_address_joins_its_peers_ip_sets(
    api: GraphQL, world: World, make_context: MakeContext, vm_name: Callable[[str], str]
) -> None:
    ctx = make_context("ADMIN")
    vdc = vdcs.get_vdc(ctx, "demo")
    peers = vm_name("peers")[:20]
    rule = {"direction": "in", "protocol": "tcp", "ports": "7000", "group": peers}

    def add(groups: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return {**groups, peers: parse_group({"name": peers, "rules": [rule]}, {*groups, peers})}, None

    change_groups(ctx, vdc.id, add)
    try:
        first = ok(create(api, "alice", "demo", name=vm_name("one")))["virtualMachine"]
        second = ok(create(api, "alice", "demo", name=vm_name("two")))["virtualMachine"]
        api_one = inventory.zone_api(ctx, first["zone"])
        security_groups.realise_new_vm(
            ctx, api_one, vdc, first["host"], int(first["id"].split("/")[1]), [peers]
        )
        # The first is not tagged into the group (only the create tags a VM): the second's realisation
        # reads membership from the tags, so tag it as assignSecurityGroups would.
        assigned = security_groups.assign_security_groups(make_context("ADMIN"), first["id"], [peers])
        assert assigned.realised.failures == []

        api_two = inventory.zone_api(ctx, second["zone"])
        vmid = int(second["id"].split("/")[1])
        done = security_groups.realise_new_vm(ctx, api_two, vdc, second["host"], vmid, [peers])
        assert done.failures == []
        assert set(done.updated) == {first["id"], second["id"]}

        both = sorted([address(world, first["id"]), address(world, second["id"])])
        mine = firewall(world, second["id"])
        assert mine["options"]["enable"] == 1
        assert mine["ipset"] == {f"fp-sg-{peers}": both}
        theirs = firewall(world, first["id"])
        assert theirs["ipset"] == {f"fp-sg-{peers}": both}  # the new VM's address joined

        ok(act(api, "alice", "deleteVirtualMachine", second["id"]))
        gone = security_groups.forget_vm(ctx, vdc, [peers])
        assert gone.updated == [first["id"]]
        theirs = firewall(world, first["id"])
        assert theirs["ipset"] == {f"fp-sg-{peers}": [address(world, first["id"])]}  # and left with it
    finally:

        def drop(groups: dict[str, Any]) -> tuple[dict[str, Any], None]:
            return {k: g for k, g in groups.items() if k != peers}, None

        change_groups(make_context("ADMIN"), vdc.id, drop)


def test_a_new_vm_in_a_group_its_vdc_lacks_is_refused(make_context: MakeContext) -> None:
    ctx = make_context("ADMIN")
    vdc = vdcs.get_vdc(ctx, "other")
    with pytest.raises(NotFound):
        security_groups.check_membership(ctx, vdc, ["no-such-group"])
    assert security_groups.check_membership(ctx, vdc, None) == ["default"]
