"""The network pages and a VM's NICs as a browser uses them: ``requests`` sessions signed in as the portal's
login records them, the portal served from this process (tests/portal/served.py), Proxmox the light world's
fakepve with its stateful SDN.

What a page did is checked where it lands: in the fake Proxmox's SDN and in the VMs' configs.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from django import forms as django_forms

from orchestrator.models.networks import Network
from orchestrator.services.networks.nics import NicRequest
from portal.networks.forms import NetworkChoice
from tests.apikit import Api
from tests.portal.pagekit import blanked, create_form, field_error, get, post
from tests.portal.served import LightPortal
from tests.vmkit import create, named, present, vm_names

DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { message } } }"
ROW = re.compile(r'<tr data-network="([^"]+)">(.*?)</tr>', re.S)


@dataclass
class Scratch:
    """A test's VM names and networks: its VMs are deleted afterwards, then its networks."""

    names: Callable[[str], str]
    networks: list[tuple[str, str]] = field(default_factory=list)

    def network(self, vdc: str = "demo", zone: str = "zone-a") -> tuple[str, str]:
        """A new network's name and a CIDR of its own, to be deleted afterwards."""
        name = f"n{uuid.uuid4().hex[:8]}"
        self.networks.append((vdc, f"{zone}/{name}"))
        octets = uuid.uuid4().bytes
        return name, f"10.{100 + octets[0] % 100}.{octets[1]}.0/24"


@pytest.fixture(scope="module")
def defaults(api: Api, site: LightPortal) -> None:
    """VDC demo's default network of zone-a, which the first create of a VM there makes when the site
    has none yet (a VM made and deleted for the module)."""
    with vm_names(api, site) as names:
        assert create(api, "alice", "demo", name=names("default-maker"))["errors"] == []


@pytest.fixture
def scratch(api: Api, site: LightPortal) -> Iterator[Scratch]:
    made: Scratch | None = None
    try:
        with vm_names(api, site) as names:
            made = Scratch(names)
            yield made
    finally:
        for vdc, ident in made.networks if made else []:
            api(DELETE_NETWORK, user="admin", vdc=vdc, variables={"id": ident})


def sdn_vnets(site: LightPortal, zone: str) -> dict[str, dict[str, Any]]:
    """The fake cluster's VNets as written (pending changes included)."""
    fake = site.fakes[zone].pve
    found: dict[str, dict[str, Any]] = site.fakes.on_loop(
        lambda: {k: dict(v) for k, v in fake.sdn.vnets.items()}
    )
    return found


def vnet_of(site: LightPortal, zone: str, vdc: str, name: str) -> str | None:
    """The VNet id of a VDC's network, from the aliases the fake holds."""
    for vnet, options in sdn_vnets(site, zone).items():
        alias = str(options.get("alias") or "")
        if f"vdc={vdc} " in alias and f" net={name} " in alias:
            return vnet
    return None


def rows(page: str) -> dict[str, str]:
    """The networks page's rows by network id, as text."""
    return {ident: html.unescape(re.sub(r"<[^>]+>|\s+", " ", body)) for ident, body in ROW.findall(page)}


def new_network(session: requests.Session, site: LightPortal, vdc: str, **fields: str) -> requests.Response:
    get(session, site, f"/vdc/{vdc}/networks/")
    values = {"zone": "zone-a", "gateway": "", "dns": "", **fields}
    return post(session, site, f"/vdc/{vdc}/networks/new/", values)


def made_network(session: requests.Session, site: LightPortal, scratch: Scratch) -> tuple[str, str]:
    """A scratch network of VDC demo, made through the portal's form: its name and CIDR."""
    name, cidr = scratch.network()
    assert new_network(session, site, "demo", name=name, cidr=cidr).status_code == 303
    return name, cidr


def nic_rows(page: str) -> dict[str, str]:
    return {
        key: html.unescape(re.sub(r"<[^>]+>|\s+", " ", body))
        for key, body in re.findall(r'<tr [^>]*data-nic="([^"]+)">(.*?)</tr>', page, re.S)
    }


# ------------------------------------------------------------------------------------------ networks


