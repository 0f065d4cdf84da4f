"""The dashboard's and the VM page's tasks are the API's ``tasks``; the dashboard's VM counts lead to
the VM list filtered to exactly the VMs counted."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from tests.apikit import Api
from tests.portal.served import LightPortal
from tests.vmkit import act, demo_nodes, ok, scratch_vdcs, zone_nodes

TASKS = "query($first: Int, $vm: ID) { tasks(first: $first, vm: $vm) { id type } }"
TASK_LINK = re.compile(r'<tr [^>]*data-task-row[^>]*>.*?href="/vdc/demo/tasks/([^/"]+)/"', re.S)
STATUS_LINE = re.compile(r'<li data-vm-status="([^"]+)">(.*?)</li>', re.S)
STATUS_LINK = re.compile(r'<a [^>]*href="([^"]+)">')
COUNT = re.compile(r"<span>(\d+)</span>")
BUSY = re.compile(r'data-vm-busy="([^"]+)">(\d+) busy')
TASK_LIST = re.compile(r"^/nodes/[^/]+/tasks\Z")
# The dashboard's newest task row: the task's link text and the VM cell.
TASK_ROW = re.compile(
    r'<tr [^>]*data-task-row.*?href="/vdc/demo/tasks/[^"]+/">([^<]+)</a></td>\s*<td[^>]*>(.*?)</td>', re.S
)
HISTORY_TITLE = re.compile(r'<tr [^>]*data-task-row>.*?href="/vdc/demo/tasks/[^"]+/">([^<]+)</a>', re.S)
ROW_NAME = re.compile(r'<th scope="row"[^>]*><a [^>]*>([^<]+)</a></th>')
DB_1 = "zone-a/101"  # devstack/seed.py: alice's VM on pve2, stopped


@pytest.fixture
def vdc_of(api: Api, site: LightPortal) -> Iterator[Callable[..., str]]:
    with scratch_vdcs(api, site) as make:
        yield make


def get(session: requests.Session, site: LightPortal, path: str) -> requests.Response:
    page = session.get(f"{site.url}{path}", timeout=60)
    assert page.status_code == 200, page.text[:500]
    return page


def bounce(api: Api) -> None:
    ok(act(api, "alice", "stopVirtualMachine", DB_1))  # nothing to do unless a test left it running
    ok(act(api, "alice", "startVirtualMachine", DB_1))
    ok(act(api, "alice", "stopVirtualMachine", DB_1))


def api_task_ids(api: Api, **variables: Any) -> list[str]:
    answer = api(TASKS, user="alice", vdc="demo", variables=variables)
    assert answer.errors == [], answer.errors
    return [task["id"] for task in answer.data["tasks"]]


def add_vms(site: LightPortal, vdc: str, vms: list[tuple[str, str, str | None]]) -> None:
    """``(name, status, lock)`` VMs of ``vdc`` put straight into zone-a's fake, tagged as flex.plane
    tags them."""
    pve = site.fakes["zone-a"].pve

    def add() -> None:
        first = max([vm.vmid for vm in pve.vms] + [6000]) + 1
        for offset, (name, status, lock) in enumerate(vms):
            vmid = first + offset
            config = {"cores": 1, "memory": 512, "tags": f"fp-vdc-{vdc}"}
            pve.add_vm(vmid, name, node="pve1", status=status, config=config, pool=f"fp-{vdc}")
            pve.vm(vmid).lock = lock

    site.fakes.on_loop(add)


def proxmox_reads(site: LightPortal) -> dict[tuple[str, str], int]:
    """How often each zone's fake was asked for ``/cluster/resources`` and for each node's task list."""

    def count(pve: Any) -> dict[str, int]:
        counted: dict[str, int] = {}
        for method, path, _body in pve.requests:
            short = path.removeprefix("/api2/json")
            if method == "GET" and (short == "/cluster/resources" or TASK_LIST.match(short)):
                counted[short] = counted.get(short, 0) + 1
        return counted

    zones = site.fakes.zones.items()
    return {
        (zone, path): n for zone, fake in zones for path, n in site.fakes.on_loop(count, fake.pve).items()
    }


def words(fragment: str) -> str:
    """An HTML fragment's text, its tags and runs of white space each one space."""
    return " ".join(re.sub(r"<[^>]+>", " ", fragment).split())


