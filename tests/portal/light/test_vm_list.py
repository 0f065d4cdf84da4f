"""The VM list as a tenant works in it: each VM's addresses and compute profile, a search over them, and
start, stop and delete from a row or for several ticked VMs at once (a stop or a delete confirmed first,
naming every VM); the create form leaving the zone to placement. The portal served from this process on
the light world; what an action did is checked in the fake Proxmox's own state.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from tests.apikit import Api
from tests.portal.pagekit import HTMX, create_form, get, post, row_names, served
from tests.portal.served import LightPortal
from tests.vmkit import fake_vm, forget, named, present, put_tagged_vm, vm_names

Make = Callable[..., str]


@pytest.fixture
def names(api: Api, site: LightPortal) -> Iterator[Callable[[str], str]]:
    with vm_names(api, site) as make:
        yield make


@pytest.fixture
def tagged(site: LightPortal) -> Iterator[Make]:
    """VMs put straight into a zone's fake, tagged as flex.plane tags them (``tags``: more tags, such as a
    profile's and an address's); their ids. Gone after the test."""
    made: list[tuple[str, int]] = []

    def make(
        name: str, *, zone: str = "zone-a", vdc: str = "demo", status: str = "stopped", tags: str = ""
    ) -> str:
        pve = site.fakes[zone].pve

        def add() -> int:
            vmid = max([vm.vmid for vm in pve.vms] + [7000]) + 1
            put_tagged_vm(pve, vmid, name, vdc, status=status, tags=tags, disk="4G")
            return vmid

        vmid: int = site.fakes.on_loop(add)
        made.append((zone, vmid))
        return f"{zone}/{vmid}"

    yield make
    for zone, vmid in made:
        forget(site, zone, vmid)


def _row(page: str, ident: str) -> str:
    zone, vmid = ident.split("/")
    found = re.search(rf'<tr id="vm-{zone}-{vmid}".*?</tr>', page, re.S)
    assert found is not None, f"no row for {ident}"
    return found.group(0)


def _cell(row: str, mark: str) -> str:
    found = re.search(rf"<td [^>]*{mark}[^>]*>(.*?)</td>", row, re.S)
    assert found is not None, mark
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


def _messages(page: str) -> list[str]:
    block = re.search(r'<div id="messages".*?</div>', page, re.S)
    assert block is not None
    return [html.unescape(m).strip() for m in re.findall(r"<p [^>]*>(.*?)</p>", block.group(0), re.S)]


def _proxmox_requests(site: LightPortal) -> dict[str, int]:
    return {
        zone: site.fakes.on_loop(lambda f=fake: len(f.pve.requests))
        for zone, fake in site.fakes.zones.items()
    }


def _paths_since(site: LightPortal, marks: dict[str, int]) -> dict[str, list[str]]:
    def since(pve: Any, mark: int) -> list[str]:
        return [str(r[1]).split("?")[0] for r in pve.requests[mark:]]

    return {zone: site.fakes.on_loop(since, fake.pve, marks[zone]) for zone, fake in site.fakes.zones.items()}


# ------------------------------------------------------------------------------------------ the list


def test_a_made_vm_shows_its_profile_and_address_in_the_list_without_a_call_per_vm(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    name = names("listed")
    get(alice, site, "/vdc/demo/vms/new/")  # the form, as a browser gets it first (its CSRF cookie)
    made = post(alice, site, "/vdc/demo/vms/new/", create_form(name=name, disk_gb="10"))
    assert made.status_code == 303, made.text[:2000]
    ((zone, vmid),) = named(site, name)
    ident = f"{zone}/{vmid}"
    config = present(site, ident)["config"]
    address = re.search(r"ip=([0-9.]+)/", config["ipconfig0"])
    assert address is not None

    # The page: from the VDC's pools (what the VDC has), its table asking to be read again with the tags.
    marks = _proxmox_requests(site)
    page = served(alice, site, "/vdc/demo/vms/")
    for zone_reads in _paths_since(site, marks).values():
        assert [p for p in zone_reads if not p.endswith("/version")] == ["/api2/json/pools/fp-demo"]
    table = re.search(r'<div id="vm-table"[^>]*>', page)
    assert table is not None
    assert 'hx-trigger="load"' in table.group(0)
    assert 'hx-get="/vdc/demo/vms/?"' in table.group(0)
    assert _cell(_row(page, ident), "data-vm-profile") == "… being read"

    # The table read again: one /cluster/resources per zone for all its rows, no call per VM.
    marks = _proxmox_requests(site)
    detailed = get(alice, site, "/vdc/demo/vms/", **HTMX, **{"HX-Target": "vm-table"}).text
    for zone_reads in _paths_since(site, marks).values():
        assert [p for p in zone_reads if not p.endswith("/version")] == ["/api2/json/cluster/resources"]
    assert 'hx-trigger="load"' not in detailed
    row = _row(detailed, ident)
    assert _cell(row, "data-vm-profile") == "small"
    assert address.group(1) in _cell(row, "data-vm-addresses")
    # The seeded VMs of demo have no profile or address tag: said so, not left blank.
    assert _cell(_row(detailed, "zone-a/100"), "data-vm-profile") == "\u2013"  # an en dash
    assert _cell(_row(detailed, "zone-a/100"), "data-vm-addresses") == "none"


def test_the_search_matches_name_address_status_zone_and_profile(
    site: LightPortal, alice: requests.Session, tagged: Make
) -> None:
    web = tagged("srch-web", tags=";fp-cp-medium;fp-ip-vsrch-10.77.0.21", status="running")
    db = tagged("srch-db", zone="zone-b", tags=";fp-cp-small;fp-ip-vsrch-10.77.0.22")
    tagged("srch-other", vdc="other", tags=";fp-cp-medium;fp-ip-vsrch-10.77.0.23")

    def found(query: str) -> list[str]:
        table = get(alice, site, f"/vdc/demo/vms/?{query}", **HTMX, **{"HX-Target": "vm-table"})
        assert table.status_code == 200
        assert table.text.lstrip().startswith('<div id="vm-table"')
        return [n for n in row_names(table.text) if n.startswith("srch-")]

    assert found("q=10.77.0.21") == ["srch-web"]
    assert found("q=10.77.0") == ["srch-db", "srch-web"]  # another VDC's VM is never found
    assert found("q=MEDIUM") == ["srch-web"]
    assert found("q=srch-d") == ["srch-db"]
    assert found("q=srch&status=running") == ["srch-web"]
    assert found("q=zone-b") == ["srch-db"]
    assert "srch-db" not in found("q=running")
    assert found("q=vsrch") == []  # the network's VNet is not an address
    page = served(alice, site, "/vdc/demo/vms/?q=10.77.0.22")
    assert 'value="10.77.0.22"' in page
    assert _row(page, db)
    assert f'data-vm="{web}"' not in page


SEARCH = """query($search: String) {
  virtualMachines(first: 50, filter: {search: $search}) { edges { node { name } } } }"""


def test_the_apis_search_finds_what_the_lists_does(api: Api, tagged: Make) -> None:
    tagged("apis-web", tags=";fp-cp-medium;fp-ip-vapis-10.78.0.21", status="running")
    tagged("apis-db", zone="zone-b", tags=";fp-cp-small;fp-ip-vapis-10.78.0.22")
    tagged("apis-other", vdc="other", tags=";fp-cp-medium;fp-ip-vapis-10.78.0.23")

    def found(search: str) -> list[str]:
        answer = api(SEARCH, user="alice", vdc="demo", variables={"search": search})
        assert answer.errors == [], answer.body
        names = [e["node"]["name"] for e in answer.data["virtualMachines"]["edges"]]
        return [n for n in names if n.startswith("apis-")]

    assert found("10.78.0.21") == ["apis-web"]
    assert found("10.78.0") == ["apis-db", "apis-web"]  # another VDC's VM is never found
    assert found("MEDIUM") == ["apis-web"]
    assert found("zone-b") == ["apis-db"]


# ------------------------------------------------------------------------------------------ actions


def test_start_from_a_row_starts_that_vm_and_the_list_says_so(
    site: LightPortal, alice: requests.Session, tagged: Make
) -> None:
    ident = tagged("row-start")
    row = _row(served(alice, site, "/vdc/demo/vms/?q=row-start"), ident)
    assert 'data-action="start"' in row
    assert "Stop…" not in row

    started = post(alice, site, "/vdc/demo/vms/bulk/", {"action": "start", "vms": ident})
    assert started.status_code == 303
    assert started.headers["Location"].startswith("/vdc/demo/vms/?task=")
    assert present(site, ident)["status"] == "running"
    listing = served(alice, site, started.headers["Location"])
    assert "VM row-start was started." in _messages(listing)
    row = _row(listing, ident)
    assert f"/vdc/demo/vms/bulk/?action=stop&amp;vms={ident.replace('/', '%2F')}" in row


def test_several_vms_start_at_once_and_each_is_reported_a_refusal_hiding_none(
    site: LightPortal, alice: requests.Session, tagged: Make
) -> None:
    first = tagged("bulk-a")
    second = tagged("bulk-b", zone="zone-b")
    running = tagged("bulk-c", status="running")
    theirs = tagged("bulk-bobs", vdc="other")

    asked = get(alice, site, f"/vdc/demo/vms/bulk/?action=start&vms={first}&vms={second}&vms={running}")
    assert asked.status_code == 200
    assert 'data-confirm="start"' in asked.text
    assert all(present(site, i)["status"] == "stopped" for i in (first, second))

    done = post(
        alice, site, "/vdc/demo/vms/bulk/", {"action": "start", "vms": [first, theirs, second, running]}
    )
    assert done.status_code == 303
    assert present(site, first)["status"] == "running"
    assert present(site, second)["status"] == "running"
    assert present(site, theirs)["status"] == "stopped"  # bob's VM: as missing as one that does not exist
    said = _messages(served(alice, site, done.headers["Location"]))
    assert "VM bulk-a was started." in said
    assert "VM bulk-b was started." in said
    assert "VM bulk-c is running: there was nothing to do." in said
    assert f"Start of VM {theirs} did not happen: there is no such virtual machine in this VDC" in said
    assert not any("bulk-bobs" in m for m in said)


def test_several_vms_are_deleted_only_once_a_page_naming_them_all_is_confirmed(
    site: LightPortal, alice: requests.Session, tagged: Make
) -> None:
    doomed = [tagged("gone-1"), tagged("gone-2", zone="zone-b", status="running")]

    confirm = get(
        alice, site, f"/vdc/demo/vms/bulk/?action=delete&vms={doomed[0]}&vms={doomed[1]}&vms=zone-a/99999"
    )
    assert confirm.status_code == 200
    text = confirm.text
    assert "Delete these 2 VMs?" in text
    for ident, name in zip(doomed, ("gone-1", "gone-2"), strict=True):
        assert f'data-vm="{ident}"' in text
        assert f'<strong class="font-medium">{name}</strong>' in text
        assert f'<input type="hidden" name="vms" value="{ident}">' in text
    assert "This cannot be undone." in text
    assert "zone-a/99999: no such virtual machine in this VDC" in text
    assert 'data-confirm="delete"' in text

    unconfirmed = post(alice, site, "/vdc/demo/vms/bulk/", {"action": "delete", "vms": doomed})
    assert unconfirmed.status_code == 200
    assert "This cannot be undone." in unconfirmed.text
    assert all(fake_vm(site, ident) is not None for ident in doomed)

    deleted = post(alice, site, "/vdc/demo/vms/bulk/", {"action": "delete", "vms": doomed, "confirm": "yes"})
    assert deleted.status_code == 303
    assert all(fake_vm(site, ident) is None for ident in doomed)
    said = _messages(served(alice, site, deleted.headers["Location"]))
    assert {"VM gone-1 was deleted.", "VM gone-2 was deleted."} <= set(said)


def test_stop_from_a_row_asks_first_then_stops_that_vm(
    site: LightPortal, alice: requests.Session, tagged: Make
) -> None:
    ident = tagged("row-stop", status="running")
    link = re.search(
        r'href="([^"]*bulk/\?action=stop[^"]*)"', _row(served(alice, site, "/vdc/demo/vms/"), ident)
    )
    assert link is not None
    confirm = served(alice, site, html.unescape(link.group(1)))
    assert "Stop VM row-stop?" in confirm
    assert "what its guest OS has not written is lost" in confirm
    assert present(site, ident)["status"] == "running"

    stopped = post(alice, site, "/vdc/demo/vms/bulk/", {"action": "stop", "vms": ident, "confirm": "yes"})
    assert stopped.status_code == 303
    assert present(site, ident)["status"] == "stopped"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"action": "start"}, "Virtual machines: Tick at least one virtual machine."),
        ({"action": "reboot", "vms": "zone-a/100"}, "Action: Select a valid choice."),
        ({"action": "start", "vms": "web-1"}, "Virtual machines: 'web-1' is not a VM id (<zone>/<vmid>)."),
        (
            {"action": "start", "vms": [f"zone-a/{n}" for n in range(1000, 1051)]},
            "Virtual machines: At most 50 virtual machines at once, not 51.",
        ),
    ],
)
def test_a_bulk_request_it_cannot_take_is_said_on_the_list_naming_the_field(
    site: LightPortal, alice: requests.Session, data: dict[str, Any], said: str
) -> None:
    answer = post(alice, site, "/vdc/demo/vms/bulk/", data)
    assert answer.status_code == 303
    assert answer.headers["Location"] == "/vdc/demo/vms/"
    assert any(m.startswith(said) for m in _messages(served(alice, site, answer.headers["Location"])))


# ------------------------------------------------------------------------------------------ create and one VM


def test_the_create_form_leaves_the_zone_to_placement_first(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    text = served(alice, site, "/vdc/demo/vms/new/")
    select = re.search(r'<select name="zone".*?</select>', text, re.S)
    assert select is not None
    options = re.findall(r'<option value="([^"]*)"( selected)?>', select.group(0))
    assert options[0] == ("", " selected")
    assert [value for value, chosen in options if chosen] == [""]

    # Sent as it comes, the VM goes where placement puts it.
    name = names("placed")
    made = post(alice, site, "/vdc/demo/vms/new/", create_form(name=name, disk_gb="10", zone=""))
    assert made.status_code == 303, made.text[:2000]
    assert len(named(site, name)) == 1


def test_the_vms_page_shows_the_address_its_nic_table_shows(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    name = names("facts")
    get(alice, site, "/vdc/demo/vms/new/")
    made = post(alice, site, "/vdc/demo/vms/new/", create_form(name=name, disk_gb="10"))
    assert made.status_code == 303, made.text[:2000]
    ((zone, vmid),) = named(site, name)
    page = served(alice, site, f"/vdc/demo/vms/{zone}/{vmid}/")
    nic = re.search(r"<td [^>]*data-nic-address>([0-9.]+)/", page)
    assert nic is not None
    ips = re.search(r"<dd data-vm-ips>(.*?)</dd>", page, re.S)
    assert ips is not None
    assert nic.group(1) in ips.group(1)
    assert "not reported" not in ips.group(1)


@pytest.mark.parametrize(
    "cursor", ["not-a-cursor", "WyJ3ZWIiLCAiem9uZS1hIiwgSW5maW5pdHld"]
)  # ["web", "zone-a", Infinity]
def test_a_page_link_with_a_cursor_it_cannot_read_is_a_form_error_on_the_list(
    site: LightPortal, alice: requests.Session, cursor: str
) -> None:
    for headers in ({}, {**HTMX, "HX-Target": "vm-table"}):
        page = get(alice, site, f"/vdc/demo/vms/?after={cursor}", **headers)
        assert page.status_code == 200, page.text[:2000]
        assert "This page link is out of date" in page.text, page.text[:3000]
