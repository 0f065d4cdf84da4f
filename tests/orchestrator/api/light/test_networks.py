"""Networks through the whole stack: the InProcessApi API, the orchestrator, the agents over mTLS, and the
fake Proxmox's SDN, whose own state (VNets, subnets, what is applied, VMs' configs) every test reads."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.apikit import Zones
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import create, ok, payload, present, scratch_vdcs

NETWORK_FIELDS = "id name zone vdc cidr gateway dns vnet isDefault pending"
NETWORKS = f"query {{ networks {{ {NETWORK_FIELDS} }} }}"
NETWORK = f"query($id: ID!) {{ network(id: $id) {{ {NETWORK_FIELDS} }} }}"
USAGE = "query($id: ID!) { vdc(id: $id) { usage { networks } quota { networks } } }"
CREATE_NETWORK = f"""mutation($input: CreateNetworkInput!) {{ createNetwork(input: $input) {{
  network {{ {NETWORK_FIELDS} }} errors {{ field message code }} }} }}"""
DELETE_NETWORK = f"""mutation($id: ID!) {{ deleteNetwork(id: $id) {{
  network {{ {NETWORK_FIELDS} }} errors {{ field message code }} }} }}"""
NICS = """query($id: ID!) { virtualMachine(id: $id) {
  id nics { key mac ipAddress prefix gateway network { id } } } }"""
NIC_CHANGE = (
    """{ virtualMachine { id } nic { key ipAddress network { id } } message errors { field message code } }"""
)
ATTACH = f"""mutation($vm: ID!, $network: String!, $ip: String) {{
  attachNetwork(vm: $vm, network: $network, ipAddress: $ip) {NIC_CHANGE} }}"""
DETACH = (
    f"""mutation($vm: ID!, $network: String!) {{ detachNetwork(vm: $vm, network: $network) {NIC_CHANGE} }}"""
)


def sdn(light: Zones, zone: str) -> dict[str, Any]:
    """The fake cluster's SDN: what is written, and what is applied."""
    fake = light.fakes[zone].pve

    def read() -> dict[str, Any]:
        state = fake.sdn
        return {
            "zones": dict(state.zones),
            "vnets": dict(state.vnets),
            "subnets": dict(state.subnets),
            "running": {k: dict(v) for k, v in state.running.items()},
        }

    result: dict[str, Any] = light.fakes.on_loop(read)
    return result


def create_network(api: InProcessApi, user: str, vdc: str, **fields: Any) -> dict[str, Any]:
    values = {"zone": "zone-a", **fields}
    return payload(api(CREATE_NETWORK, user=user, vdc=vdc, variables={"input": values}), "createNetwork")


def networks_of(api: InProcessApi, user: str, vdc: str | None) -> list[dict[str, Any]]:
    answer = api(NETWORKS, user=user, vdc=vdc)
    assert answer.errors == [], answer.errors
    found: list[dict[str, Any]] = answer.data["networks"]
    return found


def nics_of(api: InProcessApi, user: str, vdc: str, vm: str) -> list[dict[str, Any]]:
    answer = api(NICS, user=user, vdc=vdc, variables={"id": vm})
    assert answer.errors == [], answer.errors
    found: list[dict[str, Any]] = answer.data["virtualMachine"]["nics"]
    return found


@pytest.fixture
def vdc(api: InProcessApi, light: Zones) -> Any:
    """A scratch VDC of zone-a (alice is no member: admin acts in it), deleted afterwards."""
    with scratch_vdcs(api, light) as make:
        yield make


def test_a_new_vdc_gets_an_applied_default_network_in_each_of_its_zones(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str]
) -> None:
    ident = vdc(zones=("zone-a", "zone-b"))
    found = networks_of(api, "admin", ident)
    assert sorted((n["zone"], n["name"], n["cidr"], n["isDefault"]) for n in found) == [
        ("zone-a", "default", "10.0.0.0/24", True),
        ("zone-b", "default", "10.0.0.0/24", True),
    ]
    for network in found:
        state = sdn(light, network["zone"])
        vnet = state["running"]["vnets"][network["vnet"]]  # applied, not only written
        assert f"vdc={ident} net=default" in vnet["alias"]
        assert vnet["zone"].startswith("fpz")  # the VDC's own SDN zone
        [subnet] = [s for s in state["running"]["subnets"].values() if s.get("vnet") == network["vnet"]]
        assert subnet["gateway"] == "10.0.0.1"
        assert network["pending"] is False


