"""Hosts over their life through the API: cordon, drain (verified in the fake Proxmox), removal, and the
admin's view of each host. The world is shared by the session: every test puts back what it changed."""

from __future__ import annotations

import time
import tomllib
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from kubernetes import client, config

from agent import __version__ as AGENT_VERSION
from devstack import seed
from devstack.world import World
from orchestrator.sources.kube_objects import config_map, config_map_name
from tests.apikit import Answer, GraphQL
from tests.vmkit import create, fake_vms, forget, ok, requests_to

GIB = 1024**3
DRAIN_FIELDS = """state message requestedBy startedAt endedAt
  virtualMachines { virtualMachineId vmid name state target reason taskId }"""
CORDON = """mutation($zone: String!, $host: String!) { cordonHost(zone: $zone, host: $host) {
  host { id cordoned } errors { field message code } } }"""
UNCORDON = """mutation($zone: String!, $host: String!) { uncordonHost(zone: $zone, host: $host) {
  host { id cordoned } errors { field message code } } }"""
DRAIN = f"""mutation($zone: String!, $host: String!) {{ drainHost(zone: $zone, host: $host) {{
  drain {{ {DRAIN_FIELDS} }} errors {{ field message code }} }} }}"""
REMOVE = """mutation($zone: String!, $host: String!) { removeHost(zone: $zone, host: $host) {
  host { id name zone } errors { field message code } } }"""
REMOVE_FORCED = """mutation($zone: String!, $host: String!) {
  removeHost(zone: $zone, host: $host, force: true) { host { id } errors { field message code } } }"""
STATUS = f"""query($zone: String!, $host: String!) {{
  hostDrain(zone: $zone, host: $host) {{ {DRAIN_FIELDS} }} }}"""
CREATE_HOST = (
    """mutation($input: HostInput!) { createHost(input: $input) { host { id } errors { message } } }"""
)
DETAILS = """{ hosts { id zone name online cordoned agentVersion agentPackageVersion proxmoxVersion
  certificateExpiresAt
  certificateRenewal { lastSuccessAt lastError failures nextAttemptAt }
  lastUpdate { result fromVersion toVersion message at }
  usage { cpu { usedFraction cores } memory { usedBytes totalBytes } storage { usedBytes totalBytes } }
  drain { state } } }"""
TASK = "query($id: ID!) { task(id: $id) { type status host virtualMachineId } }"


def mutate(api: GraphQL, document: str, user: str = "admin", **variables: Any) -> dict[str, Any]:
    answer = api(document, user=user, variables=variables)
    assert answer.errors == [], answer.body
    (result,) = answer.data.values()
    assert isinstance(result, dict)
    return result


def drain_of(api: GraphQL, zone: str, host: str) -> dict[str, Any] | None:
    answer = api(STATUS, user="admin", variables={"zone": zone, "host": host})
    assert answer.errors == [], answer.body
    result: dict[str, Any] | None = answer.data["hostDrain"]
    return result


def ended(api: GraphQL, zone: str, host: str, timeout: float = 60) -> dict[str, Any]:
    """The host's drain once it is no longer RUNNING."""
    deadline = time.monotonic() + timeout
    while True:
        drain = drain_of(api, zone, host)
        assert drain is not None
        if drain["state"] != "RUNNING":
            return drain
        assert time.monotonic() < deadline, f"the drain still runs: {drain}"
        time.sleep(0.2)


