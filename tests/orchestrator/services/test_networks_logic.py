"""The pure parts of networks: the VNet alias, reserved and free addresses, input checks, allocation."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.errors import Conflict, ValidationFailed
from orchestrator.models import Vdc, Zone
from orchestrator.models.networks import (
    Network,
    address_tag,
    addresses_in,
    free_addresses,
    parse_alias,
    render_alias,
    reserved,
)
from orchestrator.services import networks
from orchestrator.services.networks import nics
from orchestrator.services.networks.inputs import CreateNetwork, validate
from orchestrator.sources.proxmox import ClusterResources, VNet
from orchestrator.sources.qemu_config import is_tag, parse_config
from tests.orchestrator.fakezone import guest

LABEL = st.from_regex(r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)


def zone(**network: object) -> Zone:
    return Zone.from_spec({"id": "zone-a", "network": network})


def net(
    name: str = "web", cidr: str = "10.1.0.0/24", gateway: str = "10.1.0.1", vnet: str = "fpabc123"
) -> Network:
    return Network("demo", "zone-a", name, vnet, "fpzdemo1", 1000, cidr, gateway, ("10.1.0.2",))


@given(
    vdc=LABEL,
    name=LABEL,
    prefix=st.integers(16, 29),
    base=st.integers(0, 2**24 - 1),
    dns=st.lists(st.ip_addresses(v=4), max_size=3),
)
def test_a_vnet_alias_says_back_what_was_written_into_it(
    vdc: str, name: str, prefix: int, base: int, dns: list[ipaddress.IPv4Address]
) -> None:
    subnet = ipaddress.IPv4Network((int(ipaddress.IPv4Address("10.0.0.0")) + base, prefix), strict=False)
    gateway = str(next(subnet.hosts()))
    servers = tuple(str(a) for a in dns)
    alias = render_alias(vdc, name, str(subnet), gateway, servers)
    assert len(alias) <= 256
    assert parse_alias(alias) == (vdc, name, str(subnet), gateway, servers)


@pytest.mark.parametrize(
    "alias",
    [
        "",
        "an admin's own vnet",
        "fp vdc=demo net=web cidr=nonsense gw=10.0.0.1",
        "fp vdc=demo net=web cidr=10.0.0.0/24 gw=10.9.0.1",
        "fp net=web cidr=10.0.0.0/24 gw=10.0.0.1",
    ],
)
def test_a_vnet_whose_alias_is_not_flexplanes_is_no_network(alias: str) -> None:
    assert Network.from_vnet("zone-a", VNet("v1", "fpnet", 5, alias, False, False)) is None


def test_no_vm_gets_the_network_or_broadcast_address_the_gateway_or_the_first_hosts() -> None:
    subnet = ipaddress.IPv4Network("10.0.0.0/29")
    kept = reserved(subnet, ipaddress.IPv4Address("10.0.0.6"))
    assert [str(a) for a in sorted(kept)] == [f"10.0.0.{i}" for i in (0, 1, 2, 3, 6, 7)]
    free = list(
        free_addresses(subnet, ipaddress.IPv4Address("10.0.0.6"), [ipaddress.IPv4Address("10.0.0.4")])
    )
    assert [str(a) for a in free] == ["10.0.0.5"]


@pytest.mark.parametrize(
    ("cidr", "field", "words"),
    [
        ("10.0.0.0/8", "cidr", "/16 to a /29"),
        ("10.0.0.0/30", "cidr", "/16 to a /29"),
        ("8.8.8.0/24", "cidr", "not private"),
        ("10.0.0.1/24", "cidr", "not an IPv4 network"),
        ("garbage", "cidr", "not an IPv4 network"),
    ],
)
def test_a_network_outside_the_rules_is_invalid_naming_the_cidr(cidr: str, field: str, words: str) -> None:
    with pytest.raises(ValidationFailed) as failure:
        validate(CreateNetwork(name="web", cidr=cidr), zone())
    assert failure.value.field == field
    assert words in failure.value.message


def test_a_range_the_zone_allows_may_be_used_beside_rfc_1918() -> None:
    planned = validate(CreateNetwork(name="web", cidr="100.64.1.0/24"), zone(ranges=["100.64.0.0/10"]))
    assert str(planned.gateway) == "100.64.1.1"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (CreateNetwork(name="Web", cidr="10.0.0.0/24"), "name"),
        (CreateNetwork(name="web", cidr="10.0.0.0/24", gateway="10.0.1.1"), "gateway"),
        (CreateNetwork(name="web", cidr="10.0.0.0/24", gateway="10.0.0.255"), "gateway"),
        (CreateNetwork(name="web", cidr="10.0.0.0/24", dns=("1.1.1.1", "not-an-ip")), "dns"),
        (
            CreateNetwork(name="web", cidr="10.0.0.0/24", dns=("1.1.1.1", "1.0.0.1", "9.9.9.9", "8.8.8.8")),
            "dns",
        ),
    ],
)
def test_bad_names_gateways_and_resolvers_are_invalid_naming_the_field(
    spec: CreateNetwork, field: str
) -> None:
    with pytest.raises(ValidationFailed) as failure:
        validate(spec, zone())
    assert failure.value.field == field


def test_a_network_takes_the_zones_resolvers_unless_it_names_its_own() -> None:
    assert validate(CreateNetwork(name="web", cidr="10.0.0.0/24"), zone(dns=["10.9.9.9"])).dns == (
        "10.9.9.9",
    )
    own = CreateNetwork(name="web", cidr="10.0.0.0/24", dns=("1.1.1.1",))
    assert validate(own, zone(dns=["10.9.9.9"])).dns == ("1.1.1.1",)


def _zone_with(*tags: str) -> ClusterResources:
    """A zone's resources whose VMs carry these tags (one VM each)."""
    return ClusterResources(tuple(guest(100 + i, tags=t) for i, t in enumerate(tags)))


