"""The agent's Proxmox proxy and its other services, over mutual TLS, against a fake Proxmox."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from cryptography import x509

from agentclient import AgentPool, AgentTarget, ProxmoxError, ProxyRefused
from tests.agent.conftest import Pki
from tests.loops import run_apart


def test_it_reports_serving_on_the_health_service(pool: AgentPool, target: AgentTarget) -> None:
    assert pool.check_health(target) is True


def test_it_reports_serving_for_the_proxy_service(pool: AgentPool, target: AgentTarget) -> None:
    assert pool.check_health(target, service="flexplane.agent.v1.ProxmoxProxy") is True


def test_it_tells_its_node_zone_identity_and_version(pool: AgentPool, target: AgentTarget) -> None:
    info = pool.info(target)

    assert (info.node, info.zone, info.identity) == ("pve1", "zone1", "pve1.zone1.agents.flexplane")
    assert info.version


def test_it_tells_the_proxmox_version_and_its_certificate_expiry(
    pool: AgentPool, target: AgentTarget, pki: Pki
) -> None:
    info = pool.info(target)

    not_after = x509.load_pem_x509_certificate(pki.agent[0].read_bytes()).not_valid_after_utc
    assert info.proxmox_version.split(".")[0].isdigit()
    assert info.certificate_not_after == int(not_after.timestamp())
    assert (info.update.result, info.renewal.failures) == ("none", 0)


def test_it_forwards_cluster_resources_and_returns_the_vms(
    pool: AgentPool, target: AgentTarget, pve: Any
) -> None:
    pve.add_vm(4101, "web-1", node="pve1")
    pve.add_vm(4102, "db-1", node="pve1")

    resources = pool.proxmox(target, "GET", "/cluster/resources", {"type": "vm"})

    names = {r["vmid"]: r["name"] for r in resources if r.get("type") == "qemu"}
    assert names[4101] == "web-1"
    assert names[4102] == "db-1"


def test_it_sends_get_params_in_the_query_string(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    pool.proxmox(target, "GET", "/cluster/resources", {"type": "node"})

    method, path, _body = pve.requests[-1]
    assert (method, path) == ("GET", "/api2/json/cluster/resources")
    assert all(
        r["type"] == "node" for r in pool.proxmox(target, "GET", "/cluster/resources", {"type": "node"})
    )


def test_it_forwards_a_node_status(pool: AgentPool, target: AgentTarget) -> None:
    status = pool.proxmox(target, "GET", "/nodes/pve1/status")

    assert isinstance(status, dict)


def test_it_forwards_a_task_status_by_upid(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    upid = finished_task(pve, "pve1", 4103)

    status = pool.proxmox(target, "GET", f"/nodes/pve1/tasks/{upid}/status")

    assert (status["upid"], status["exitstatus"]) == (upid, "OK")


def test_it_forwards_a_task_log_with_its_params(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    upid = finished_task(pve, "pve1", 4104)

    log = pool.proxmox(target, "GET", f"/nodes/pve1/tasks/{upid}/log", {"start": 0, "limit": 1})

    assert log == [{"n": 1, "t": "started"}]


def test_proxmox_error_text_travels_to_the_caller(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    pve.fail("GET", "/cluster/status", 500, "cluster filesystem not ready", times=1)

    with pytest.raises(ProxmoxError) as caught:
        pool.proxmox(target, "GET", "/cluster/status")

    assert caught.value.status == 500
    assert caught.value.message == "cluster filesystem not ready"
    assert "pve1.zone1.agents.flexplane" in str(caught.value)
    assert "cluster filesystem not ready" in str(caught.value)


def test_proxmox_field_errors_travel_to_the_caller(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    # A name the proxy's check lets through (its labels' characters) that Proxmox's dns-name refuses.
    with pytest.raises(ProxmoxError) as caught:
        pool.proxmox(target, "PUT", "/nodes/pve1/qemu/4105/config", {"name": "a..b"})

    assert caught.value.status == 400
    assert caught.value.message == "Parameter verification failed."
    assert "name" in caught.value.errors
    assert "name: " in str(caught.value)


# Attempts to get around the allowlist (dot segments, encodings, /access, method overrides) are rows
# of the security suite: tests/security/test_agent_channel.py.
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "//cluster/resources"),
        ("GET", "/cluster/resources/"),
        ("GET", "/cluster\\resources"),
        ("GET", "/cluster/resources?type=vm"),
        ("GET", "/cluster/resources#x"),
        ("GET", "/cluster/resources\x00"),
        ("GET", "/cluster/resources\n"),
        ("GET", "/cluster/resourcés"),
        ("GET", "cluster/resources"),
        ("POST", "/nodes/pve1/lxc"),
        ("POST", "/nodes/pve1/qemu/100/template"),
        ("POST", "/nodes/pve1/storage/local/upload"),
        ("DELETE", "/nodes/pve1/qemu/100/config"),
        ("POST", "/nodes/pve1/qemu/100/agent/exec"),
        ("POST", "/nodes/pve1/qemu/100/status/suspend"),
        ("POST", "/nodes/pve1/qemu/100/status/Start"),
        ("POST", "/nodes/pve1/qemu/100/status/start/"),
        ("POST", "/nodes/pve1/qemu/100/status/./start"),
        ("PUT", "/nodes/pve1/qemu/99/config"),
        ("PUT", "/nodes/pve1/qemu/0100/config"),
        ("DELETE", "/nodes/pve1/qemu/100/"),
        ("GET", "/pools/demo"),
        ("PUT", "/pools/FP-demo"),
        ("DELETE", "/pools"),
        ("GET", "/nodes/pve1/qemu/100/agent/file-read"),
        ("GET", "/nodes/pve1/storage/local/content"),
        ("POST", "/cluster/resources"),
        ("DELETE", "/nodes/pve1/status"),
        ("get", "/cluster/resources"),
        ("Get", "/cluster/resources"),
        ("HEAD", "/cluster/resources"),
        ("PATCH", "/cluster/resources"),
        ("GET ", "/cluster/resources"),
        ("", "/cluster/resources"),
        ("GET", "/nodes/-pve1/status"),
        ("GET", "/nodes/pve1/tasks/UPID:pve1:../status"),
    ],
)
def test_it_refuses_requests_not_on_the_allowlist_without_calling_proxmox(
    pool: AgentPool, target: AgentTarget, pve: Any, method: str, path: str
) -> None:
    before = list(pve.requests)

    with pytest.raises(ProxyRefused):
        pool.proxmox(target, method, path)

    assert pve.requests == before


def test_it_refuses_a_method_override_parameter_and_forwards_nothing(
    pool: AgentPool, target: AgentTarget, pve: Any
) -> None:
    before = list(pve.requests)

    with pytest.raises(ProxyRefused):
        pool.proxmox(target, "POST", "/version", {"_method": "GET"})

    assert pve.requests == before


def test_it_refuses_too_many_params_without_calling_proxmox(
    pool: AgentPool, target: AgentTarget, pve: Any
) -> None:
    before = list(pve.requests)

    with pytest.raises(ProxyRefused, match="more than 64 parameters"):
        pool.proxmox(target, "GET", "/cluster/resources", {f"p{i}": "1" for i in range(65)})

    assert pve.requests == before


def test_a_refusal_names_the_host_and_the_reason(pool: AgentPool, target: AgentTarget) -> None:
    with pytest.raises(ProxyRefused) as caught:
        pool.proxmox(target, "GET", "/access/users")

    assert str(caught.value) == (
        f"The agent pve1.zone1.agents.flexplane at {target.address} refused the request: "
        "GET /access/users is not on the proxy's allowlist."
    )


def finished_task(pve: Any, node: str, vmid: int) -> str:
    """The UPID of a finished start task, made with the fake's own task machinery."""

    async def body() -> str:
        return "started"

    # With time_scale 0 the task runs to its end inside this call, on no particular loop.
    return str(run_apart(pve.task(node, "qmstart", vmid, "root@pam!flexplane", body)))