def by_vmid(drain: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {vm["vmid"]: vm for vm in drain["virtualMachines"]}


def host_row(api: GraphQL, user: str, ident: str) -> dict[str, Any] | None:
    answer = api("{ hosts { id cordoned online } }", user=user)
    return next((h for h in answer.data["hosts"] if h["id"] == ident), None)


def cordoned(api: GraphQL, ident: str) -> bool:
    row = host_row(api, "admin", ident)
    assert row is not None, f"{ident} is not listed"
    return bool(row["cordoned"])


@contextmanager
def uncordoned_after(api: GraphQL, zone: str, *hosts: str) -> Iterator[None]:
    """Whatever the test does to these hosts, they end uncordoned and without a drain record."""
    try:
        yield
    finally:
        for host in hosts:
            mutate(api, UNCORDON, zone=zone, host=host)


@contextmanager
def guests(world: World, zone: str, node: str, *specs: tuple[int, str, int, str | None]) -> Iterator[None]:
    """Guests of the test's own on a node of the fake: (vmid, status, memory MiB, VDC or None)."""
    pve = world.fakes[zone].pve

    def add() -> None:
        for vmid, status, memory, vdc in specs:
            config = {
                "cores": 1,
                "memory": memory,
                "scsi0": f"local-lvm:vm-{vmid}-disk-0,size=8G",
                "net0": "virtio,bridge=vmbr0",
            }
            if vdc:
                config["tags"] = f"fp-vdc-{vdc}"
            pve.add_vm(
                vmid,
                f"drain-{vmid}",
                node=node,
                status=status,
                config=config,
                pool=f"fp-{vdc}" if vdc else None,
            )

    world.fakes.on_loop(add)
    try:
        yield
    finally:
        for vmid, *_ in specs:
            world.fakes.on_loop(lambda vmid=vmid: pve.release_config_lock(vmid) if pve.vm(vmid) else None)
            forget(world, zone, vmid)


def hold_lock(world: World, zone: str, vmid: int) -> None:
    pve = world.fakes[zone].pve
    world.fakes.loop.run(pve.hold_config_lock(vmid, None))


# ------------------------------------------------------------------------------------------ cordon


def test_a_cordoned_host_takes_no_new_vm_and_keeps_its_own(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    with uncordoned_after(api, "zone-a", "pve1", "pve2"):
        for host in ("pve1", "pve2"):
            result = mutate(api, CORDON, zone="zone-a", host=host)
            assert result["errors"] == []
            assert result["host"] == {"id": f"zone-a/{host}", "cordoned": True}
        made = ok(create(api, "alice", "demo", name=vm_name("cordon")))
        assert made["placement"]["host"] == "pve3"
        rejected = {r["host"]: r["reason"] for r in made["placement"]["rejected"]}
        assert "cordoned" in rejected["pve1"]
        assert "cordoned" in rejected["pve2"]
        # The VMs already there keep running.
        assert fake_vms(world, "zone-a")[100]["status"] == "running"
        assert fake_vms(world, "zone-a")[100]["node"] == "pve1"
    for host in ("pve1", "pve2"):
        assert host_row(api, "admin", f"zone-a/{host}") == {
            "id": f"zone-a/{host}",
            "cordoned": False,
            "online": True,
        }


def test_cordoning_an_unknown_host_is_not_found(api: GraphQL) -> None:
    result = mutate(api, CORDON, zone="zone-a", host="pve9")
    assert result["host"] is None
    assert [e["code"] for e in result["errors"]] == ["NOT_FOUND"]
    assert "zone-a/pve9" in result["errors"][0]["message"]


def test_a_user_may_not_cordon_drain_or_remove_hosts_nor_read_a_drain(api: GraphQL) -> None:
    variables = {"zone": "zone-a", "host": "pve1"}
    for document in (CORDON, UNCORDON, DRAIN, REMOVE, STATUS):
        answer = api(document, user="alice", variables=variables)
        assert answer.codes == ["FORBIDDEN"], answer.body
    assert host_row(api, "admin", "zone-a/pve1") == {"id": "zone-a/pve1", "cordoned": False, "online": True}


# ------------------------------------------------------------------------------------------- drain


def test_a_drain_moves_every_vm_it_can_and_says_why_the_others_cannot(api: GraphQL, world: World) -> None:
    # On zone-b's pve3: two VMs that can move (one running, one stopped), one no host has room for,
    # and one whose config lock another operation holds.
    specs = (
        (4201, "running", 1024, "demo"),
        (4202, "stopped", 1024, None),
        (4203, "running", 16384, None),
        (4204, "running", 1024, None),
    )
    with guests(world, "zone-b", "pve3", *specs), uncordoned_after(api, "zone-b", "pve3"):
        hold_lock(world, "zone-b", 4204)
        started = mutate(api, DRAIN, zone="zone-b", host="pve3")
        assert started["errors"] == []
        assert sorted(by_vmid(started["drain"])) == [4201, 4202, 4203, 4204]
        assert started["drain"]["requestedBy"] == "Platform Admin"
        assert cordoned(api, "zone-b/pve3")

        drain = ended(api, "zone-b", "pve3")
        assert drain["state"] == "INCOMPLETE"
        assert drain["message"] == "2 of 4 VM(s) moved"
        vms = by_vmid(drain)
        fake = fake_vms(world, "zone-b")
        for vmid, status in ((4201, "running"), (4202, "stopped")):
            assert vms[vmid]["state"] == "MOVED"
            assert vms[vmid]["target"] in ("pve1", "pve2")
            # The fake's own state: the guest lives on the target now, running as before.
            assert (fake[vmid]["node"], fake[vmid]["status"]) == (vms[vmid]["target"], status)
        assert vms[4203]["state"] == "FAILED"
        assert "not enough memory" in vms[4203]["reason"]
        assert vms[4204]["state"] == "FAILED"
        assert "locked by another operation" in vms[4204]["reason"]
        assert fake[4203]["node"] == fake[4204]["node"] == "pve3"
        assert fake[4204]["status"] == "running"

        # Each migration is a Proxmox task of its own; the demo VM's is readable by its VDC.
        task = api(TASK, user="alice", vdc="demo", variables={"id": vms[4201]["taskId"]}).data["task"]
        assert task == {
            "type": "qmigrate",
            "status": "SUCCEEDED",
            "host": "pve3",
            "virtualMachineId": "zone-b/4201",
        }
        live = requests_to(world, "zone-b", "POST", "/qemu/4201/migrate")
        assert live == [{"target": vms[4201]["target"], "online": "1", "with-local-disks": "1"}]
        assert requests_to(world, "zone-b", "POST", "/qemu/4202/migrate") == [{"target": vms[4202]["target"]}]

        # Once the lock is released and the big VM shrunk, calling drainHost again moves the rest, and
        # only the rest: the VMs already moved are not migrated twice.
        world.fakes.on_loop(lambda: world.fakes["zone-b"].pve.release_config_lock(4204))
        world.fakes.on_loop(lambda: world.fakes["zone-b"].pve.vm(4203).config.update(memory=1024))
        assert mutate(api, DRAIN, zone="zone-b", host="pve3")["errors"] == []
        drain = ended(api, "zone-b", "pve3")
        assert drain["state"] == "DONE"
        assert {vm["state"] for vm in drain["virtualMachines"]} == {"MOVED"}
        fake = fake_vms(world, "zone-b")
        assert [vmid for vmid, vm in fake.items() if vm["node"] == "pve3" and not vm["template"]] == []
        assert len(requests_to(world, "zone-b", "POST", "/qemu/4201/migrate")) == 1

        # The host stays cordoned until the admin uncordons it; the drain record then goes.
        result = mutate(api, UNCORDON, zone="zone-b", host="pve3")
        assert result["host"]["cordoned"] is False
        assert drain_of(api, "zone-b", "pve3") is None


def test_a_drain_of_an_unknown_host_is_not_found(api: GraphQL) -> None:
    result = mutate(api, DRAIN, zone="zone-b", host="pve9")
    assert result["drain"] is None
    assert [e["code"] for e in result["errors"]] == ["NOT_FOUND"]


@pytest.fixture(scope="module")
def core(world: World) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(world.kubeconfig)))


