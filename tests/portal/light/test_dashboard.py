"""The start of the portal: ``/`` and the VDC dashboard, as alice, bob and admin see them."""

from __future__ import annotations

import re
from collections import Counter

from orchestrator.services.tasks import decode_task_id
from tests.apikit import Api
from tests.portal.served import LightPortal
from tests.portal.sessionkit import recorded_session
from tests.vmkit import LIST, act, ok, payload, restore

QUOTA = re.compile(r'data-quota="([^"]+)">.*?(\d+)(?: \w+)? of (\d+)', re.S)
VM_STATUS = re.compile(r'data-vm-status="([^"]+)">.*?<span>(\d+)</span>', re.S)
VM_TOTAL = re.compile(r"data-vm-total>(\d+)<")
TASK_ROW = re.compile(r'data-task-id="([^"]+)" data-task-kind="(\w+)"')
# The CSRF token is masked afresh in every answer (in hx-headers and in the logout form).
CSRF = re.compile(r'"X-CSRFToken": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"')
DB_1 = "zone-a/101"  # devstack/seed.py: alice's VM, stopped


def bounce(api: Api) -> tuple[str, str]:
    """Start alice's stopped VM db-1 and stop it again (as it was): the two tasks' ids."""
    ok(act(api, "alice", "stopVirtualMachine", DB_1))  # nothing to do unless a test left it running
    started = ok(act(api, "alice", "startVirtualMachine", DB_1))["task"]["id"]
    stopped = ok(act(api, "alice", "stopVirtualMachine", DB_1))["task"]["id"]
    return started, stopped


def upid(task_id: str) -> str:
    """The Proxmox task a task id names (what the assertions compare: the page shows tasks, not ids)."""
    return decode_task_id(task_id)[1].raw


def same_page(text: str, ident: str) -> str:
    """A page with ``ident`` and the (per-answer) masked CSRF token taken out."""
    return CSRF.sub("", text.replace(ident, "X"))


def dashboard(site: LightPortal, username: str = "alice") -> str:
    landed = site.session(username).get(f"{site.url}/vdc/demo/", timeout=30)
    assert landed.status_code == 200
    return landed.text


def test_alice_starts_on_her_vdcs_dashboard(site: LightPortal) -> None:
    session = site.session("alice")
    home = session.get(f"{site.url}/", allow_redirects=False, timeout=30)
    assert home.status_code == 302
    assert home.headers["Location"] == "/vdc/demo/"


def test_an_admin_in_no_vdc_starts_in_the_admin_area(site: LightPortal) -> None:
    session = site.session("admin")
    home = session.get(f"{site.url}/", allow_redirects=False, timeout=30)
    assert home.status_code == 302
    assert home.headers["Location"] == "/admin/"


def test_a_user_in_no_vdc_is_told_so(site: LightPortal) -> None:
    page = recorded_session(site, ["USER"]).get(f"{site.url}/", timeout=30)
    assert page.status_code == 200
    assert "You are not a member of any VDC yet" in page.text


def test_the_dashboard_shows_usage_against_each_quota_as_the_api_does(site: LightPortal, api: Api) -> None:
    page = dashboard(site)
    amounts = "{ vcpus memoryMib diskGb vms networks publicIps }"
    query = f'{{ vdc(id: "demo") {{ quota {amounts} usage {amounts} }} }}'
    vdc = payload(api(query, user="alice"), "vdc")
    shown = {label: (int(used), int(limit)) for label, used, limit in QUOTA.findall(page)}
    assert shown == {
        label: (vdc["usage"][field], vdc["quota"][field])
        for label, field in (
            ("vCPUs", "vcpus"),
            ("memory", "memoryMib"),
            ("disk", "diskGb"),
            ("VMs", "vms"),
            ("networks", "networks"),
            ("public IPs", "publicIps"),
        )
    }
    assert page.count("<meter") == 6


def test_the_dashboard_counts_the_vms_by_status_as_the_api_lists_them(site: LightPortal, api: Api) -> None:
    page = dashboard(site)
    edges = payload(api(LIST, user="alice", vdc="demo"), "virtualMachines")["edges"]
    vms = [edge["node"] for edge in edges]
    listed = Counter(f"busy ({vm['lock']})" if vm["lock"] else vm["status"] for vm in vms)
    assert dict((status, int(n)) for status, n in VM_STATUS.findall(page)) == dict(listed)
    total = VM_TOTAL.search(page)
    assert total is not None
    assert int(total.group(1)) == len(edges) > 0


def test_a_task_on_a_vm_shows_in_recent_tasks_and_its_page_tells_how_it_ended(
    site: LightPortal, api: Api
) -> None:
    started, stopped = bounce(api)
    session = site.session("alice")
    landed = session.get(f"{site.url}/vdc/demo/", timeout=30)
    rows = {upid(task_id): (task_id, kind) for task_id, kind in TASK_ROW.findall(landed.text)}
    assert rows[upid(started)][1] == "qmstart"
    task_id, kind = rows[upid(stopped)]
    assert kind == "qmstop"
    assert f'href="/vdc/demo/tasks/{task_id}/"' in landed.text
    page = session.get(f"{site.url}/vdc/demo/tasks/{task_id}/", timeout=30)
    assert page.status_code == 200
    assert "Succeeded" in page.text
    assert "TASK OK" in page.text


def test_the_vdc_switcher_lists_the_users_vdcs(site: LightPortal) -> None:
    alice = dashboard(site, "alice")
    assert 'href="/vdc/demo/"' in alice
    assert 'href="/vdc/other/"' not in alice
    admin = dashboard(site, "admin")
    assert 'href="/vdc/demo/"' in admin
    assert 'href="/vdc/other/"' in admin
    assert 'href="/admin/"' in admin
    assert 'href="/admin/"' not in alice


def test_bob_gets_the_same_404_for_alices_vdc_as_for_one_that_does_not_exist(site: LightPortal) -> None:
    session = site.session("bob")
    alices = session.get(f"{site.url}/vdc/demo/", timeout=30)
    made_up = session.get(f"{site.url}/vdc/nowhere/", timeout=30)
    assert alices.status_code == made_up.status_code == 404
    assert same_page(alices.text, "demo") == same_page(made_up.text, "nowhere")
    assert "does not exist" in alices.text


def test_bob_gets_the_same_404_for_alices_task_as_for_a_made_up_one(site: LightPortal, api: Api) -> None:
    started, _ = bounce(api)
    session = site.session("bob")
    alices = session.get(f"{site.url}/vdc/other/tasks/{started}/", timeout=30)
    made_up = session.get(f"{site.url}/vdc/other/tasks/made-up/", timeout=30)
    assert alices.status_code == made_up.status_code == 404
    assert same_page(alices.text, started) == same_page(made_up.text, "made-up")


def test_a_zone_that_does_not_answer_is_named_and_the_rest_still_shows(site: LightPortal) -> None:
    try:
        for node in ("pve1", "pve2", "pve3"):
            site.fakes.set_node_offline("zone-b", node)
        page = dashboard(site)
    finally:
        restore(site)
    assert "zone-b did not answer: what is shown may be incomplete" in page
    assert 'data-vm-status="running"' in page  # zone-a's VMs still count