def test_one_pool_serves_many_threads_at_once(pool: AgentPool, target: AgentTarget) -> None:
    with ThreadPoolExecutor(max_workers=8) as threads:
        versions = list(threads.map(lambda _: pool.proxmox(target, "GET", "/version"), range(32)))

    assert len(versions) == 32
    assert all(version == versions[0] for version in versions)


def test_a_disk_moves_only_between_vms_of_one_flexplane_pool(
    pool: AgentPool, target: AgentTarget, pve: Any
) -> None:
    """The one check against Proxmox's state (agent.proxy.pools): the cluster's VMs read first, the move
    forwarded only where both VMs are in one ``fp-`` pool; refused, naming ``target-vmid``, otherwise."""
    pve.add_vm(
        4161, "data.volume", node="pve1", pool="fp-alpha", config={"scsi0": "local-lvm:vm-4161-disk-0"}
    )
    pve.add_vm(4162, "web-1", node="pve1", pool="fp-alpha")
    pve.add_vm(4163, "db-1", node="pve1", pool="fp-beta")
    pve.add_vm(4164, "admin-vm", node="pve1")
    move = {"disk": "scsi0", "target-disk": "scsi1"}

    for other in ("4163", "4164", "9999"):
        before = len(pve.requests)
        with pytest.raises(ProxyRefused, match="parameter target-vmid: VM"):
            pool.proxmox(target, "POST", "/nodes/pve1/qemu/4161/move_disk", {**move, "target-vmid": other})
        assert [path for _, path, _ in pve.requests[before:]] == ["/api2/json/cluster/resources"]

    pool.proxmox(target, "POST", "/nodes/pve1/qemu/4161/move_disk", {**move, "target-vmid": "4162"})
    method, path, _ = pve.requests[-1]
    assert (method, path) == ("POST", "/api2/json/nodes/pve1/qemu/4161/move_disk")


