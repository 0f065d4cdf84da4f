"""``flexplane`` on what reaches a VDC's VMs and keeps their past: security groups, the edge gateway, public
IPs and port forwards (zone-a given an external network, the light world's agents applying each gateway
they are sent, as tests/portal/light does), and a VM's snapshots."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from tests.cli.conftest import Flexplane
from tests.gatewaykit import NO_EXTERNAL, UPDATE_ZONE, ZONE, external_settings
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.portal.light.conftest import RunningGateways, without_gateway

SMALL_VM = ("-c", "small", "-s", "standard", "-i", "debian-12", "--zone", ZONE)


@pytest.fixture
def uplink(api: InProcessApi, light: LightWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """zone-a with an external network whose gateways the nodes' agents apply; afterwards VDC demo's public
    IPs and gateway go and the zone has none (as the light world's admin: requested before the login)."""
    running = RunningGateways(light)
    for name in ("apply_gateway", "gateway_state", "remove_gateway"):
        monkeypatch.setattr(light.agents, name, getattr(running, name))
    answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": external_settings("fpcli")})
    assert answer.data["updateZone"]["errors"] == [], answer.body
    try:
        yield
    finally:
        without_gateway(api)
        api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": NO_EXTERNAL})


def test_a_public_ip_is_allocated_forwarded_to_a_vm_and_released(
    uplink: None, flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str]
) -> None:
    made = flexplane("vms", "create", vm_name("web"), *SMALL_VM, "--wait", "-o", "json")
    assert made.exit_code == 0, made.output
    shown = json.loads(flexplane("vms", "show", json.loads(made.stdout)["id"], "-o", "json").stdout)
    vm_address = shown["nics"][0]["ipAddress"]

    allocated = flexplane("public-ips", "allocate", "--zone", ZONE, "-o", "json")
    address = json.loads(allocated.stdout)["address"]
    forwarded = flexplane("port-forwards", "create", address, "tcp", "8080", vm_address, "--to-port", "80")
    forwards = json.loads(flexplane("port-forwards", "list", "-o", "json").stdout)
    gateway = flexplane("gateways", "show", ZONE, "-o", "json")
    gateways = flexplane("gateways", "list")
    unforwarded = flexplane("port-forwards", "delete", address, "tcp", "8080")
    released = flexplane("public-ips", "release", address)
    left = json.loads(flexplane("public-ips", "list", "-o", "json").stdout)

    assert allocated.exit_code == 0, allocated.output
    assert forwarded.exit_code == 0, forwarded.output
    forward = {"publicIp": address, "protocol": "tcp", "port": 8080, "toAddress": vm_address, "toPort": 80}
    assert forward in forwards
    assert gateway.exit_code == 0, gateway.output
    assert address in [ip["address"] for ip in json.loads(gateway.stdout)["publicIps"]]
    assert ZONE in gateways.stdout
    assert unforwarded.exit_code == 0, unforwarded.output
    assert released.exit_code == 0, released.output
    assert address not in [ip["address"] for ip in left]


def test_a_zone_without_a_gateway_is_not_found(flexplane: Flexplane, logged_in: dict[str, str]) -> None:
    missing = flexplane("gateways", "show", "zone-b")

    assert missing.exit_code == 3, missing.output


def test_the_security_groups_are_listed_with_their_rules(
    flexplane: Flexplane, logged_in: dict[str, str]
) -> None:
    table = flexplane("security-groups", "list")
    as_json = flexplane("security-groups", "list", "-o", "json")

    assert table.exit_code == 0, table.output
    assert "default" in table.stdout
    groups = {group["name"]: group for group in json.loads(as_json.stdout)}
    assert groups["default"]["rules"]