def write_drain(core: client.CoreV1Api, heartbeat: datetime, vms: list[dict[str, Any]]) -> None:
    """A drain record of zone-b/pve3 as a replica of the orchestrator left it (created or replaced)."""
    spec = {
        "zone": "zone-b",
        "node": "pve3",
        "state": "RUNNING",
        "vms": vms,
        "requestedBy": "Platform Admin",
        "startedAt": heartbeat.isoformat(),
        "updatedAt": heartbeat.isoformat(),
        "runner": "replica-that-stopped/1/0000",
        "heartbeat": heartbeat.isoformat(),
    }
    name = config_map_name("host-drain", "zone-b.pve3")
    try:
        current = core.read_namespaced_config_map(name, seed.NAMESPACE)
    except client.ApiException:
        body = config_map("host-drain", "zone-b.pve3", spec, {"flexplane.io/zone": "zone-b"})
        core.create_namespaced_config_map(seed.NAMESPACE, body)
        return
    version = current.metadata.resource_version if current.metadata else None
    body = config_map("host-drain", "zone-b.pve3", spec, {"flexplane.io/zone": "zone-b"}, version)
    core.replace_namespaced_config_map(name, seed.NAMESPACE, body)


def test_a_drain_whose_replica_stopped_is_reported_interrupted_and_resumed(
    api: GraphQL, world: World, core: client.CoreV1Api
) -> None:
    pending = [{"vmid": 4211, "name": "drain-4211", "state": "PENDING"}]
    with (
        guests(world, "zone-b", "pve3", (4211, "running", 1024, None)),
        uncordoned_after(api, "zone-b", "pve3"),
    ):
        mutate(api, CORDON, zone="zone-b", host="pve3")
        # A drain another replica runs (its heartbeat is fresh): calling drainHost returns it as it is,
        # and the host cannot be uncordoned under it.
        write_drain(core, datetime.now(UTC), pending)
        assert mutate(api, DRAIN, zone="zone-b", host="pve3")["drain"]["state"] == "RUNNING"
        refused = mutate(api, UNCORDON, zone="zone-b", host="pve3")
        assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
        assert "being drained" in refused["errors"][0]["message"]
        time.sleep(0.5)
        assert fake_vms(world, "zone-b")[4211]["node"] == "pve3"  # nobody else started on it

        # That replica stopped: its heartbeat is old. The drain is interrupted, and drainHost resumes it.
        write_drain(core, datetime.now(UTC) - timedelta(minutes=10), pending)
        assert (drain_of(api, "zone-b", "pve3") or {}).get("state") == "INTERRUPTED"
        assert mutate(api, DRAIN, zone="zone-b", host="pve3")["drain"]["state"] == "RUNNING"
        drain = ended(api, "zone-b", "pve3")
        assert drain["state"] == "DONE"
        assert by_vmid(drain)[4211]["state"] == "MOVED"
        assert fake_vms(world, "zone-b")[4211]["node"] == by_vmid(drain)[4211]["target"]


