"""Networks through the whole stack where the wiring is what is tested: the upgrade command
(`manage.py ensure_default_networks`) run as a process against the devstack. What networks are and do is
tested in-process, on the light world's fake SDN: tests/orchestrator/api/light/test_networks.py."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from devstack.world import World
from tests.apikit import GraphQL
from tests.vmkit import scratch_vdcs

NETWORKS = "query { networks { id name zone vdc cidr gateway dns vnet isDefault pending } }"


def networks_of(api: GraphQL, user: str, vdc: str | None) -> list[dict[str, Any]]:
    answer = api(NETWORKS, user=user, vdc=vdc)
    assert answer.errors == [], answer.errors
    found: list[dict[str, Any]] = answer.data["networks"]
    return found


@pytest.fixture
def vdc(api: GraphQL, world: World) -> Any:
    """A scratch VDC of zone-a (alice is no member: admin acts in it), deleted afterwards."""
    with scratch_vdcs(api, world) as make:
        yield make


def test_an_upgrade_gives_vdcs_older_than_networks_their_default_networks_once(
    api: GraphQL, world: World, vdc: Any
) -> None:
    ident = vdc(zones=("zone-a",))
    [default] = networks_of(api, "admin", ident)

    def forget_networks() -> None:  # as a VDC made before networks existed: none in Proxmox
        state = world.fakes["zone-a"].pve.sdn
        for subnet in [s for s, o in state.subnets.items() if o.get("vnet") == default["vnet"]]:
            del state.subnets[subnet]
        del state.vnets[default["vnet"]]
        state.apply()

    world.fakes.on_loop(forget_networks)
    assert networks_of(api, "admin", ident) == []

    def upgrade() -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", "ensure_default_networks"],
            env={**os.environ, **world.orchestrator_env()},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    assert f"VDC {ident}: made zone-a/default" in upgrade()
    [again] = networks_of(api, "admin", ident)
    assert (again["name"], again["cidr"], again["pending"]) == ("default", "10.0.0.0/24", False)
    assert f"VDC {ident}:" not in upgrade()  # idempotent