def test_a_snapshot_is_taken_listed_rolled_back_to_and_deleted(
    flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str]
) -> None:
    name = vm_name("snap")
    assert flexplane("vms", "create", name, *SMALL_VM, "--wait").exit_code == 0

    taken = flexplane(
        "snapshots", "create", name, "before", "--description", "a test's", "--wait", "-o", "json"
    )
    listed = flexplane("snapshots", "list", name, "-o", "json")
    rolled = flexplane("snapshots", "rollback", name, "before", "--wait", "-o", "json")
    deleted = flexplane("snapshots", "delete", name, "before", "--wait", "-o", "json")
    after = flexplane("snapshots", "list", name, "-o", "json")

    for result in (taken, rolled, deleted):
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["status"] == "SUCCEEDED"
    snapshot = next(s for s in json.loads(listed.stdout) if s["name"] == "before")
    assert snapshot["description"] == "a test's"
    assert "before" not in [s["name"] for s in json.loads(after.stdout)]


def test_a_volume_is_made_beside_a_vm_attached_grown_detached_and_deleted(
    flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str]
) -> None:
    made_vm = flexplane("vms", "create", vm_name("disk"), *SMALL_VM, "--wait", "-o", "json")
    vm_id = json.loads(made_vm.stdout)["id"]
    name = vm_name("vol")
    made = flexplane(
        "volumes", "create", name, "--profile", "standard", "--size", "10", "--near", vm_id, "-o", "json"
    )
    assert made.exit_code == 0, made.output
    volume = json.loads(made.stdout)
    attached = flexplane("volumes", "attach", volume["id"], vm_id, "-o", "json")
    grown = flexplane("volumes", "resize", volume["id"], "--size", "12", "-o", "json")
    listed = flexplane("volumes", "list", "-o", "json")
    in_use = flexplane("volumes", "delete", volume["id"])
    detached = flexplane("volumes", "detach", volume["id"], "-o", "json")
    deleted = flexplane("volumes", "delete", volume["id"], "-o", "json")

    assert (json.loads(attached.stdout)["status"], json.loads(attached.stdout)["attachedTo"]) == (
        "in-use",
        vm_id,
    )
    assert json.loads(grown.stdout)["sizeGb"] == 12
    assert [v["attachedTo"] for v in json.loads(listed.stdout) if v["name"] == name] == [vm_id]
    assert in_use.exit_code != 0
    assert "detach it first" in in_use.output
    assert json.loads(detached.stdout)["status"] == "available"
    assert deleted.exit_code == 0, deleted.output
    assert volume["id"] not in flexplane("volumes", "list", "-o", "json").stdout


def test_a_volume_snapshot_is_taken_made_into_a_volume_and_deleted(
    flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str]
) -> None:
    name = vm_name("src")
    made = flexplane(
        "volumes", "create", name, "--profile", "standard", "--size", "10", "--zone", "zone-a", "-o", "json"
    )
    assert made.exit_code == 0, made.output
    volume = json.loads(made.stdout)
    taken = flexplane("volumes", "snapshot", volume["id"], vm_name("snap"), "-o", "json")
    assert taken.exit_code == 0, taken.output
    snapshot = json.loads(taken.stdout)
    listed = flexplane("volumes", "snapshots", "--volume", volume["id"], "-o", "json")
    copy = flexplane("volumes", "restore", snapshot["id"], vm_name("copy"), "--size", "15", "-o", "json")
    dropped = flexplane("volumes", "delete-snapshot", snapshot["id"], "-o", "json")

    assert (snapshot["status"], snapshot["source"], snapshot["sizeGb"]) == ("available", volume["id"], 10)
    assert [s["id"] for s in json.loads(listed.stdout)] == [snapshot["id"]]
    assert copy.exit_code == 0, copy.output
    restored = json.loads(copy.stdout)
    assert (restored["sizeGb"], restored["status"]) == (15, "available")
    assert dropped.exit_code == 0, dropped.output
    assert snapshot["id"] not in flexplane("volumes", "snapshots", "-o", "json").stdout
    for gone in (volume["id"], restored["id"]):
        assert flexplane("volumes", "delete", gone).exit_code == 0