def test_the_dashboards_recent_tasks_are_the_apis(
    site: LightPortal, api: Api, alice: requests.Session
) -> None:
    bounce(api)
    page = get(alice, site, "/vdc/demo/")
    assert TASK_LINK.findall(page.text) == api_task_ids(api, first=10)


def test_the_dashboard_reads_each_zone_once_and_each_node_of_the_zones_holding_the_vdcs_vms_once(
    site: LightPortal, api: Api, alice: requests.Session
) -> None:
    bounce(api)
    before = proxmox_reads(site)
    get(alice, site, "/vdc/demo/")
    after = proxmox_reads(site)
    read = {key: n - before.get(key, 0) for key, n in after.items() if n != before.get(key, 0)}
    resources = {key: n for key, n in read.items() if key[1] == "/cluster/resources"}
    task_lists = {key: n for key, n in read.items() if key[1] != "/cluster/resources"}
    assert resources == {(zone, "/cluster/resources"): 1 for zone in site.fakes.zones}
    zones = {zone for zone, _ in demo_nodes(site)}
    assert task_lists == {(zone, f"/nodes/{node}/tasks"): 1 for zone, node in zone_nodes(site, zones)}


def test_a_vms_page_lists_its_tasks_as_the_api_does(
    site: LightPortal, api: Api, alice: requests.Session
) -> None:
    bounce(api)
    page = get(alice, site, "/vdc/demo/vms/zone-a/101/")
    shown = TASK_LINK.findall(page.text)
    assert shown == api_task_ids(api, first=10, vm=DB_1)
    assert len(shown) >= 2


def test_tasks_are_shown_in_words_with_their_vms_name(
    site: LightPortal, api: Api, alice: requests.Session
) -> None:
    bounce(api)
    dashboard = get(alice, site, "/vdc/demo/").text
    row = TASK_ROW.search(dashboard)
    assert row is not None, dashboard[:2000]
    link, vm = html.unescape(row.group(1)), html.unescape(words(row.group(2)))
    assert (link, vm) == ("Stop", "db-1 (zone-a/101)")
    assert ">qmstop<" not in dashboard
    history = get(alice, site, "/vdc/demo/vms/zone-a/101/").text
    assert [html.unescape(t) for t in HISTORY_TITLE.findall(history)][:2] == ["Stop", "Start"]
    task_id = api_task_ids(api, first=1, vm=DB_1)[0]
    page = get(alice, site, f"/vdc/demo/tasks/{task_id}/").text
    heading = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S)
    assert heading is not None
    assert re.sub(r"<[^>]+>|\s+", " ", heading.group(1)).split() == [
        "Stop",
        "of",
        "VM",
        "db-1",
        "(zone-a/101)",
    ]
    assert '<span data-task-field="title">Stop</span>' in page


def test_each_status_count_leads_to_the_list_of_exactly_those_vms(
    site: LightPortal, admin: requests.Session, vdc_of: Callable[..., str]
) -> None:
    vdc = vdc_of()  # its VMs go with it
    add_vms(
        site,
        vdc,
        [
            ("s-1", "stopped", None),
            ("s-2", "stopped", "backup"),
            ("s-3", "stopped", None),
            ("r-1", "running", None),
        ],
    )
    page = get(admin, site, f"/vdc/{vdc}/")
    lines = dict(STATUS_LINE.findall(page.text))
    assert set(lines) == {"stopped", "running"}
    counts = {}
    for status, body in lines.items():
        count = COUNT.search(body)
        link = STATUS_LINK.search(body)
        assert count is not None
        assert link is not None, f"the {status} count links nowhere"
        counts[status] = int(count.group(1))
        listed = get(admin, site, html.unescape(link.group(1)))
        assert "Select a valid choice" not in listed.text
        assert len(ROW_NAME.findall(listed.text)) == counts[status]
    assert counts == {"stopped": 3, "running": 1}
    # The VDC's dashboard counts its pools' members, which carry no lock: what is busy is on each
    # VM's own page.
    assert BUSY.findall(lines["stopped"]) == []
    assert BUSY.findall(lines["running"]) == []