def test_a_vm_created_as_before_has_a_nic_and_an_address_on_its_vdcs_default_network(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("plain")))["virtualMachine"]
    [default] = [n for n in networks_of(api, "alice", "demo") if n["zone"] == "zone-a" and n["isDefault"]]
    config = present(light, vm["id"])["config"]
    assert f"bridge={default['vnet']}" in config["net0"]
    assert "firewall=1" in config["net0"]
    address = config["ipconfig0"]
    assert address.startswith("ip=10.0.0.")
    assert address.endswith("/24,gw=10.0.0.1")
    [nic] = nics_of(api, "alice", "demo", vm["id"])
    assert nic["network"]["id"] == default["id"]
    assert nic["mac"]  # Proxmox chose one
    assert f"ip={nic['ipAddress']}/24" in address


def test_alice_creates_a_network_and_a_vm_on_it_with_the_address_she_chose(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    name = vm_name("net")[:20].lower()
    made = create_network(api, "alice", "demo", name=name, cidr="192.168.50.0/24", dns=["192.168.50.2"])
    assert made["errors"] == []
    network = made["network"]
    assert (network["gateway"], network["dns"], network["isDefault"]) == (
        "192.168.50.1",
        ["192.168.50.2"],
        False,
    )
    try:
        state = sdn(light, "zone-a")
        assert network["vnet"] in state["running"]["vnets"]
        assert len(network["vnet"]) <= 8
        vm = ok(
            create(
                api,
                "alice",
                "demo",
                name=vm_name("on-net"),
                networks=[{"network": network["id"], "ipAddress": "192.168.50.20"}],
            )
        )["virtualMachine"]
        config = present(light, vm["id"])["config"]
        assert f"bridge={network['vnet']}" in config["net0"]
        assert config["ipconfig0"] == "ip=192.168.50.20/24,gw=192.168.50.1"
        assert config["nameserver"] == "192.168.50.2"
        assert [n["ipAddress"] for n in nics_of(api, "alice", "demo", vm["id"])] == ["192.168.50.20"]

        # In use: not deleted, and the answer names the VM.
        refused = payload(
            api(DELETE_NETWORK, user="alice", vdc="demo", variables={"id": network["id"]}), "deleteNetwork"
        )
        assert refused["errors"][0]["code"] == "CONFLICT"
        assert vm_name("on-net") in refused["errors"][0]["message"]
        # The same address twice is refused, naming the field.
        again = create(
            api,
            "alice",
            "demo",
            name=vm_name("twin"),
            networks=[{"network": network["id"], "ipAddress": "192.168.50.20"}],
        )
        assert again["errors"][0]["field"] == "networks[0].ipAddress"
        assert "in use" in again["errors"][0]["message"]
    finally:
        from tests.vmkit import act, fake_vms

        for vmid, fake in fake_vms(light, "zone-a").items():
            if fake["name"].startswith(vm_name("")):
                act(api, "admin", "deleteVirtualMachine", f"zone-a/{vmid}")
        gone = payload(
            api(DELETE_NETWORK, user="alice", vdc="demo", variables={"id": network["id"]}), "deleteNetwork"
        )
        assert gone["errors"] == []
    assert network["vnet"] not in sdn(light, "zone-a")["running"]["vnets"]


def test_attaching_and_detaching_a_network_changes_the_vms_config_and_says_when_the_guest_sees_it(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    name = vm_name("side")[:20].lower()
    network = create_network(api, "alice", "demo", name=name, cidr="172.16.5.0/28")["network"]
    vm = ok(create(api, "alice", "demo", name=vm_name("multi")))["virtualMachine"]
    try:
        reserved = payload(
            api(
                ATTACH,
                user="alice",
                vdc="demo",
                variables={"vm": vm["id"], "network": name, "ip": "172.16.5.2"},
            ),
            "attachNetwork",
        )
        assert [(e["field"], e["code"]) for e in reserved["errors"]] == [("ipAddress", "INVALID")]  # its own
        attached = payload(
            api(ATTACH, user="alice", vdc="demo", variables={"vm": vm["id"], "network": name}),
            "attachNetwork",
        )
        assert attached["errors"] == []
        assert attached["nic"]["key"] == "net1"
        assert attached["nic"]["ipAddress"] == "172.16.5.4"  # .1 the gateway, .2 and .3 reserved
        assert "next boot" in attached["message"]
        config = present(light, vm["id"])["config"]
        assert f"bridge={network['vnet']}" in config["net1"]
        assert config["ipconfig1"] == "ip=172.16.5.4/28,gw=172.16.5.1"

        detached = payload(
            api(DETACH, user="alice", vdc="demo", variables={"vm": vm["id"], "network": network["id"]}),
            "detachNetwork",
        )
        assert detached["errors"] == []
        config = present(light, vm["id"])["config"]
        assert "net1" not in config
        assert "ipconfig1" not in config
        assert "net0" in config
    finally:
        from tests.vmkit import act

        act(api, "admin", "deleteVirtualMachine", vm["id"])
        api(DELETE_NETWORK, user="alice", vdc="demo", variables={"id": network["id"]})


def test_bob_neither_sees_nor_uses_nor_deletes_alices_networks(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    name = vm_name("private")[:20].lower()
    target = create_network(api, "alice", "demo", name=name, cidr="10.77.0.0/24")["network"]["id"]
    try:
        assert all(n["vdc"] == "demo" for n in networks_of(api, "alice", "demo"))
        assert all(n["vdc"] == "other" for n in networks_of(api, "bob", "other"))
        assert target not in {n["id"] for n in networks_of(api, "bob", None)}
        missing = "zone-a/no-such-network"
        unknown = api(NETWORK, user="bob", vdc="other", variables={"id": missing}).errors[0]
        for ident in (target, missing):
            answer = api(NETWORK, user="bob", vdc="other", variables={"id": ident}).errors[0]
            assert answer["extensions"]["code"] == "NOT_FOUND"
            assert answer["message"].replace(ident, "<id>") == unknown["message"].replace(missing, "<id>")
            deleted = payload(
                api(DELETE_NETWORK, user="bob", vdc="other", variables={"id": ident}), "deleteNetwork"
            )
            assert deleted["errors"][0]["code"] == "NOT_FOUND"
        # Nor does a VM of bob's land on it, by id or by name.
        for ref in (target, name):
            refused = create(api, "bob", "other", name=vm_name("sneak"), networks=[{"network": ref}])
            assert refused["errors"][0]["field"] == "networks[0].network"
            assert "no network" in refused["errors"][0]["message"]
    finally:
        api(DELETE_NETWORK, user="alice", vdc="demo", variables={"id": target})


def test_two_vdcs_networks_are_separate_vnets_with_separate_tags_even_with_the_same_addresses(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str]
) -> None:
    first, second = vdc(), vdc()
    [one] = networks_of(api, "admin", first)
    [two] = networks_of(api, "admin", second)
    assert one["cidr"] == two["cidr"]
    vnets = sdn(light, "zone-a")["running"]["vnets"]
    assert one["vnet"] != two["vnet"]
    assert vnets[one["vnet"]]["tag"] != vnets[two["vnet"]]["tag"]


def test_a_vdcs_network_quota_counts_its_default_networks(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str]
) -> None:
    ident = vdc(networks=2)
    assert create_network(api, "admin", ident, name="second", cidr="10.9.0.0/24")["errors"] == []
    over = create_network(api, "admin", ident, name="third", cidr="10.9.1.0/24")
    assert over["errors"][0]["code"] == "QUOTA_EXCEEDED"
    assert "networks" in over["errors"][0]["message"]
    usage = api(USAGE, user="admin", variables={"id": ident})
    assert usage.data["vdc"] == {"usage": {"networks": 2}, "quota": {"networks": 2}}


def test_a_vdc_gets_default_networks_only_as_far_as_its_quota_has_room(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str]
) -> None:
    """A default network takes a VNet id of its zone's shared range like any other: a VDC made with a
    networks quota of 0 holds none (an owner cannot use up the range with empty VDCs), one of 1 in two
    zones holds one."""
    empty = vdc(zones=("zone-a", "zone-b"), networks=0)
    assert networks_of(api, "admin", empty) == []
    assert api(USAGE, user="admin", variables={"id": empty}).data["vdc"]["usage"] == {"networks": 0}
    one = vdc(zones=("zone-a", "zone-b"), networks=1)
    assert [(n["zone"], n["isDefault"]) for n in networks_of(api, "admin", one)] == [("zone-a", True)]


