"""The header's indicator of the user's tasks: how many run and how many failed since the user last looked,
read in one tasks listing (the API's ``tasks``), never while a page is built; its list links each task, and
opening it is looking."""

from __future__ import annotations

import html
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests

from tests.apikit import Api
from tests.orchestrator.lightworld import LightWorld
from tests.portal.light.test_dashboard_tasks import proxmox_reads
from tests.portal.served import LightPortal
from tests.vmkit import act, ok, restore

DB_1 = "zone-a/101"  # devstack/seed.py: alice's VM on pve2, stopped
HTMX = {"HX-Request": "true"}
TASKS = "query($first: Int) { tasks(first: $first) { id status } }"
BUTTON = re.compile(r'<button [^>]*id="tasks-button"[^>]*>', re.S)
LABEL = re.compile(r'aria-label="([^"]*)"')
ROW = re.compile(
    r'<li data-task-row data-task-id="([^"]+)"\s+data-task-state="([^"]+)">\s*<a [^>]*href="([^"]+)"'
)


def indicator(session: requests.Session, site: LightPortal) -> str:
    """What the header's button says to a screen reader, as htmx polls it."""
    answer = session.get(f"{site.url}/tasks/indicator/", headers=HTMX, timeout=60)
    assert answer.status_code == 200, answer.text[:500]
    return button_label(answer.text)


def button_label(page: str) -> str:
    button = BUTTON.search(page)
    assert button is not None, page[:2000]
    label = LABEL.search(button.group(0))
    assert label is not None, button.group(0)
    return html.unescape(label.group(1))


def api_tasks(api: Api, user: str = "alice") -> list[dict[str, Any]]:
    answer = api(TASKS, user=user, variables={"first": 20})
    assert answer.errors == [], answer.errors
    return list(answer.data["tasks"])


def fail_a_start(light: LightWorld, api: Api) -> None:
    """db-1's start ends in TASK ERROR (db-1 stays stopped)."""
    pve = light.fakes["zone-a"].pve

    def failing(error: str | None) -> None:
        next(vm for vm in pve.vms if vm.vmid == 101).start_error = error

    light.fakes.on_loop(lambda: failing("start failed: no bootable disk"))
    try:
        result = act(api, "alice", "startVirtualMachine", DB_1)
        assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"], result
    finally:
        light.fakes.on_loop(lambda: failing(None))


@contextmanager
def starting_db_1(light: LightWorld, api: Api, seconds: float) -> Iterator[dict[str, Any]]:
    """db-1's start, which takes ``seconds`` or until the block ends, run in the background; db-1 stopped
    again afterwards."""
    pve = light.fakes["zone-a"].pve

    def slow(secs: float) -> None:
        pve.time_scale = 1.0 if secs else 0
        next(vm for vm in pve.vms if vm.vmid == 101).start_secs = secs

    light.fakes.on_loop(lambda: slow(seconds))
    answer: dict[str, Any] = {}
    starter = threading.Thread(
        target=lambda: answer.update(act(api, "alice", "startVirtualMachine", DB_1)), daemon=True
    )
    starter.start()
    try:
        yield answer
    finally:
        light.fakes.on_loop(pve.hurry)  # the start ends now, however long it had left
        starter.join(seconds + 60)
        light.fakes.on_loop(lambda: slow(0))
        restore(light)
        ok(act(api, "alice", "stopVirtualMachine", DB_1))


