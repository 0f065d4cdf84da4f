"""A task's progress streams to the page over the websocket ``/ws/tasks/<task_id>/`` until it ends.

The tasks are real Proxmox tasks of the fake zones, made slow (``start_secs``) so that they are seen
running; the socket is the world's orchestrator's, reached with the browser's session cookie and Origin.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from devstack.world import World
from tests.apikit import GraphQL
from tests.portal.sessionkit import COOKIE, login
from tests.vmkit import act, ok, restore

DB_1 = "zone-a/101"  # devstack/seed.py: alice's VM, stopped
RUNNING_START = re.compile(
    r'data-task-id="([^"]+)" data-task-kind="qmstart"\s+data-task-vm="zone-a/101" data-task-state="running"'
)


def socket_url(world: World, task_id: str) -> str:
    return f"ws://{world.cfg.orchestrator_host}:{world.cfg.orchestrator_port}/ws/tasks/{task_id}/"


@contextmanager
def follow(
    world: World, session: requests.Session | None, task_id: str, origin: str | None = None
) -> Iterator[ClientConnection]:
    cookie = session.cookies.get(COOKIE, domain=world.cfg.orchestrator_host) if session else None
    headers = {"Cookie": f"{COOKIE}={cookie}"} if cookie else {}
    with connect(
        socket_url(world, task_id),
        additional_headers=headers,
        origin=Origin(origin or world.url),
        open_timeout=10,
    ) as socket:
        yield socket


def messages(socket: ClientConnection, timeout: float = 30) -> list[dict[str, Any]]:
    """Everything the server sends until it closes the socket."""
    received = []
    try:
        while True:
            received.append(json.loads(socket.recv(timeout=timeout)))
    except ConnectionClosed:
        return received


@contextmanager
def slow_start(world: World, seconds: float, error: str | None = None) -> Iterator[None]:
    """db-1's start takes ``seconds`` (and fails with ``error``) in the fake zone, then all is as before."""
    pve = world.fakes["zone-a"].pve

    def slow() -> None:
        vm = next(vm for vm in pve.vms if vm.vmid == 101)
        pve.time_scale = 1.0
        vm.start_secs = seconds
        vm.start_error = error

    def fast() -> None:
        vm = next(vm for vm in pve.vms if vm.vmid == 101)
        vm.start_secs = 0
        vm.start_error = None

    world.fakes.on_loop(slow)
    try:
        yield
    finally:
        world.fakes.on_loop(fast)
        restore(world)


@contextmanager
def starting_db_1(api: GraphQL) -> Iterator[dict[str, Any]]:
    """Start db-1 through the API in the background (the mutation answers once the task ended)."""
    answer: dict[str, Any] = {}
    starter = threading.Thread(
        target=lambda: answer.update(act(api, "alice", "startVirtualMachine", DB_1)), daemon=True
    )
    starter.start()
    try:
        yield answer
    finally:
        starter.join(60)
        ok(act(api, "alice", "stopVirtualMachine", DB_1))