def test_a_vm_without_networks_in_a_vdc_whose_quota_has_no_room_for_a_default_one_is_refused(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str]
) -> None:
    ident = vdc(networks=0)
    refused = create(api, "admin", ident, name=f"nonet-{ident}")
    assert [e["code"] for e in refused["errors"]] == ["QUOTA_EXCEEDED"], refused["errors"]
    assert "no default network in zone zone-a" in refused["errors"][0]["message"]
    assert networks_of(api, "admin", ident) == []


def test_bad_networks_are_invalid_naming_the_field(api: InProcessApi) -> None:
    for fields, field in (
        ({"name": "Bad Name", "cidr": "10.0.0.0/24"}, "name"),
        ({"name": "public", "cidr": "8.8.8.0/24"}, "cidr"),
        ({"name": "huge", "cidr": "10.0.0.0/8"}, "cidr"),
        ({"name": "gw", "cidr": "10.0.0.0/24", "gateway": "10.0.1.1"}, "gateway"),
        ({"name": "far", "cidr": "10.0.0.0/24", "zone": "zone-x"}, "zone"),
    ):
        answer = create_network(api, "alice", "demo", **fields)
        assert answer["errors"][0]["code"] == "INVALID", fields
        assert answer["errors"][0]["field"] == field, answer["errors"]


