"""The edge gateway pages, end to end: ``requests`` sessions signed in through the world's identity
provider, the portal under uvicorn, the gateways' ConfigMaps and the world's agents (as root, building the
gateway on this machine, where the module makes the bridges a node would have).

alice acts in her VDC demo (zone-a gets an external network for the module); bob sees none of it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from devstack.world import World
from tests.apikit import GraphQL
from tests.gatewaykit import ZONE, bridge, clean_gateway, demo_gateway, external_network, unbridge, vnets_of
from tests.portal.pagekit import field_error, get, post
from tests.vmkit import create, vm_names

IP_ROW = re.compile(r'<tr data-public-ip="([^"]+)">(.*?)</tr>', re.S)
FORWARD_ROW = re.compile(r'<tr data-forward="([^"]+)">(.*?)</tr>', re.S)


def text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>|\s+", " ", fragment)).strip()


@pytest.fixture(scope="module")
def vm(api: GraphQL, world: World) -> Iterator[dict[str, Any]]:
    """zone-a with an external network, and a VM of alice's in it (its id, page path and address); the
    bridges of demo's VNets in zone-a on this machine; demo's gateway cleaned up afterwards."""
    with demo_gateway(), external_network(api, world, "p"), vm_names(api, world) as names:
        made = create(api, "alice", "demo", name=names("web"))
        assert made["errors"] == [], made["errors"]
        ident = made["virtualMachine"]["id"]
        nics = api(
            "query($id: ID!) { virtualMachine(id: $id) { nics { ipAddress } } }",
            user="alice",
            vdc="demo",
            variables={"id": ident},
        ).data["virtualMachine"]["nics"]
        vnets = vnets_of(api, "demo")
        for vnet in vnets:
            bridge(vnet)
        try:
            yield {"id": ident, "path": f"/vdc/demo/vms/{ident}/", "address": nics[0]["ipAddress"]}
        finally:
            clean_gateway(api, "demo")
            for vnet in vnets:
                unbridge(vnet)


def allocate(session: requests.Session, world: World) -> str:
    """A public IP allocated through the page's form; its address, as the page then lists it."""
    before = set(dict(IP_ROW.findall(get(session, world, "/vdc/demo/public-ips/").text)))
    done = post(session, world, "/vdc/demo/public-ips/new/", {"zone": ZONE})
    assert done.status_code == 303, field_error(done.text, "zone") or done.text[:2000]
    assert done.headers["Location"] == "/vdc/demo/public-ips/"
    after = dict(IP_ROW.findall(get(session, world, "/vdc/demo/public-ips/").text))
    [address] = set(after) - before
    return address


def test_alice_allocates_a_public_ip_forwards_a_port_to_her_vm_and_sees_it_on_the_vms_page(
    world: World, alice: requests.Session, vm: dict[str, Any]
) -> None:
    address = allocate(alice, world)
    form = {
        "public_ip": address,
        "protocol": "tcp",
        "port": "8080",
        "to_address": vm["address"],
        "to_port": "80",
    }
    done = post(alice, world, "/vdc/demo/port-forwards/new/", form)
    assert done.status_code == 303, [field_error(done.text, f) for f in form]
    page = get(alice, world, "/vdc/demo/port-forwards/").text
    shown = {key: text(body) for key, body in FORWARD_ROW.findall(page)}
    assert vm["address"] in shown[f"{address}:8080/tcp"]
    again = post(alice, world, "/vdc/demo/port-forwards/new/", form)
    assert again.status_code == 200
    assert "already forwarded" in field_error(again.text, "port")
    out_of_range = post(alice, world, "/vdc/demo/port-forwards/new/", {**form, "port": "70000"})
    assert "outside 1-65535" in field_error(out_of_range.text, "port")
    vm_page = get(alice, world, vm["path"]).text
    assert f'data-vm-forward="{address}:8080/tcp"' in vm_page
    removed = post(alice, world, f"/vdc/demo/port-forwards/{address}/tcp/8080/remove/", {"confirm": "yes"})
    assert removed.status_code == 303
    assert f'data-forward="{address}:8080/tcp"' not in get(alice, world, "/vdc/demo/port-forwards/").text


def test_a_public_ips_one_to_one_nat_shows_on_the_list_and_the_vms_page_and_goes_with_its_release(
    world: World, alice: requests.Session, vm: dict[str, Any]
) -> None:
    address = allocate(alice, world)
    done = post(alice, world, f"/vdc/demo/public-ips/{address}/nat/", {"to_address": vm["address"]})
    assert done.status_code == 303, done.text[:2000]
    row = dict(IP_ROW.findall(get(alice, world, "/vdc/demo/public-ips/").text))[address]
    assert vm["address"] in text(row)
    assert f'data-vm-public-ip="{address}"' in get(alice, world, vm["path"]).text
    confirm = get(alice, world, f"/vdc/demo/public-ips/{address}/release/")
    assert confirm.status_code == 200
    assert "goes back to the zone's pool" in confirm.text
    released = post(alice, world, f"/vdc/demo/public-ips/{address}/release/", {"confirm": "yes"})
    assert released.status_code == 303
    assert address not in dict(IP_ROW.findall(get(alice, world, "/vdc/demo/public-ips/").text))


def test_the_gateway_firewall_page_adds_and_removes_a_rule_and_says_a_bad_one_next_to_its_field(
    world: World, alice: requests.Session, vm: dict[str, Any]
) -> None:
    rule = {
        "zone": ZONE,
        "direction": "in",
        "action": "allow",
        "protocol": "tcp",
        "destination": "",
        "source": "",
    }
    bad = post(alice, world, "/vdc/demo/gateway-firewall/new/", {**rule, "port_from": "90", "port_to": "80"})
    assert bad.status_code == 200
    assert "below portFrom" in field_error(bad.text, "port_to")
    done = post(alice, world, "/vdc/demo/gateway-firewall/new/", {**rule, "port_from": "443"})
    assert done.status_code == 303, done.text[:2000]
    page = get(alice, world, "/vdc/demo/gateway-firewall/").text
    assert 'data-gateway="zone-a"' in page
    assert 'data-rule="0"' in page
    assert "443" in text(page.split('data-rule="0"')[1].split("</tr>")[0])
    removed = post(alice, world, f"/vdc/demo/gateway-firewall/{ZONE}/0/remove/", {"confirm": "yes"})
    assert removed.status_code == 303
    assert 'data-rule="0"' not in get(alice, world, "/vdc/demo/gateway-firewall/").text


def test_bob_gets_the_not_found_page_for_alices_public_ips_and_sees_none_of_them(
    world: World, alice: requests.Session, bob: requests.Session, vm: dict[str, Any]
) -> None:
    address = allocate(alice, world)
    assert get(bob, world, "/vdc/demo/public-ips/").status_code == 404
    assert get(bob, world, f"/vdc/other/public-ips/{address}/release/").status_code == 404
    assert (
        post(bob, world, f"/vdc/other/public-ips/{address}/release/", {"confirm": "yes"}).status_code == 404
    )
    assert address not in get(bob, world, "/vdc/other/public-ips/").text
    assert address in get(alice, world, "/vdc/demo/public-ips/").text  # still alice's