def running_start_task(world: World, session: requests.Session) -> str:
    """The id of db-1's running start task, as the dashboard's recent tasks list it."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = RUNNING_START.search(session.get(f"{world.url}/vdc/demo/", timeout=30).text)
        if found:
            return found.group(1)
        time.sleep(0.2)
    raise AssertionError("db-1's start task never showed as running on the dashboard")


def test_a_running_task_streams_its_progress_until_it_succeeds(world: World, api: GraphQL) -> None:
    session, _ = login(world, "alice")
    with slow_start(world, 3.0), starting_db_1(api) as answer:
        task_id = running_start_task(world, session)
        with follow(world, session, task_id) as socket:
            received = messages(socket)
    assert received[0]["type"] == "task"
    assert received[0]["status"] == "running"
    assert received[-1]["status"] == "succeeded"
    assert received[-1]["result"] == "OK"
    assert received[-1]["kind"] == "qmstart"
    assert received[-1]["title"] == "Start"
    log = [line for message in received for line in message["log"]]
    assert log[-1] == "TASK OK"
    assert answer["task"]["id"] == task_id


def test_a_failing_task_streams_to_the_proxmox_error(world: World, api: GraphQL) -> None:
    session, _ = login(world, "alice")
    error = "start failed: QEMU exited with code 1"
    with slow_start(world, 2.0, error), starting_db_1(api):
        task_id = running_start_task(world, session)
        with follow(world, session, task_id) as socket:
            received = messages(socket)
    assert received[-1]["status"] == "failed"
    assert error in received[-1]["result"]
    assert f"TASK ERROR: {error}" in [line for message in received for line in message["log"]]


def test_a_finished_task_is_told_at_once_and_the_socket_closes(world: World, api: GraphQL) -> None:
    session, _ = login(world, "alice")
    task_id = ok(act(api, "alice", "startVirtualMachine", DB_1))["task"]["id"]
    ok(act(api, "alice", "stopVirtualMachine", DB_1))
    with follow(world, session, task_id) as socket:
        received = messages(socket)
    assert [m["status"] for m in received] == ["succeeded"]
    assert socket.close_code == 1000


def test_another_vdcs_task_is_reported_missing(world: World, api: GraphQL) -> None:
    task_id = ok(act(api, "alice", "startVirtualMachine", DB_1))["task"]["id"]
    ok(act(api, "alice", "stopVirtualMachine", DB_1))
    bob, _ = login(world, "bob")
    with follow(world, bob, task_id) as socket:
        received = messages(socket)
    assert received == [{"type": "error", "code": "NOT_FOUND", "message": f"task {task_id!r} does not exist"}]
    assert socket.close_code == 4404


def test_without_a_session_the_socket_is_refused(world: World) -> None:
    with pytest.raises(InvalidStatus) as refused, follow(world, None, "anything"):
        pass
    assert refused.value.response.status_code == 403


def test_a_socket_from_another_site_is_refused(world: World) -> None:
    session, _ = login(world, "alice")
    with pytest.raises(InvalidStatus) as refused, follow(world, session, "anything", "https://evil.example"):
        pass
    assert refused.value.response.status_code == 403


def test_the_task_page_shows_the_live_widget_with_its_script(world: World, api: GraphQL) -> None:
    session, _ = login(world, "alice")
    task_id = ok(act(api, "alice", "startVirtualMachine", DB_1))["task"]["id"]
    ok(act(api, "alice", "stopVirtualMachine", DB_1))
    page = session.get(f"{world.url}/vdc/demo/tasks/{task_id}/", timeout=30)
    assert page.status_code == 200
    assert f'data-task-id="{task_id}"' in page.text
    assert 'data-task-state="succeeded"' in page.text
    for script in ("/static/portal/tasks.js", "/static/portal/htmx.min.js"):
        assert f'<script src="{script}" defer></script>' in page.text
        served = session.get(f"{world.url}{script}", timeout=30)
        assert served.status_code == 200
        assert "javascript" in served.headers["Content-Type"]


def test_without_websockets_htmx_polls_the_fragment_until_the_task_ends(world: World, api: GraphQL) -> None:
    session, _ = login(world, "alice")
    htmx = {"HX-Request": "true", "HX-Current-URL": f"{world.url}/vdc/demo/"}
    with slow_start(world, 3.0), starting_db_1(api):
        task_id = running_start_task(world, session)
        running = session.get(f"{world.url}/vdc/demo/tasks/{task_id}/", headers=htmx, timeout=30)
        assert "<html" not in running.text
        assert 'data-task-state="running"' in running.text
        assert f'hx-get="/vdc/demo/tasks/{task_id}/"' in running.text
        assert "HX-Trigger" not in running.headers
    ended = session.get(f"{world.url}/vdc/demo/tasks/{task_id}/", headers=htmx, timeout=30)
    assert 'data-task-state="succeeded"' in ended.text
    assert "hx-get" not in ended.text
    assert ended.headers["HX-Trigger"] == "flexplane:task-ended"
