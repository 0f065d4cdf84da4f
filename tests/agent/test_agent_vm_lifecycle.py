"""The proxy forwards the VM lifecycle and VDC pools, checked in the fake Proxmox's own state."""

from __future__ import annotations

import itertools
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from agentclient import AgentPool, AgentTarget, ProxmoxError

TEMPLATE = 4300
# Each test clones to a VM id of its own, above the template's.
_NEXT_VMID = itertools.count(4301)


@pytest.fixture
def template(pve: Any) -> Iterator[int]:
    """A template VM with a base disk on local-lvm, as the agent's image import leaves one."""
    volumes = pve.storages["local-lvm"].setdefault("volumes", {})
    volumes[f"base-{TEMPLATE}-disk-0"] = {
        "content": "images",
        "format": "raw",
        "size": 2 << 30,
        "vmid": TEMPLATE,
    }
    pve.add_vm(
        TEMPLATE,
        "fp-tpl-lifecycle",
        node="pve1",
        template=True,
        config={"scsi0": f"local-lvm:base-{TEMPLATE}-disk-0,size=2G", "tags": "fp-template"},
    )
    yield TEMPLATE
    for vm in [vm for vm in pve.vms if vm.vmid >= TEMPLATE and vm.vmid < TEMPLATE + 100]:
        pve.vms.remove(vm)
    for name in [n for n, v in volumes.items() if TEMPLATE <= int(v.get("vmid") or 0) < TEMPLATE + 100]:
        del volumes[name]
    pve.pools.pop("fp-lifecycle", None)
    pve.pool_info.pop("fp-lifecycle", None)


@pytest.fixture
def vm(pool: AgentPool, target: AgentTarget, pve: Any, template: int) -> int:
    """A linked clone of the template, made through the proxy."""
    vmid = next(_NEXT_VMID)
    pool.proxmox(target, "POST", f"/nodes/pve1/qemu/{template}/clone", {"newid": vmid, "name": f"vm-{vmid}"})
    return vmid


def last_request(pve: Any, method: str) -> tuple[str, dict[str, str]]:
    """The path and form of the last request of method the fake received."""
    path, body = [(p, b) for m, p, b in pve.requests if m == method][-1]
    return path, dict(urllib.parse.parse_qsl(body.decode()))


def fake_vm(pve: Any, vmid: int) -> Any:
    found = pve.vm(vmid)
    assert found is not None, f"the fake has no VM {vmid}"
    return found