UPDATE_HOST = """mutation($zone: String!, $host: String!, $input: HostUpdateInput!) {
  updateHost(zone: $zone, host: $host, input: $input) { errors { message } } }"""


@pytest.fixture
def roomy_hosts(api: InProcessApi) -> Iterator[None]:
    """zone-a's hosts count their memory four times over while the test runs (room for 20 more VMs)."""
    hosts = ("pve1", "pve2", "pve3")

    def overcommit(ratio: float) -> None:
        for host in hosts:
            answer = api(
                UPDATE_HOST,
                user="admin",
                variables={"zone": "zone-a", "host": host, "input": {"memoryOvercommit": ratio}},
            )
            assert payload(answer, "updateHost")["errors"] == []

    overcommit(4.0)
    try:
        yield
    finally:
        overcommit(1.0)


def test_twenty_vms_created_at_once_on_one_network_never_share_an_address(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str], roomy_hosts: None
) -> None:
    ident = vdc()
    network = create_network(api, "admin", ident, name="busy", cidr="10.20.0.0/24")["network"]

    def one(i: int) -> dict[str, Any]:
        return create(api, "admin", ident, name=f"busy-{i}", networks=[{"network": network["id"]}])

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(one, range(20)))
    assert all(a["errors"] == [] for a in answers), [a["errors"] for a in answers if a["errors"]]
    addresses = [present(light, a["virtualMachine"]["id"])["config"]["ipconfig0"] for a in answers]
    assert len(set(addresses)) == 20
    subnet = ipaddress.IPv4Network("10.20.0.0/24")
    assert all(ipaddress.IPv4Address(a[3:].split("/")[0]) in subnet for a in addresses)


def test_creating_a_network_costs_a_bounded_number_of_proxmox_calls_and_listing_one_per_zone(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str]
) -> None:
    ident = vdc(zones=("zone-a",))
    traffic = light.fakes["zone-a"].pve.traffic

    def mark() -> int:
        return int(light.fakes.on_loop(lambda: traffic.count))

    def sdn_calls(since: int) -> list[str]:
        """The SDN requests and task reads that arrived since ``since`` (not the agents' own reads)."""
        arrived = light.fakes.on_loop(lambda: traffic.since(since))
        return [f"{m} {p}" for _a, m, p in arrived if "/cluster/sdn" in p or "/tasks/" in p]

    before = mark()
    made = create_network(api, "admin", ident, name="counted", cidr="10.31.0.0/24")
    assert made["errors"] == []
    calls = sdn_calls(before)
    # The VNets for the quota (1) and under the SDN lock (1), the SDN zones (1), the VNet (1), the subnet
    # (1), the apply (1) and its task until it ends (1 here): its VDC's SDN zone exists already.
    assert len(calls) <= 7, calls
    before = mark()
    networks_of(api, "admin", ident)
    assert sdn_calls(before) == ["GET /api2/json/cluster/sdn/vnets"]


def test_networks_created_at_once_in_several_vdcs_never_share_a_vnet_id_or_tag(
    api: InProcessApi, light: LightWorld, vdc: Callable[..., str]
) -> None:
    owners = [vdc(zones=("zone-a",), networks=5) for _ in range(3)]

    def one(i: int) -> dict[str, Any]:
        return create_network(api, "admin", owners[i % 3], name=f"race-{i}", cidr=f"10.{40 + i}.0.0/24")

    with ThreadPoolExecutor(max_workers=9) as pool:
        answers = list(pool.map(one, range(9)))
    assert all(a["errors"] == [] for a in answers), [a["errors"] for a in answers if a["errors"]]
    made = [a["network"]["vnet"] for a in answers]
    running = sdn(light, "zone-a")["running"]["vnets"]
    assert len(set(made)) == 9
    assert all(vnet in running for vnet in made)  # every one applied
    tags = [vnet["tag"] for vnet in running.values()]
    assert len(tags) == len(set(tags))  # no VXLAN id twice in the cluster