def test_the_networks_page_lists_the_vdcs_networks_and_marks_the_default(
    site: LightPortal, alice: requests.Session, scratch: Scratch, defaults: None
) -> None:
    name, cidr = scratch.network()
    made = new_network(alice, site, "demo", name=name, cidr=cidr, dns="192.0.2.53, 192.0.2.54")
    assert made.status_code == 303, field_error(made.text, "cidr") or made.text[:2000]
    assert made.headers["Location"] == "/vdc/demo/networks/"

    page = get(alice, site, "/vdc/demo/networks/")
    assert page.status_code == 200
    shown = rows(page.text)
    row = shown[f"zone-a/{name}"]
    gateway = cidr.replace(".0/24", ".1")
    assert cidr in row
    assert gateway in row
    assert "192.0.2.53, 192.0.2.54" in row
    assert "zone-a" in row
    assert "default" not in row
    assert "data-default" in next(
        body for ident, body in ROW.findall(page.text) if ident.endswith("/default")
    )
    assert f'href="/vdc/demo/networks/zone-a/{name}/delete/"' in page.text
    assert 'data-action="network.create"' in page.text
    assert re.search(r"\d+ of 10 networks", page.text)
    # Where it landed: a VNet with its subnet, in the fake's SDN.
    assert vnet_of(site, "zone-a", "demo", name) is not None


def test_bad_input_shows_the_form_again_with_the_fields_error(
    site: LightPortal, alice: requests.Session
) -> None:
    before = sdn_vnets(site, "zone-a")
    not_a_network = new_network(alice, site, "demo", name="ok-name", cidr="10.1.2.300/24")
    assert not_a_network.status_code == 200
    assert "is not an IPv4 network" in field_error(not_a_network.text, "cidr")
    assert re.search(r'<input[^>]*name="name"[^>]*value="ok-name"', not_a_network.text)

    public = new_network(alice, site, "demo", name="ok-name", cidr="8.8.8.0/24")
    assert "is not private" in field_error(public.text, "cidr")

    bad_name = new_network(alice, site, "demo", name="Not_A_Label", cidr="10.77.0.0/24")
    assert "is not a DNS label" in field_error(bad_name.text, "name")

    bad_gateway = new_network(alice, site, "demo", name="ok-name", cidr="10.77.0.0/24", gateway="10.78.0.1")
    assert "is not a host address of 10.77.0.0/24" in field_error(bad_gateway.text, "gateway")

    taken = new_network(alice, site, "demo", name="default", cidr="10.77.0.0/24")
    assert "already has a network named 'default'" in field_error(taken.text, "name")
    assert sdn_vnets(site, "zone-a") == before


def test_a_delete_asks_first_and_is_refused_naming_the_vms_on_the_network(
    site: LightPortal, alice: requests.Session, scratch: Scratch
) -> None:
    name, _ = made_network(alice, site, scratch)
    url = f"/vdc/demo/networks/zone-a/{name}/delete/"
    confirm = get(alice, site, url)
    assert confirm.status_code == 200
    assert f"Delete network {name}?" in confirm.text
    assert 'data-action="network.delete"' in confirm.text
    assert post(alice, site, url, {}).status_code == 200  # not confirmed: asked again, nothing deleted
    assert vnet_of(site, "zone-a", "demo", name) is not None

    vm_name = scratch.names("on-net")
    made = post(
        alice,
        site,
        "/vdc/demo/vms/new/",
        create_form(name=vm_name, networks=f"zone-a/{name}", idempotency_key=f"{vm_name}-k"),
    )
    assert made.status_code == 303, made.text[:2000]
    refused = post(alice, site, url, {"confirm": "yes"})
    assert refused.status_code == 409
    said = html.unescape(refused.text)
    assert f"in use by 1 VM(s): {vm_name}" in said
    assert vnet_of(site, "zone-a", "demo", name) is not None


def test_a_confirmed_delete_removes_the_vnet(
    site: LightPortal, alice: requests.Session, scratch: Scratch
) -> None:
    name, _ = made_network(alice, site, scratch)
    deleted = post(alice, site, f"/vdc/demo/networks/zone-a/{name}/delete/", {"confirm": "yes"})
    assert deleted.status_code == 303
    assert deleted.headers["Location"] == "/vdc/demo/networks/"
    page = get(alice, site, "/vdc/demo/networks/")
    assert f"Network {name} of zone zone-a was deleted." in html.unescape(page.text)
    assert f"zone-a/{name}" not in rows(page.text)
    assert vnet_of(site, "zone-a", "demo", name) is None