# ------------------------------------------------------------------------------------------ removal


def test_a_host_with_vms_is_not_removed(api: GraphQL) -> None:
    result = mutate(api, REMOVE, zone="zone-a", host="pve1")
    assert result["host"] is None
    assert [e["code"] for e in result["errors"]] == ["CONFLICT"]
    message = result["errors"][0]["message"]
    assert "VMs are still on host pve1 of zone zone-a" in message
    assert "web-1" in message
    assert "legacy-mail" in message
    assert host_row(api, "admin", "zone-a/pve1") is not None


def test_an_empty_host_is_removed_and_can_be_added_back(api: GraphQL, world: World) -> None:
    assert not [
        vm for vm in fake_vms(world, "zone-b").values() if vm["node"] == "pve3" and not vm["template"]
    ]
    removed = mutate(api, REMOVE, zone="zone-b", host="pve3")
    try:
        assert removed == {"host": {"id": "zone-b/pve3", "name": "pve3", "zone": "zone-b"}, "errors": []}
        answer = api("{ zones { id hosts { name } } }", user="admin")
        assert answer.errors == []
        zone_b = next(z for z in answer.data["zones"] if z["id"] == "zone-b")
        assert [h["name"] for h in zone_b["hosts"]] == ["pve1", "pve2"]
        # Proxmox is untouched: the node is still in the zone's cluster.
        assert "pve3" in world.fakes.on_loop(lambda: dict(world.fakes["zone-b"].pve.nodes))
    finally:
        endpoint = world.agents[("zone-b", "pve3")].endpoint
        added = mutate(api, CREATE_HOST, input={"zone": "zone-b", "host": "pve3", "endpoint": endpoint})
        assert added["errors"] == []
    assert host_row(api, "admin", "zone-b/pve3") == {"id": "zone-b/pve3", "cordoned": False, "online": True}