def test_allocation_takes_the_lowest_address_no_vm_holds_on_the_vnet() -> None:
    web = net()
    resources = _zone_with(
        "fp-vdc-demo;fp-ip-fpabc123-10.1.0.4",
        # The same address on another VNet is no collision.
        "fp-vdc-demo;fp-ip-fpother1-10.1.0.5",
    )
    found = nics.allocate([(web, None), (web, None)], resources, "networks")
    assert [str(a) for a in found] == ["10.1.0.5", "10.1.0.6"]


@pytest.mark.parametrize(
    ("asked", "words"),
    [
        ("10.1.0.4", "in use"),
        ("10.1.0.1", "reserved"),
        ("10.1.0.3", "reserved"),
        ("10.2.0.9", "not in"),
        ("x", "not an IPv4"),
    ],
)
def test_an_address_asked_for_must_be_free_in_range_and_not_reserved(asked: str, words: str) -> None:
    resources = _zone_with("fp-ip-fpabc123-10.1.0.4")
    with pytest.raises(ValidationFailed) as failure:
        nics.allocate([(net(), asked)], resources, "networks")
    assert failure.value.field == "networks[0].ip_address"
    assert words in failure.value.message


def test_a_full_network_says_so() -> None:
    tiny = net(cidr="10.1.0.0/29", gateway="10.1.0.1")
    resources = _zone_with(*[f"fp-ip-fpabc123-10.1.0.{i}" for i in (4, 5, 6)])
    with pytest.raises(ValidationFailed, match="no free address left"):
        nics.allocate([(tiny, None)], resources, "networks")


@given(vnet=st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True), address=st.ip_addresses(v=4))
def test_an_address_tag_says_back_its_vnet_and_address(vnet: str, address: ipaddress.IPv4Address) -> None:
    tag = address_tag(vnet, address)
    assert is_tag(tag)
    assert addresses_in(["fp-vdc-demo", tag]) == [(vnet, address)]


def test_a_vms_nics_name_their_network_mac_and_address() -> None:
    config = parse_config(
        {
            "net0": "virtio=BC:24:11:AA:BB:CC,bridge=fpabc123,firewall=1",
            "ipconfig0": "ip=10.1.0.4/24,gw=10.1.0.1",
            "net1": "virtio,bridge=vmbr0",
        }
    )
    first, second = nics.nics(config, [net()])
    assert (first.key, first.mac, first.address, first.prefix, first.gateway) == (
        "net0",
        "BC:24:11:AA:BB:CC",
        "10.1.0.4",
        24,
        "10.1.0.1",
    )
    assert first.network is not None
    assert first.network.name == "web"
    assert (second.network, second.address, second.bridge) == (None, None, "vmbr0")


def test_a_request_names_a_network_by_id_or_by_name_in_the_zone_and_never_another_vdcs() -> None:
    mine = [net()]
    assert nics.resolve(nics.NicRequest("zone-a/web"), mine, "zone-a", "f").vnet == "fpabc123"
    assert nics.resolve(nics.NicRequest("web"), mine, "zone-a", "f").vnet == "fpabc123"
    with pytest.raises(ValidationFailed, match="no network 'zone-b/web'"):
        nics.resolve(nics.NicRequest("zone-b/web"), mine, "zone-a", "f")


def test_a_vms_resolvers_are_its_networks_in_nic_order_at_most_three() -> None:
    a = Network("d", "z", "a", "v1", "fpzd1", 1, "10.0.0.0/24", "10.0.0.1", ("1.1.1.1", "1.0.0.1"))
    b = Network("d", "z", "b", "v2", "fpzd1", 2, "10.0.1.0/24", "10.0.1.1", ("1.0.0.1", "9.9.9.9", "8.8.8.8"))
    assert nics.nameservers([a, b]) == ("1.1.1.1", "1.0.0.1", "9.9.9.9")


# ------------------------------------------------------------------------------ the zone's network ids


def test_an_organizations_vdc_never_takes_the_last_network_ids_of_a_zone_which_the_platform_keeps() -> None:
    """Every tenant shares a zone's VXLAN/VLAN range: an owner's VDCs stop short of its last tenth, so an
    admin's VDC still gets a network however many VDCs organizations made."""
    ranged = zone(idFirst=100, idLast=119)  # 20 ids: the last 2 free are the platform's
    owners = Vdc.from_spec({"id": "acme-web", "organization": "209462106741852052"})
    platforms = Vdc.from_spec({"id": "ops"})
    taken = set(range(100, 117))  # 3 left
    assert networks.free_tag(ranged, taken, owners) == 117
    with pytest.raises(Conflict, match="keeps for the platform's own VDCs"):
        networks.free_tag(ranged, taken, owners)
    assert networks.free_tag(ranged, taken, platforms) == 118
    assert networks.free_tag(ranged, taken, platforms) == 119
    with pytest.raises(Conflict, match="no network id left"):
        networks.free_tag(ranged, taken, platforms)