def test_a_disk_of_a_vm_in_no_flexplane_pool_never_moves(
    pool: AgentPool, target: AgentTarget, pve: Any
) -> None:
    pve.add_vm(4165, "outside", node="pve1")
    pve.add_vm(4166, "outside-too", node="pve1")

    with pytest.raises(ProxyRefused, match=r"no pool of flex\.plane's"):
        pool.proxmox(
            target, "POST", "/nodes/pve1/qemu/4165/move_disk", {"disk": "scsi0", "target-vmid": "4166"}
        )


def test_a_clone_copies_a_template_or_a_vm_of_the_pool_it_goes_into(
    pool: AgentPool, target: AgentTarget, pve: Any
) -> None:
    """The clone check (agent.proxy.pools): a template is cloned into any flex.plane pool (a VM made from
    its image), a VM only into its own pool (a volume snapshot, a volume made from one); another pool's
    VM, a VM in no pool and an unknown VM are refused after the cluster's VMs are read, naming ``pool``.
    (The forwarded clones name a VMID taken: Proxmox refuses them, and the session's fake keeps no copy.)"""
    added = [
        pve.add_vm(4171, "data.volume", node="pve1", pool="fp-alpha"),
        pve.add_vm(4172, "secret.volume", node="pve1", pool="fp-beta"),
        pve.add_vm(4173, "outside", node="pve1"),
        pve.add_vm(4174, "debian-12", node="pve1", template=True),
    ]
    clone = {"name": "copy.snapshot", "pool": "fp-alpha", "full": "1"}

    def taken(source: str) -> dict[str, str]:
        return {**clone, "newid": "4173" if source == "4174" else "4174"}

    try:
        for source, reason in (("4172", "pool fp-beta"), ("4173", "pool none"), ("9998", "not among")):
            before = len(pve.requests)
            with pytest.raises(ProxyRefused, match=reason):
                pool.proxmox(target, "POST", f"/nodes/pve1/qemu/{source}/clone", taken(source))
            assert [path for _, path, _ in pve.requests[before:]] == ["/api2/json/cluster/resources"]

        for source in ("4171", "4174"):
            with pytest.raises(ProxmoxError, match="already exists"):  # forwarded: Proxmox's own answer
                pool.proxmox(target, "POST", f"/nodes/pve1/qemu/{source}/clone", taken(source))
            method, path, _ = pve.requests[-1]
            assert (method, path) == ("POST", f"/api2/json/nodes/pve1/qemu/{source}/clone")
    finally:
        for vm in added:
            pve.vms.remove(vm)
            for members in pve.pools.values():
                members.discard(vm.vmid)