def reads_since(site: LightPortal, before: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """The zones' reads of ``/cluster/resources`` and of nodes' task lists since ``before``."""
    return {key: n - before.get(key, 0) for key, n in proxmox_reads(site).items() if n != before.get(key, 0)}


def wait_for(check: Any, timeout: float = 20) -> Any:
    """``check()`` once it answers something true (polled every 0.2 s)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_failure_is_counted_until_the_list_that_shows_it_was_opened(
    site: LightPortal, api: Api, light: LightWorld
) -> None:
    alice = site.session("alice")  # a new session: it never looked
    fail_a_start(light, api)
    failed = [t for t in api_tasks(api) if t["status"] == "FAILED"]
    assert failed
    assert indicator(alice, site) == f"Tasks: none running, {len(failed)} failed since you last looked"
    # The header's list opened: the failures marked new, and the button out of band without them.
    opened = alice.get(f"{site.url}/tasks/", headers=HTMX, timeout=60)
    assert opened.status_code == 200
    assert 'hx-swap-oob="true"' in opened.text
    assert button_label(opened.text) == "Tasks: none running"
    assert opened.text.count(">new</span>") == len(failed)
    assert "<html" not in opened.text
    assert indicator(alice, site) == "Tasks: none running"
    # Another session (another browser) has not looked yet.
    assert "failed since you last looked" in indicator(site.session("alice"), site)
    # A failure after the look is news again, and only it.
    fail_a_start(light, api)
    assert indicator(alice, site) == "Tasks: none running, 1 failed since you last looked"


def test_the_list_is_the_apis_tasks_each_linked_to_its_page(
    site: LightPortal, api: Api, alice: requests.Session
) -> None:
    ok(act(api, "alice", "startVirtualMachine", DB_1))
    ok(act(api, "alice", "stopVirtualMachine", DB_1))
    page = alice.get(f"{site.url}/tasks/", timeout=60)
    assert page.status_code == 200
    assert re.search(r"<h1[^>]*>Your tasks</h1>", page.text)
    rows = ROW.findall(page.text)
    listed = api_tasks(api)
    assert [task_id for task_id, _, _ in rows] == [t["id"] for t in listed]
    assert [href for _, _, href in rows] == [f"/vdc/demo/tasks/{t['id']}/" for t in listed]
    states = {"RUNNING": "running", "SUCCEEDED": "succeeded", "FAILED": "failed"}
    assert [state for _, state, _ in rows] == [states[t["status"]] for t in listed]
    # Each link opens its task's page.
    first = alice.get(f"{site.url}{rows[0][2]}", timeout=60)
    assert first.status_code == 200


def test_a_running_task_is_counted_and_listed_while_it_runs(
    site: LightPortal, api: Api, light: LightWorld, alice: requests.Session
) -> None:
    with starting_db_1(light, api, seconds=6):
        label = wait_for(lambda: (said := indicator(alice, site)).startswith("Tasks: 1 running") and said)
        assert label, indicator(alice, site)
        rows = ROW.findall(alice.get(f"{site.url}/tasks/", headers=HTMX, timeout=60).text)
        assert rows[0][1] == "running"
    assert wait_for(lambda: indicator(alice, site).startswith("Tasks: none running"))


def test_the_indicator_reads_as_the_apis_tasks_do_and_changes_nothing(
    site: LightPortal, api: Api, alice: requests.Session
) -> None:
    before = proxmox_reads(site)
    api_tasks(api)
    by_api = {
        key: n - before.get(key, 0) for key, n in proxmox_reads(site).items() if n != before.get(key, 0)
    }
    before = proxmox_reads(site)
    polled = alice.get(f"{site.url}/tasks/indicator/", headers=HTMX, timeout=60)
    by_poll = {
        key: n - before.get(key, 0) for key, n in proxmox_reads(site).items() if n != before.get(key, 0)
    }
    assert by_poll == by_api
    assert by_poll, "the indicator read no tasks"
    assert "Set-Cookie" not in polled.headers  # a poll is not a look: the session is as it was


def test_a_page_is_built_without_reading_tasks_for_the_header(
    site: LightPortal, admin: requests.Session
) -> None:
    before = proxmox_reads(site)
    page = admin.get(f"{site.url}/admin/", timeout=60)
    assert page.status_code == 200
    read = reads_since(site, before)
    assert not [key for key in read if key[1].endswith("/tasks")], read
    # The indicator is there, asking for its counts once the page is shown.
    button = BUTTON.search(page.text)
    assert button is not None
    assert 'hx-trigger="load, every 5s' in button.group(0)
    assert 'hx-get="/tasks/indicator/"' in button.group(0)


def test_the_indicator_and_its_list_are_for_signed_in_users_only(site: LightPortal) -> None:
    anonymous = requests.Session()
    anonymous.trust_env = False
    for path in ("/tasks/", "/tasks/indicator/"):
        answer = anonymous.get(f"{site.url}{path}", allow_redirects=False, timeout=60)
        assert answer.status_code == 302
        assert "/login/" in answer.headers["Location"]


def test_a_host_that_does_not_answer_is_said_in_the_list_and_the_counts_still_come(
    site: LightPortal, light: LightWorld, alice: requests.Session
) -> None:
    light.fakes.set_node_offline("zone-a", "pve1")  # web-1's host: its task list cannot be read
    try:
        polled = alice.get(f"{site.url}/tasks/indicator/", headers=HTMX, timeout=60)
        assert polled.status_code == 200
        assert button_label(polled.text).startswith("Tasks: ")
        assert "zone-a/pve1 did not answer: the list may be incomplete." in html.unescape(polled.text)
        listed = alice.get(f"{site.url}/tasks/", headers=HTMX, timeout=60)
        assert 'role="status">zone-a/pve1 did not answer' in html.unescape(listed.text)
    finally:
        restore(light)
