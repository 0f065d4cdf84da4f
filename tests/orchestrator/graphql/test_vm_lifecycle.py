"""A VM's cloud-init through the whole stack: the GraphQL API over HTTP, the orchestrator, the agents
over mTLS writing snippets on their nodes, fake Proxmox. The rest of a VM's life is tested in-process:
tests/orchestrator/api/light/test_vm_lifecycle.py.

The helpers come from tests/vmkit.py, shared with the other VM suites.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable

from devstack.world import World
from tests.apikit import GraphQL
from tests.vmkit import (
    SSH_KEY,
    act,
    create,
    fake_vm,
    ok,
    present,
    requests_to,
)

# ------------------------------------------------------------------------- cloud-init on the node

USER_DATA = "#cloud-config\npackages: [nginx]\nruncmd:\n  - [touch, /etc/flexplane-was-here]\n"


def snippets_of(world: World, zone: str, node: str) -> dict[str, str]:
    """The snippet files in the snippets folder of a node's agent, by name."""
    folder = world.agents[(zone, node)].config_path.parent / "snippets"
    return {path.name: path.read_text() for path in folder.glob("*")} if folder.is_dir() else {}


def test_alices_user_data_reaches_the_vm_as_vendor_data_and_goes_with_it(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    created = ok(create(api, "alice", "demo", name=vm_name("init"), userData=USER_DATA, sshKeys=[SSH_KEY]))
    vm = created["virtualMachine"]
    zone, vmid = vm["id"].split("/")
    snippet = f"fp-demo-{vmid}-vendor.yaml"

    config = present(world, vm["id"])["config"]
    assert config["cicustom"] == f"vendor=local:snippets/{snippet}"
    assert config["ciuser"] == "debian"  # Proxmox still makes the user data: user, keys, network
    assert urllib.parse.unquote(config["sshkeys"]).strip() == SSH_KEY
    assert snippets_of(world, zone, vm["host"]).get(snippet) == USER_DATA
    assert present(world, vm["id"])["status"] == "running"

    ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))
    assert fake_vm(world, vm["id"]) is None
    assert snippet not in snippets_of(world, zone, vm["host"])


def test_a_vm_without_user_data_has_no_cicustom(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("plain")))["virtualMachine"]
    zone, vmid = vm["id"].split("/")
    assert "cicustom" not in present(world, vm["id"])["config"]
    assert f"fp-demo-{vmid}-vendor.yaml" not in snippets_of(world, zone, vm["host"])


def test_a_create_that_fails_after_writing_the_snippet_removes_it(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    fake = world.fakes["zone-a"].pve
    world.fakes.on_loop(lambda: fake.fail("POST", "/status/start", times=1, error="qemu_exited_code"))
    result = create(api, "alice", "demo", name=vm_name("boom"), userData=USER_DATA)
    assert result["virtualMachine"] is None
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "was removed" in result["errors"][0]["message"]
    vmid = int(requests_to(world, "zone-a", "POST", "/clone")[-1]["newid"])
    assert fake_vm(world, f"zone-a/{vmid}") is None
    for zone, node in world.agents:
        assert f"fp-demo-{vmid}-vendor.yaml" not in snippets_of(world, zone, node)
