"""task(id): what a VM mutation started, readable by the VM's VDC only; and how tasks are read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from orchestrator.models.tasks import STOPPED, Task, Upid, progress_of
from orchestrator.sources.proxmox import TaskStatus
from tests.apikit import Zones
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import act, create, ok, vm_names

TASK = """query($id: ID!) { task(id: $id) {
  id zone host type virtualMachineId status progress result startedAt endedAt log } }"""
UPID = "UPID:pve2:0000043F:00001DB9:6B0CA1DA:qmclone:104:root@pam!flexplane:"


@pytest.fixture
def vm_name(api: InProcessApi, light: Zones) -> Iterator[Callable[[str], str]]:
    with vm_names(api, light) as name:
        yield name


def test_a_create_answers_its_start_task_with_proxmoxs_log(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    created = ok(create(api, "alice", "demo", name=vm_name("t")))
    task = api(TASK, user="alice", vdc="demo", variables={"id": created["task"]["id"]}).data["task"]
    vm = created["virtualMachine"]
    assert task["zone"] == "zone-a"
    assert task["host"] == vm["host"]
    assert task["type"] == "qmstart"
    assert task["virtualMachineId"] == vm["id"]
    assert task["status"] == "SUCCEEDED"
    assert task["result"] == "OK"
    assert task["progress"] == 1.0
    assert task["log"][-1] == "TASK OK"
    started = datetime.fromisoformat(task["startedAt"])
    assert abs((datetime.now(UTC) - started).total_seconds()) < 120
    assert task["endedAt"] is not None
    assert datetime.fromisoformat(task["endedAt"]) >= started
    # The fake's own record of it.
    pve = light.fakes["zone-a"].pve
    upids = light.fakes.on_loop(lambda: {t["upid"]: t for t in pve.tasklog})
    assert any(upid.startswith(f"UPID:{vm['host']}:") and t["type"] == "qmstart" for upid, t in upids.items())


def test_a_failed_task_comes_with_the_error_and_says_what_proxmox_said(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("f")))["virtualMachine"]
    pve = light.fakes["zone-a"].pve
    light.fakes.on_loop(lambda: pve.fail("POST", "/status/stop", error="quit_powerdown_failed", times=1))
    result = act(api, "alice", "stopVirtualMachine", vm["id"])
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert result["task"]["status"] == "FAILED"
    assert result["task"]["result"] == "VM quit/powerdown failed"
    task = api(TASK, user="alice", vdc="demo", variables={"id": result["task"]["id"]}).data["task"]
    assert task["status"] == "FAILED"
    assert task["type"] == "qmstop"
    assert task["log"][-1] == "TASK ERROR: VM quit/powerdown failed"
    # The fake's own record of it.
    recorded = light.fakes.on_loop(lambda: [t for t in pve.tasklog if t["type"] == "qmstop"][-1])
    assert recorded["exitstatus"] == "VM quit/powerdown failed"


def test_bob_cannot_read_alices_task_exactly_as_if_it_did_not_exist(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    task_id = ok(create(api, "alice", "demo", name=vm_name("secret")))["task"]["id"]
    hers = api(TASK, user="bob", vdc="other", variables={"id": task_id})
    forged = api(TASK, user="bob", vdc="other", variables={"id": task_id[:-4] + "AAAA"})
    assert hers.codes == forged.codes == ["NOT_FOUND"]
    assert hers.data == forged.data == {"task": None}
    assert hers.errors[0]["message"].replace(task_id, "ID") == forged.errors[0]["message"].replace(
        task_id[:-4] + "AAAA", "ID"
    )
    assert api(TASK, user="bob", variables={"id": task_id}).codes == ["NOT_FOUND"]
    assert api(TASK, user="admin", variables={"id": task_id}).data["task"]["status"] == "SUCCEEDED"


def test_a_task_of_a_deleted_vm_stays_readable_by_its_vdc(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("gone")))["virtualMachine"]
    deleted = ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))
    task = api(TASK, user="alice", vdc="demo", variables={"id": deleted["task"]["id"]}).data["task"]
    assert task["type"] == "qmdestroy"
    assert task["status"] == "SUCCEEDED"
    assert task["virtualMachineId"] == vm["id"]


def test_a_task_id_is_not_a_upid(api: InProcessApi) -> None:
    answer = api(TASK, user="alice", variables={"id": f"zone-a/{UPID}"})
    assert answer.codes == ["NOT_FOUND"]


# ------------------------------------------------------------------------------------------ reading a task


def test_a_upid_names_its_node_start_type_and_guest() -> None:
    upid = Upid.parse(UPID)
    assert upid is not None
    assert (upid.node, upid.kind, upid.vmid, upid.user) == ("pve2", "qmclone", 104, "root@pam!flexplane")
    assert upid.started_at == datetime.fromtimestamp(0x6B0CA1DA, tz=UTC)
    assert Upid.parse("UPID:pve2:nonsense") is None
    anonymous = Upid.parse(UPID.replace(":104:", "::"))
    assert anonymous is not None
    assert anonymous.vmid is None


def test_a_running_task_is_as_far_as_its_last_logged_percentage() -> None:
    lines = ["create full clone of drive scsi0", "transferred 1.0 GiB of 4.0 GiB (25.00%)", "(50.5%) done"]
    assert progress_of("running", lines) == 0.505
    assert progress_of("running", ["starting"]) is None
    assert progress_of(STOPPED, []) == 1.0


def test_a_task_succeeded_with_ok_or_warnings_and_failed_otherwise() -> None:
    upid = Upid.parse(UPID)
    assert upid is not None

    def task(**status: object) -> Task:
        return Task.from_status("id", "zone-a", upid, TaskStatus.from_status({"starttime": 1, **status}))

    assert task(status="running").running
    assert task(status="stopped", exitstatus="OK").succeeded
    assert task(status="stopped", exitstatus="WARNINGS: 2").succeeded
    failed = task(
        status="stopped", exitstatus="can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"
    )
    assert failed.failed
    assert failed.exitstatus.startswith("can't lock file")
    assert task(status="stopped", exitstatus="OK", endtime=5).ended_at == datetime.fromtimestamp(5, tz=UTC)
