"""The agent against a compromised management plane: a caller holding the orchestrator's own client
certificate asks for what would hand one tenant another's VM, or the node itself. Each attempt is
refused by the agent before Proxmox is called (the fake Proxmox's own request list does not change),
the refusal names the parameter, and the agent's log records it with its marker.

A real agent process (mTLS gRPC) serves a fake Proxmox over HTTPS (tests/agent/conftest.py).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest

from agent.proxy import REFUSED, refusals
from agentclient import AgentPool, AgentTarget, ProxmoxError, ProxyRefused
from tests.agent.conftest import AgentProcess
from tests.security.conftest import refused_before_proxmox

pytestmark = pytest.mark.promise("agent-hostile")

SUITE = "agent-hostile"
CONFIG = "/nodes/pve1/qemu/4242/config"
LOGGED_WITHIN = 5.0

# (what the attempt is, method, path, params, the parameter the refusal names: None when the route
# itself is not forwarded)
ATTEMPTS: list[tuple[str, str, str, dict[str, str], str | None]] = [
    ("attach another VM's disk", "PUT", CONFIG, {"scsi1": "local-lvm:vm-4243-disk-0"}, "scsi1"),
    (
        "attach another VM's disk by a task",
        "POST",
        CONFIG,
        {"virtio1": "local:4243/vm-4243-disk-0.qcow2"},
        "virtio1",
    ),
    (
        "copy another VM's disk in",
        "PUT",
        CONFIG,
        {"scsi1": "local-lvm:vm-4242-disk-1,import-from=local-lvm:vm-4243-disk-0"},
        "scsi1",
    ),
    ("attach a template's base disk", "PUT", CONFIG, {"scsi1": "local-lvm:base-100-disk-0"}, "scsi1"),
    ("attach a host device path", "PUT", CONFIG, {"sata0": "/dev/sda"}, "sata0"),
    ("set a hookscript", "PUT", CONFIG, {"hookscript": "local:snippets/hook.pl"}, "hookscript"),
    ("set QEMU args", "PUT", CONFIG, {"args": "-drive file=/dev/sda,if=virtio"}, "args"),
    (
        "name another VM's vendor snippet",
        "PUT",
        CONFIG,
        {"cicustom": "vendor=local:snippets/fp-other-4243-vendor.yaml"},
        "cicustom",
    ),
    (
        "name an admin's user snippet",
        "PUT",
        CONFIG,
        {"cicustom": "user=local:snippets/admin.yaml"},
        "cicustom",
    ),
    ("put a NIC on the host bridge", "PUT", CONFIG, {"net0": "virtio,bridge=vmbr0"}, "net0"),
    ("put a NIC on another bridge", "POST", CONFIG, {"net1": "virtio,bridge=vmbr99,firewall=0"}, "net1"),
    ("tag a VM into two VDCs", "PUT", CONFIG, {"tags": "fp-vdc-demo;fp-vdc-other"}, "tags"),
    ("override a lock", "PUT", CONFIG, {"cores": "2", "skiplock": "1"}, "skiplock"),
    (
        "clone into a foreign pool",
        "POST",
        "/nodes/pve1/qemu/100/clone",
        {"newid": "4242", "name": "x", "pool": "admins"},
        "pool",
    ),
    (
        "clone onto another storage",
        "POST",
        "/nodes/pve1/qemu/100/clone",
        {"newid": "4242", "pool": "fp-demo", "storage": "nfs-backups"},
        "storage",
    ),
    (
        "move a disk to another VM",
        "POST",
        "/nodes/pve1/qemu/4242/move_disk",
        {"disk": "scsi0", "target-vmid": "4243", "target-disk": "scsi1"},
        None,
    ),
    (
        "move a disk to another VM (new API)",
        "POST",
        "/nodes/pve1/qemu/4242/move-disk",
        {"disk": "scsi0", "target-vmid": "4243"},
        None,
    ),
    (
        "resize a disk of another VM",
        "PUT",
        "/nodes/pve1/qemu/4242/resize",
        {"disk": "local-lvm:vm-4243-disk-0", "size": "+100G"},
        "disk",
    ),
    (
        "resize past a lock",
        "PUT",
        "/nodes/pve1/qemu/4242/resize",
        {"disk": "scsi0", "size": "+1G", "skiplock": "1"},
        "skiplock",
    ),
    (
        "restore a backup over another VM",
        "POST",
        "/nodes/pve1/qemu",
        {"vmid": "4243", "archive": "local:backup/vzdump-qemu-4243.vma.zst"},
        "archive",
    ),
    (
        "restore a backup into a VM's disk",
        "PUT",
        CONFIG,
        {"scsi0": "local:backup/vzdump-qemu-4243.vma.zst"},
        "scsi0",
    ),
    ("move another VM into a VDC's pool", "PUT", "/pools/fp-demo", {"vms": "4243"}, "vms"),
    ("destroy past a lock", "DELETE", "/nodes/pve1/qemu/4243", {"skiplock": "1"}, "skiplock"),
    ("stop past a lock", "POST", "/nodes/pve1/qemu/4243/status/stop", {"skiplock": "1"}, "skiplock"),
    (
        "migrate onto another storage",
        "POST",
        "/nodes/pve1/qemu/4243/migrate",
        {"target": "pve2", "targetstorage": "nfs"},
        "targetstorage",
    ),
    # Networks: the node's SDN and the VMs' firewalls, beyond what tenant networks need.
    ("add an SDN controller", "POST", "/cluster/sdn/controllers", {"controller": "x", "type": "bgp"}, None),
    ("add an SDN IPAM", "POST", "/cluster/sdn/ipams", {"ipam": "x", "type": "netbox"}, None),
    ("change an SDN zone", "PUT", "/cluster/sdn/zones/fpnet", {"peers": "203.0.113.9"}, None),
    ("delete an SDN zone's IPAM", "DELETE", "/cluster/sdn/ipams/pve", {}, None),
    ("retag a VNet", "PUT", "/cluster/sdn/vnets/fpab12cd", {"tag": "7"}, None),
    (
        "make a VLAN-aware VNet",
        "POST",
        "/cluster/sdn/vnets",
        {"vnet": "fpab12cd", "zone": "fpnet", "tag": "7", "vlanaware": "1"},
        "vlanaware",
    ),
    (
        "write a line into the nodes' network config",
        "POST",
        "/cluster/sdn/vnets",
        {"vnet": "fpab12cd", "zone": "fpnet", "tag": "7", "alias": "x\n\tpost-up id"},
        "alias",
    ),
    (
        "make an EVPN zone",
        "POST",
        "/cluster/sdn/zones",
        {"zone": "fpnet", "type": "evpn"},
        "type",
    ),
    (
        "masquerade a subnet",
        "POST",
        "/cluster/sdn/vnets/fpab12cd/subnets",
        {"subnet": "10.0.0.0/24", "type": "subnet", "snat": "1"},
        "snat",
    ),
    (
        "put a NIC on the host bridge, firewalled",
        "PUT",
        CONFIG,
        {"net0": "virtio,bridge=vmbr0,firewall=1"},
        "net0",
    ),
    ("tag a NIC into a VLAN", "PUT", CONFIG, {"net0": "virtio,bridge=fpab12cd,firewall=1,tag=5"}, "net0"),
    (
        "trunk VLANs to a NIC",
        "PUT",
        CONFIG,
        {"net0": "virtio,bridge=fpab12cd,firewall=1,trunks=2-4094"},
        "net0",
    ),
    ("a NIC past its security groups", "PUT", CONFIG, {"net0": "virtio,bridge=fpab12cd,firewall=0"}, "net0"),
    ("delete a hookscript", "PUT", CONFIG, {"delete": "hookscript"}, "delete"),
    ("delete a VM's disk", "POST", CONFIG, {"delete": "net0,scsi0"}, "delete"),
    (
        "a firewall rule on the cluster",
        "POST",
        "/cluster/firewall/rules",
        {"type": "in", "action": "ACCEPT"},
        None,
    ),
    ("a security group of the cluster", "POST", "/cluster/firewall/groups", {"group": "fp-web"}, None),
    ("open a node's firewall", "PUT", "/nodes/pve1/firewall/options", {"enable": "0"}, None),
    (
        "a firewall alias",
        "POST",
        "/nodes/pve1/qemu/4242/firewall/aliases",
        {"name": "x", "cidr": "0.0.0.0/0"},
        None,
    ),
    (
        "a VM firewall rule through a cluster IP set",
        "POST",
        "/nodes/pve1/qemu/4242/firewall/rules",
        {"type": "in", "action": "ACCEPT", "source": "+dc/management"},
        "source",
    ),
    (
        "a VM firewall rule with a macro",
        "POST",
        "/nodes/pve1/qemu/4242/firewall/rules",
        {"type": "in", "action": "ACCEPT", "macro": "SSH"},
        "macro",
    ),
]


refused = refused_before_proxmox(
    SUITE, "hostile calls refused before Proxmox was called", "requests those calls made to Proxmox"
)


def logged_refusals(agent: AgentProcess) -> list[str]:
    return refusals(agent.output().splitlines())


@pytest.mark.parametrize(
    ("what", "method", "path", "params", "parameter"),
    ATTEMPTS,
    ids=[a[0].replace(" ", "-") for a in ATTEMPTS],
)
def test_a_hostile_call_with_the_orchestrators_certificate_is_refused_before_proxmox_and_logged(
    pool: AgentPool,
    target: AgentTarget,
    agent: AgentProcess,
    pve: Any,
    refused: list[str],
    what: str,
    method: str,
    path: str,
    params: dict[str, str],
    parameter: str | None,
) -> None:
    requests_before = list(pve.requests)
    logged_before = len(logged_refusals(agent))

    with pytest.raises(ProxyRefused) as caught:
        pool.proxmox(target, method, path, params)

    # Nothing reached Proxmox but, for a disk's move, the pool check's read of the cluster's VMs.
    reached = [(m, p) for m, p, _ in pve.requests[len(requests_before) :]]
    assert pve.requests[: len(requests_before)] == requests_before
    assert set(reached) <= {("GET", "/api2/json/cluster/resources")}, f"{what}: the call reached Proxmox"
    if parameter is not None:
        assert f"parameter {parameter}" in str(caught.value)
    deadline = time.monotonic() + LOGGED_WITHIN
    while len(logged_refusals(agent)) == logged_before and time.monotonic() < deadline:
        time.sleep(0.02)
    new = logged_refusals(agent)[logged_before:]
    assert len(new) == 1, f"{what}: {new}"
    assert REFUSED in new[0]
    assert "flexplane-orchestrator" in new[0]
    assert f"parameter={parameter or '-'} " in new[0]
    refused.append(what)


def test_the_same_calls_with_the_vms_own_values_are_forwarded(
    pool: AgentPool, target: AgentTarget, pve: Any
) -> None:
    """The refusals above are about the values, not the routes: the VM's own disk key is forwarded (and
    answered by Proxmox: here, that there is no VM 4399)."""
    before = len(pve.requests)

    with contextlib.suppress(ProxmoxError):
        pool.proxmox(target, "PUT", "/nodes/pve1/qemu/4399/resize", {"disk": "scsi0", "size": "+1G"})

    assert len(pve.requests) == before + 1