def test_it_forwards_nextid(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    vmid = int(pool.proxmox(target, "GET", "/cluster/nextid"))

    assert pve.vm(vmid) is None


def test_it_forwards_a_linked_clone_of_a_template(
    pool: AgentPool, target: AgentTarget, pve: Any, vm: int
) -> None:
    clone = fake_vm(pve, vm)

    assert clone.name == f"vm-{vm}"
    assert clone.config["scsi0"].startswith(f"local-lvm:vm-{vm}-disk-")


def test_it_forwards_reading_a_vm_config(pool: AgentPool, target: AgentTarget, vm: int) -> None:
    config = pool.proxmox(target, "GET", f"/nodes/pve1/qemu/{vm}/config")

    assert config["name"] == f"vm-{vm}"


def test_it_forwards_a_config_change_with_post(
    pool: AgentPool, target: AgentTarget, pve: Any, vm: int
) -> None:
    pool.proxmox(target, "POST", f"/nodes/pve1/qemu/{vm}/config", {"ciuser": "alice", "tags": "fp-vdc-demo"})

    assert fake_vm(pve, vm).config["ciuser"] == "alice"


def test_it_forwards_a_config_change_with_put(
    pool: AgentPool, target: AgentTarget, pve: Any, vm: int
) -> None:
    pool.proxmox(target, "PUT", f"/nodes/pve1/qemu/{vm}/config", {"cores": 2, "memory": 2048})

    assert (fake_vm(pve, vm).config["cores"], fake_vm(pve, vm).config["memory"]) == ("2", "2048")


def test_it_forwards_reading_pending_changes(pool: AgentPool, target: AgentTarget, vm: int) -> None:
    pending = pool.proxmox(target, "GET", f"/nodes/pve1/qemu/{vm}/pending")

    assert {item["key"] for item in pending} >= {"name", "scsi0"}


def test_it_forwards_a_disk_resize(pool: AgentPool, target: AgentTarget, pve: Any, vm: int) -> None:
    upid = pool.proxmox(target, "PUT", f"/nodes/pve1/qemu/{vm}/resize", {"disk": "scsi0", "size": "+3G"})

    # The fake answers a resize with a task but keeps no disk sizes: what it received is the proof.
    assert upid.startswith("UPID:pve1:")
    assert last_request(pve, "PUT") == (
        f"/api2/json/nodes/pve1/qemu/{vm}/resize",
        {"disk": "scsi0", "size": "+3G"},
    )


@pytest.mark.parametrize(
    ("actions", "status"),
    [
        (["start"], "running"),
        (["start", "stop"], "stopped"),
        (["start", "shutdown"], "stopped"),
        (["start", "reboot"], "running"),
    ],
)
def test_it_forwards_each_power_action(
    pool: AgentPool, target: AgentTarget, pve: Any, vm: int, actions: list[str], status: str
) -> None:
    for action in actions:
        pool.proxmox(target, "POST", f"/nodes/pve1/qemu/{vm}/status/{action}")

    assert fake_vm(pve, vm).status == status


def test_it_forwards_the_current_status(pool: AgentPool, target: AgentTarget, vm: int) -> None:
    assert pool.proxmox(target, "GET", f"/nodes/pve1/qemu/{vm}/status/current")["status"] == "stopped"


def test_it_forwards_the_guest_agents_interfaces(
    pool: AgentPool, target: AgentTarget, pve: Any, vm: int
) -> None:
    pool.proxmox(target, "POST", f"/nodes/pve1/qemu/{vm}/status/start")
    fake_vm(pve, vm).agent = {}

    answer = pool.proxmox(target, "GET", f"/nodes/pve1/qemu/{vm}/agent/network-get-interfaces")

    assert "eth0" in {interface["name"] for interface in answer["result"]}


def test_it_forwards_a_migration(pool: AgentPool, target: AgentTarget, pve: Any, vm: int) -> None:
    upid = pool.proxmox(target, "POST", f"/nodes/pve1/qemu/{vm}/migrate", {"target": "pve2"})

    # As with resize, the fake answers with a task and keeps the VM where it was.
    assert upid.startswith("UPID:pve1:")
    assert last_request(pve, "POST") == (f"/api2/json/nodes/pve1/qemu/{vm}/migrate", {"target": "pve2"})


def test_it_forwards_deleting_a_vm_and_its_disks(
    pool: AgentPool, target: AgentTarget, pve: Any, vm: int
) -> None:
    pool.proxmox(target, "DELETE", f"/nodes/pve1/qemu/{vm}", {"purge": 1, "destroy-unreferenced-disks": 1})

    assert pve.vm(vm) is None
    assert not [v for v in pve.storages["local-lvm"]["volumes"].values() if v.get("vmid") == vm]


def test_it_forwards_the_pool_lifecycle(
    pool: AgentPool, target: AgentTarget, pve: Any, template: int
) -> None:
    pool.proxmox(target, "POST", "/pools", {"poolid": "fp-lifecycle", "comment": "VDC lifecycle"})
    # A pool's members are never changed through the proxy (VMs join theirs as they are cloned).
    pool.proxmox(target, "PUT", "/pools/fp-lifecycle", {"comment": "VDC lifecycle, renamed"})

    assert pool.proxmox(target, "GET", "/pools/fp-lifecycle")["members"] == []
    assert "fp-lifecycle" in {p["poolid"] for p in pool.proxmox(target, "GET", "/pools")}

    pool.proxmox(target, "DELETE", "/pools/fp-lifecycle")
    assert "fp-lifecycle" not in pve.pools


def test_it_forwards_the_nodes_storages(pool: AgentPool, target: AgentTarget) -> None:
    storages = pool.proxmox(target, "GET", "/nodes/pve1/storage", {"content": "images"})

    assert "local-lvm" in {s["storage"] for s in storages}


def test_it_forwards_the_nodes_task_list(
    pool: AgentPool, target: AgentTarget, template: int, vm: int
) -> None:
    tasks = pool.proxmox(target, "GET", "/nodes/pve1/tasks", {"vmid": template})

    assert tasks[0]["type"] == "qmclone"


def test_a_vm_that_does_not_exist_is_proxmoxs_error(pool: AgentPool, target: AgentTarget) -> None:
    with pytest.raises(ProxmoxError, match="does not exist"):
        pool.proxmox(target, "GET", "/nodes/pve1/qemu/4399/config")