# ------------------------------------------------------------------------------------------ VMs on networks


def test_the_create_form_offers_the_vdcs_networks_with_default_ticked(
    site: LightPortal, alice: requests.Session, scratch: Scratch
) -> None:
    name, cidr = made_network(alice, site, scratch)
    page = get(alice, site, "/vdc/demo/vms/new/").text
    default = re.search(r'<input[^>]*name="networks"[^>]*value="default"[^>]*>', page)
    assert default is not None
    assert "checked" in default.group(0)
    mine = re.search(rf'<input[^>]*name="networks"[^>]*value="zone-a/{name}"[^>]*>', page)
    assert mine is not None
    assert "checked" not in mine.group(0)
    assert f'name="address__zone-a__{name}"' in page
    assert f"{name} ({cidr})" in page
    assert "in zone-a: the VM goes there" in page


def test_a_vm_made_on_a_chosen_network_with_its_address_shows_the_nic_on_its_page(
    site: LightPortal, alice: requests.Session, scratch: Scratch
) -> None:
    name, cidr = made_network(alice, site, scratch)
    address = cidr.replace(".0/24", ".42")
    vm_name = scratch.names("nic")
    form = create_form(name=vm_name, networks=f"zone-a/{name}", idempotency_key=f"{vm_name}-k")
    made = post(alice, site, "/vdc/demo/vms/new/", {**form, f"address__zone-a__{name}": address})
    assert made.status_code == 303, made.text[:2000]
    ((zone, vmid),) = named(site, vm_name)
    config = present(site, f"{zone}/{vmid}")["config"]
    vnet = vnet_of(site, "zone-a", "demo", name)
    assert f"bridge={vnet}" in config["net0"]
    assert config["ipconfig0"].startswith(f"ip={address}/24")
    assert "net1" not in config

    page = get(alice, site, urlsplit(made.headers["Location"]).path).text
    nic = nic_rows(page)["net0"]
    assert name in nic
    assert f"{address}/24" in nic
    assert re.search(r"([0-9A-F]{2}:){5}[0-9A-F]{2}", nic, re.I)  # its MAC
    assert 'data-action="network.attach"' in page
    assert 'data-action="security-group.assign"' in page


def test_a_bad_address_is_said_next_to_its_networks_address_field(
    site: LightPortal, alice: requests.Session, scratch: Scratch
) -> None:
    name, cidr = made_network(alice, site, scratch)
    vm_name = scratch.names("bad-address")
    form = create_form(name=vm_name, networks=f"zone-a/{name}")
    outside = post(alice, site, "/vdc/demo/vms/new/", {**form, f"address__zone-a__{name}": "192.168.99.9"})
    assert outside.status_code == 200
    assert f"is not in the network's {cidr}" in field_error(outside.text, f"address__zone-a__{name}")

    unticked = post(
        alice, site, "/vdc/demo/vms/new/", {**create_form(name=vm_name), f"address__zone-a__{name}": "x"}
    )
    assert "Tick this network" in field_error(unticked.text, f"address__zone-a__{name}")

    wrong_zone = post(alice, site, "/vdc/demo/vms/new/", {**form, "zone": "zone-b"})
    assert "its networks must be there too" in field_error(wrong_zone.text, "networks")
    assert named(site, vm_name) == []