def test_a_host_whose_zone_does_not_answer_is_removed_only_with_force(api: GraphQL) -> None:
    zone = f"lab-{uuid.uuid4().hex[:6]}"
    mutate(
        api,
        "mutation($input: ZoneInput!) { createZone(input: $input) { errors { message } } }",
        input={"id": zone},
    )
    try:
        # Added with an address nothing answers on: whether VMs are on it cannot be told.
        mutate(api, CREATE_HOST, input={"zone": zone, "host": "pve1", "endpoint": "192.0.2.10:7443"})
        refused = mutate(api, REMOVE, zone=zone, host="pve1")
        assert [e["code"] for e in refused["errors"]] == ["UNAVAILABLE"]
        assert "cannot tell whether VMs are on host pve1" in refused["errors"][0]["message"]
        forced = mutate(api, REMOVE_FORCED, zone=zone, host="pve1")
        assert forced == {"host": {"id": f"{zone}/pve1"}, "errors": []}
    finally:
        mutate(api, "mutation($id: ID!) { deleteZone(id: $id) { errors { message } } }", id=zone)


# ----------------------------------------------------------------------------------- the admin's view


def certificate_expiry(world: World, zone: str, node: str) -> datetime:
    settings = tomllib.loads(world.agents[(zone, node)].config_path.read_text())
    cert = x509.load_pem_x509_certificate(Path(settings["tls_cert"]).read_bytes())
    return cert.not_valid_after_utc


def test_the_admin_sees_each_hosts_agent_certificate_update_and_usage(api: GraphQL, world: World) -> None:
    answer = api(DETAILS, user="admin")
    assert answer.errors == [], answer.body
    hosts = answer.data["hosts"]
    assert len(hosts) == len(world.agents)
    for host in hosts:
        assert host["agentVersion"] == AGENT_VERSION
        assert host["agentPackageVersion"] is None  # the world's agents run from the checkout, no package
        assert host["proxmoxVersion"].startswith("9.")
        expires = datetime.fromisoformat(host["certificateExpiresAt"])
        assert expires == certificate_expiry(world, host["zone"], host["name"]).replace(microsecond=0)
        assert host["certificateRenewal"]["failures"] == 0
        assert host["certificateRenewal"]["lastError"] is None
        assert host["lastUpdate"]["result"] in ("none", "updated", "refused", "rolled-back", "failed")
        usage = host["usage"]
        # What the fake's /cluster/resources says of every node.
        assert usage["cpu"] == {"usedFraction": 0.02, "cores": 4}
        assert usage["memory"] == {"usedBytes": 2 * GIB, "totalBytes": 8 * GIB}
        assert usage["storage"] == {"usedBytes": 4 * GIB, "totalBytes": 64 * GIB}
        assert host["drain"] is None


def test_a_user_sees_hosts_without_the_admins_details(api: GraphQL) -> None:
    answer = api(DETAILS, user="alice")
    assert answer.errors == [], answer.body
    for host in answer.data["hosts"]:
        assert host["online"] is True
        for field in (
            "agentVersion",
            "agentPackageVersion",
            "proxmoxVersion",
            "certificateExpiresAt",
            "certificateRenewal",
            "lastUpdate",
            "usage",
            "drain",
        ):
            assert host[field] is None, field


def test_a_host_whose_agent_does_not_answer_is_partial_data(api: GraphQL, world: World) -> None:
    world.stop_agent("zone-b", "pve2")
    try:
        started = time.monotonic()
        answer: Answer = api(DETAILS, user="admin")
        elapsed = time.monotonic() - started
    finally:
        world.start_agent("zone-b", "pve2")
    hosts = answer.data["hosts"]
    index = next(i for i, h in enumerate(hosts) if h["id"] == "zone-b/pve2")
    silent = hosts[index]
    assert silent["agentVersion"] is None
    assert silent["certificateExpiresAt"] is None
    assert silent["usage"]["memory"]["totalBytes"] == 8 * GIB  # Proxmox still reports the node
    assert all(h["agentVersion"] == AGENT_VERSION for i, h in enumerate(hosts) if i != index)
    assert answer.codes == ["UNAVAILABLE"]
    error = answer.errors[0]
    assert error["path"] == ["hosts", index]
    assert error["extensions"]["zone"] == "zone-b/pve2"
    assert "pve2.zone-b" in error["message"]
    assert elapsed < 10