def test_a_network_is_attached_and_detached_from_the_vms_page(
    site: LightPortal, alice: requests.Session, scratch: Scratch
) -> None:
    name, cidr = made_network(alice, site, scratch)
    vm_name = scratch.names("attach")
    made = post(alice, site, "/vdc/demo/vms/new/", create_form(name=vm_name, idempotency_key=f"{vm_name}-k"))
    assert made.status_code == 303, made.text[:2000]
    ((zone, vmid),) = named(site, vm_name)
    vm_page = f"/vdc/demo/vms/{zone}/{vmid}/"
    assert list(nic_rows(get(alice, site, vm_page).text)) == ["net0"]  # the default network

    bad = post(alice, site, f"{vm_page}nics/attach/", {"network": name, "ip_address": "10.0.0.1"})
    assert bad.status_code == 200
    assert "is not in the network's" in field_error(bad.text, "ip_address")

    address = cidr.replace(".0/24", ".77")
    attached = post(alice, site, f"{vm_page}nics/attach/", {"network": name, "ip_address": address})
    assert attached.status_code == 303, attached.text[:2000]
    assert attached.headers["Location"] == vm_page
    config = present(site, f"{zone}/{vmid}")["config"]
    assert config["ipconfig1"].startswith(f"ip={address}/24")
    page = html.unescape(get(alice, site, vm_page).text)
    assert "at its next boot" in page
    assert f"{address}/24" in nic_rows(page)["net1"]

    detach = f"{vm_page}nics/{name}/detach/"
    assert f"Detach network {name} from VM {vm_name}?" in get(alice, site, detach).text
    detached = post(alice, site, detach, {"confirm": "yes"})
    assert detached.status_code == 303
    config = present(site, f"{zone}/{vmid}")["config"]
    assert "net1" not in config
    assert "ipconfig1" not in config
    assert list(nic_rows(get(alice, site, vm_page).text)) == ["net0"]


# ------------------------------------------------------------------------------------------ bob


def test_bob_sees_none_of_alices_networks_and_gets_the_page_of_a_missing_one(
    site: LightPortal, alice: requests.Session, bob: requests.Session, scratch: Scratch
) -> None:
    name, cidr = made_network(alice, site, scratch)
    assert get(bob, site, "/vdc/demo/networks/").status_code == 404
    his = get(bob, site, "/vdc/other/networks/")
    assert his.status_code == 200
    assert name not in his.text
    assert cidr not in his.text

    alices = get(bob, site, f"/vdc/other/networks/zone-a/{name}/delete/")
    missing = get(bob, site, "/vdc/other/networks/zone-a/no-such-net/delete/")
    assert alices.status_code == missing.status_code == 404
    assert blanked(alices.text, name) == blanked(missing.text, "no-such-net")
    refused = post(bob, site, f"/vdc/other/networks/zone-a/{name}/delete/", {"confirm": "yes"})
    assert refused.status_code == 404
    assert vnet_of(site, "zone-a", "demo", name) is not None


# ------------------------------------------------------------------------------------------ the form's rules


def _choice(data: dict[str, Any]) -> tuple[Any, NetworkChoice]:
    """A bare form with the create form's network fields, filled in with ``data``."""
    nets = [
        Network("demo", "zone-a", "default", "fpaaaaaa", "fpzaaaaa", 1, "10.0.0.0/24", "10.0.0.1"),
        Network("demo", "zone-a", "db", "fpbbbbbb", "fpzaaaaa", 2, "10.9.0.0/24", "10.9.0.1"),
    ]
    form = django_forms.Form(data)
    choice = NetworkChoice(form, nets)
    assert form.is_valid(), form.errors
    choice.clean(form.cleaned_data)
    return form, choice


def test_default_alone_without_an_address_asks_for_the_services_default() -> None:
    assert _choice({"networks": ["default"]})[1].requests() is None
    assert _choice({})[1].requests() is None  # none ticked: the default too


def test_chosen_networks_are_asked_for_in_order_with_their_addresses() -> None:
    data = {"networks": ["zone-a/db", "default"], "address__zone-a__db": " 10.9.0.20 "}
    form, choice = _choice(data)
    assert choice.requests() == (NicRequest("default"), NicRequest("zone-a/db", "10.9.0.20"))
    # The service counts the NICs as they were asked for: its errors land on their fields.
    assert choice.field_for("networks[1].ip_address") == "address__zone-a__db"
    assert choice.field_for("networks[0].network") == "networks"
    assert choice.field_for("networks") == "networks"
    assert choice.field_for("name") is None
    assert not form.errors


def test_an_address_for_a_network_not_ticked_is_an_error_on_that_address() -> None:
    form, _ = _choice({"networks": ["default"], "address__zone-a__db": "10.9.0.20"})
    assert form.errors["address__zone-a__db"] == ["Tick this network to give its NIC an address."]
