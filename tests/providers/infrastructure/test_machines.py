"""The infrastructure provider end to end on the test world: the real ``python -m providers`` with the world's
kubeconfig and a ``flexplane-capi`` client certificate from the world's CA, against the Kubernetes
emulator (our CRDs and Cluster API core's installed) and the fake Proxmox zones through the real agents.

The Cluster API objects are written as the tenant API writes them (its builders: the Cluster and its
ProxmoxCluster) and as core and CABPK would (a Machine with its bootstrap Secret, the ProxmoxMachine it
owns): Cluster API core's stand-in is not
needed to prove this provider. What is checked is the fake's own state: the VM in VDC demo, its config,
its cloud-init snippets on the node.
"""

from __future__ import annotations

import contextlib
import datetime
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from kubernetes import client, config

from devstack import seed
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.processes import Process, spawn
from devstack.world import World
from devstack.world.providers import WORLD_TIMINGS
from orchestrator.models.vms import idempotency_tag
from orchestrator.services.clusters import objects
from orchestrator.sources.kube_objects import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    MACHINE,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE,
)
from providers.common.crds import load_crds
from providers.common.kube import Kube
from providers.infrastructure.spec import FINALIZER
from tests.apikit import GraphQL, eventually, vdc_namespace
from tests.vmkit import fake_vms, forget, named, requests_to

NAMESPACE = "vdc-demo"
CLUSTER_NAME = "infra-test"
# The cluster's network in VDC demo (made by the module, through the API, as a tenant would).
NETWORK = "zone-a/k8s-nodes"
CIDR = "10.123.45.0/24"
ZONE = "zone-a"
USER_DATA = (
    "## template: jinja\n#cloud-config\nruncmd:\n  - [kubeadm, join, --config, /run/kubeadm/join.yaml]\n"
)
TIMEOUT = 60.0


def _crds() -> list[dict[str, Any]]:
    """Ours from charts/providers/crds (their source of truth), and Cluster API core's."""
    return [*load_crds(), *CLUSTER_API_CORE_CRDS]


class Providers:
    """The providers' process, started (and killed, and started again) by the tests."""

    def __init__(self, world: World) -> None:
        assert world.ca is not None
        self.world = world
        cert, key = world.ca.issue_client("flexplane-capi", world.pki / "capi", "capi")
        self.env = {
            **world.orchestrator_env(),
            "FLEXPLANE_AGENT_CERT": str(cert),
            "FLEXPLANE_AGENT_KEY": str(key),
            "FLEXPLANE_PROVIDERS_LEADER_TTL": "2",
            **{f"FLEXPLANE_PROVIDERS_{name}": value for name, value in WORLD_TIMINGS.items()},
        }
        self.process: Process | None = None
        self.runs = 0

    def start(self) -> None:
        self.runs += 1
        self.process = spawn(
            "providers",
            [sys.executable, "-m", "providers"],
            self.world.cfg.scratch / "logs" / "providers.log",
            env=self.env,
            append=self.runs > 1,
        )

    def kill(self) -> None:
        assert self.process is not None
        self.process.popen.send_signal(signal.SIGKILL)
        self.process.popen.wait(10)

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.process.stop(grace=10.0)
        return self.process.popen.returncode

    def output(self) -> str:
        return self.process.output() if self.process is not None else ""


@pytest.fixture(scope="module")
def kube(world: World) -> Iterator[Kube]:
    assert world.kubeconfig is not None
    world.kube.install_crds(_crds())
    api_client = config.new_client_from_config(config_file=str(world.kubeconfig))
    yield Kube(api_client)
    api_client.close()


@pytest.fixture(scope="module")
def network(api: GraphQL) -> Iterator[str]:
    """A network of VDC demo in zone-a for the cluster's machines (its id)."""
    answer = api(
        "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) {"
        " network { id } errors { message } } }",
        user="alice",
        vdc="demo",
        variables={"input": {"name": NETWORK.split("/")[1], "zone": ZONE, "cidr": CIDR}},
    )
    made = answer.data["createNetwork"]
    assert made["errors"] == [], made["errors"]
    yield made["network"]["id"]
    api(
        "mutation($id: ID!) { deleteNetwork(id: $id) { errors { message } } }",
        user="alice",
        vdc="demo",
        variables={"id": made["network"]["id"]},
    )


@pytest.fixture(scope="module")
def providers(world: World, kube: Kube, network: str) -> Iterator[Providers]:
    """The providers running, with a cluster of VDC demo (its Cluster and ProxmoxCluster) provisioned."""
    vdc_namespace(kube.core, "demo")
    # As the tenant API writes them (without node pools: the test makes its Machines as core would).
    plan = objects.ClusterPlan("demo", CLUSTER_NAME, "v1.34.2", "debian-12", NETWORK, 1, ())
    written = ((PROXMOX_CLUSTER, objects.proxmox_cluster(plan)), (CLUSTER, objects.cluster(plan)))
    for resource, body in written:
        kube.objects.create_namespaced_custom_object(
            resource.group, resource.version, NAMESPACE, resource.plural, body
        )
    running = Providers(world)
    running.start()
    try:
        eventually(
            lambda: provisioned(kube, PROXMOX_CLUSTER, CLUSTER_NAME),
            TIMEOUT,
            lambda: f"ProxmoxCluster {CLUSTER_NAME} provisioned ({running.output()[-3000:]})",
            interval=0.2,
        )
        yield running
    finally:
        code = running.stop()
        log = running.output()
        for resource in (PROXMOX_CLUSTER, CLUSTER):
            delete(kube, resource, CLUSTER_NAME)
    assert code == 0, f"the providers did not stop cleanly on SIGTERM ({code}):\n{log[-3000:]}"
    assert "Traceback" not in log, log[-5000:]


def create(kube: Kube, resource: Any, name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    body = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "labels": objects.labels("demo", CLUSTER_NAME), **metadata},
        "spec": spec,
    }
    kube.objects.create_namespaced_custom_object(
        resource.group, resource.version, NAMESPACE, resource.plural, body
    )
    found = kube.get(resource, NAMESPACE, name)
    assert found is not None
    return found


def provisioned(kube: Kube, resource: Any, name: str) -> dict[str, Any] | None:
    obj = kube.get(resource, NAMESPACE, name)
    if obj and (obj.get("status") or {}).get("initialization", {}).get("provisioned"):
        return obj
    return None


def ready(obj: dict[str, Any] | None) -> dict[str, Any]:
    found = [c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == "Ready"]
    return found[0] if found else {}


def machine(kube: Kube, name: str, *, bootstrap: bool = True) -> dict[str, Any]:
    """A Machine (with its bootstrap Secret, when ``bootstrap``) and the ProxmoxMachine it owns, as core
    and CABPK write them; the ProxmoxMachine."""
    owner = create(
        kube,
        MACHINE,
        name,
        {
            "clusterName": CLUSTER_NAME,
            "failureDomain": ZONE,
            "bootstrap": {"dataSecretName": name} if bootstrap else {},
            "infrastructureRef": {
                "apiGroup": PROXMOX_MACHINE.group,
                "kind": PROXMOX_MACHINE.kind,
                "name": name,
            },
        },
    )
    if bootstrap:
        bootstrap_secret(kube, name)
    reference = {
        "apiVersion": MACHINE.api_version,
        "kind": MACHINE.kind,
        "name": name,
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    return create(
        kube,
        PROXMOX_MACHINE,
        name,
        {"computeProfile": "small", "storageProfile": "standard", "image": "debian-12"},
        ownerReferences=[reference],
    )


def bootstrap_secret(kube: Kube, name: str) -> None:
    kube.core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name=name, labels={CLUSTER_NAME_LABEL: CLUSTER_NAME}),
            type="cluster.x-k8s.io/secret",
            string_data={"value": USER_DATA, "format": "cloud-config"},
        ),
    )


def wait_provisioned(kube: Kube, providers: Providers, name: str) -> dict[str, Any]:
    found = eventually(
        lambda: provisioned(kube, PROXMOX_MACHINE, name),
        TIMEOUT,
        lambda: (
            f"ProxmoxMachine {name} provisioned ({kube.get(PROXMOX_MACHINE, NAMESPACE, name)}; "
            f"{providers.output()[-3000:]})"
        ),
        interval=0.1,
    )
    assert found is not None
    return found


def delete(kube: Kube, resource: Any, name: str) -> None:
    kube.objects.delete_namespaced_custom_object(
        resource.group, resource.version, NAMESPACE, resource.plural, name
    )


def snippets_of(world: World, zone: str, node: str) -> dict[str, str]:
    folder = world.agents[(zone, node)].config_path.parent / "snippets"
    return {path.name: path.read_text() for path in folder.glob("*")} if folder.is_dir() else {}


def the_vm(world: World, name: str) -> tuple[str, int, dict[str, Any]]:
    [(zone, vmid)] = named(world, name)
    return zone, vmid, fake_vms(world, zone)[vmid]


@pytest.fixture
def machine_name(kube: Kube, world: World) -> Iterator[Callable[[str], str]]:
    """Names for a test's machines; afterwards their ProxmoxMachines are deleted (their VMs with them)."""
    made: list[str] = []

    def name(stem: str) -> str:
        made.append(f"{stem}-{uuid.uuid4().hex[:6]}")
        return made[-1]

    yield name
    for each in made:
        if kube.get(PROXMOX_MACHINE, NAMESPACE, each) is not None:
            delete(kube, PROXMOX_MACHINE, each)
    for each in made:
        eventually(partial(_gone, kube, each), TIMEOUT, f"{each} gone")
        delete(kube, MACHINE, each)
        with contextlib.suppress(client.ApiException):  # a machine made without its bootstrap Secret
            kube.core.delete_namespaced_secret(each, NAMESPACE)


def _gone(kube: Kube, name: str) -> bool:
    return kube.get(PROXMOX_MACHINE, NAMESPACE, name) is None


# ------------------------------------------------------------------------------------------ the cluster


def test_a_cluster_is_provisioned_with_the_vdcs_zones_as_failure_domains(
    kube: Kube, providers: Providers
) -> None:
    cluster = kube.get(PROXMOX_CLUSTER, NAMESPACE, CLUSTER_NAME)
    assert cluster is not None
    assert cluster["status"]["failureDomains"] == [
        {"name": "zone-a", "controlPlane": False},
        {"name": "zone-b", "controlPlane": False},
    ]
    assert ready(cluster)["status"] == "True"


def test_a_cluster_naming_another_vdc_is_refused_and_touches_nothing(
    kube: Kube, providers: Providers
) -> None:
    create(kube, PROXMOX_CLUSTER, "sneaky", {"vdc": "other", "network": NETWORK})
    eventually(
        lambda: ready(kube.get(PROXMOX_CLUSTER, NAMESPACE, "sneaky")).get("reason") == "VdcMismatch",
        TIMEOUT,
        "a VdcMismatch condition",
    )
    refused = kube.get(PROXMOX_CLUSTER, NAMESPACE, "sneaky")
    assert refused is not None
    assert "initialization" not in refused["status"]
    delete(kube, PROXMOX_CLUSTER, "sneaky")


# ------------------------------------------------------------------------------------------ machines


def test_a_machine_waits_for_its_bootstrap_data_then_becomes_a_vm_in_vdc_demo(
    kube: Kube, world: World, providers: Providers, machine_name: Callable[[str], str]
) -> None:
    name = machine_name("w")
    machine(kube, name, bootstrap=False)
    eventually(
        lambda: ready(kube.get(PROXMOX_MACHINE, NAMESPACE, name)).get("reason") == "WaitingForBootstrapData",
        TIMEOUT,
        "a WaitingForBootstrapData condition",
    )
    assert named(world, name) == []
    bootstrap_secret(kube, name)
    kube.objects.patch_namespaced_custom_object(
        MACHINE.group,
        MACHINE.version,
        NAMESPACE,
        MACHINE.plural,
        name,
        {"spec": {"bootstrap": {"dataSecretName": name}}},
        _content_type="application/merge-patch+json",
    )
    made = wait_provisioned(kube, providers, name)

    zone, vmid, vm = the_vm(world, name)
    assert (zone, vm["pool"], vm["status"]) == (ZONE, "fp-demo", "running")
    assert "fp-vdc-demo" in vm["config"]["tags"]
    smbios = dict(part.split("=", 1) for part in vm["config"]["smbios1"].split(","))["uuid"]
    assert made["spec"]["providerID"] == f"proxmox://{smbios}"
    assert made["metadata"]["finalizers"] == [FINALIZER]
    status = made["status"]
    assert (status["zone"], status["node"], status["vmid"]) == (zone, vm["node"], vmid)
    assert ready(made)["status"] == "True"
    # Its address on the cluster's network, as the network's addresses are handed out (its ipconfig0).
    address = vm["config"]["ipconfig0"].split("ip=")[1].split("/")[0]
    assert status["addresses"] == [
        {"type": "InternalIP", "address": address},
        {"type": "Hostname", "address": name},
    ]
    # The bootstrap data is its user data, and its meta data names it by its SMBIOS uuid.
    user, meta = f"fp-demo-{vmid}-user.yaml", f"fp-demo-{vmid}-meta.yaml"
    assert vm["config"]["cicustom"] == f"user=local:snippets/{user},meta=local:snippets/{meta}"
    snippets = snippets_of(world, zone, vm["node"])
    assert snippets[user] == USER_DATA
    assert snippets[meta] == f"instance-id: {smbios}\nlocal-hostname: {name}\n"

    delete(kube, PROXMOX_MACHINE, name)
    eventually(lambda: kube.get(PROXMOX_MACHINE, NAMESPACE, name) is None, TIMEOUT, f"{name} deleted")
    assert named(world, name) == []
    assert not {user, meta} & set(snippets_of(world, zone, vm["node"]))


def test_a_provider_killed_mid_create_leaves_one_vm_after_its_restart(
    kube: Kube, world: World, providers: Providers, machine_name: Callable[[str], str]
) -> None:
    name = machine_name("k")
    pve = world.fakes[ZONE].pve
    world.fakes.on_loop(lambda: pve.slow_network(0.3))
    try:
        machine(kube, name)
        # Killed once the VM is cloned and tagged, before it is started, holding none of the VDC's locks
        # (a lock its holder took to the grave is only free once its lease expires).
        eventually(
            lambda: (
                (found := named(world, name))
                and "fp-vdc-demo" in fake_vms(world, ZONE)[found[0][1]]["config"].get("tags", "")
                and _vdc_locks_free(world)
            ),
            TIMEOUT,
            "a tagged clone",
            interval=0.02,
        )
        providers.kill()
        _expire_vdc_locks(world)
    finally:
        world.fakes.on_loop(lambda: pve.slow_network(0.0))
    providers.start()
    wait_provisioned(kube, providers, name)
    assert len(named(world, name)) == 1
    assert the_vm(world, name)[2]["status"] == "running"


def restored(kube: Kube, name: str) -> dict[str, Any]:
    """The Machine and ProxmoxMachine ``name`` as a restore of the management cluster leaves them: deleted
    without their VM (the cluster was lost), made again from their specs (new uids, no status, the
    ProxmoxMachine's providerID kept, the Machine's bootstrap data Secret not: CABPK makes it again);
    the new ProxmoxMachine."""
    old_machine, old_infra = kube.get(MACHINE, NAMESPACE, name), kube.get(PROXMOX_MACHINE, NAMESPACE, name)
    assert old_machine is not None
    assert old_infra is not None
    kube.objects.patch_namespaced_custom_object(
        PROXMOX_MACHINE.group,
        PROXMOX_MACHINE.version,
        NAMESPACE,
        PROXMOX_MACHINE.plural,
        name,
        {"metadata": {"finalizers": []}},
    )
    delete(kube, PROXMOX_MACHINE, name)
    delete(kube, MACHINE, name)
    kube.core.delete_namespaced_secret(name, NAMESPACE)
    owner = create(kube, MACHINE, name, old_machine["spec"])
    reference = {
        "apiVersion": MACHINE.api_version,
        "kind": MACHINE.kind,
        "name": name,
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    return create(kube, PROXMOX_MACHINE, name, old_infra["spec"], ownerReferences=[reference])


def test_a_restored_machine_adopts_its_vm_and_its_deletion_deletes_it(
    kube: Kube, world: World, providers: Providers, machine_name: Callable[[str], str]
) -> None:
    name = machine_name("r")
    machine(kube, name)
    made = wait_provisioned(kube, providers, name)
    zone, vmid, _ = the_vm(world, name)
    providers.stop()  # the management cluster is lost: nothing runs until it is restored
    try:
        again = restored(kube, name)
    finally:
        providers.start()
    assert again["metadata"]["uid"] != made["metadata"]["uid"]
    assert again["spec"]["providerID"] == made["spec"]["providerID"]

    adopted = wait_provisioned(kube, providers, name)
    assert named(world, name) == [(zone, vmid)]  # the same VM, and no second one
    assert adopted["status"]["vmid"] == vmid
    assert adopted["status"]["addresses"] == made["status"]["addresses"]
    assert ready(adopted)["reason"] == "Provisioned"
    assert "adopted" in ready(adopted)["message"]
    tags = fake_vms(world, zone)[vmid]["config"]["tags"].split(";")
    idempotency = [tag for tag in tags if tag.startswith("fp-idem-")]
    assert idempotency == [idempotency_tag(again["metadata"]["uid"])]  # the old uid's is gone

    delete(kube, PROXMOX_MACHINE, name)  # its deletion finds the adopted VM by the new tag
    eventually(lambda: kube.get(PROXMOX_MACHINE, NAMESPACE, name) is None, TIMEOUT, f"{name} deleted")
    assert named(world, name) == []


def test_a_restored_machine_whose_vm_is_gone_says_so_and_makes_none(
    kube: Kube, world: World, providers: Providers, machine_name: Callable[[str], str]
) -> None:
    name = machine_name("g")
    machine(kube, name)
    wait_provisioned(kube, providers, name)
    zone, vmid, _ = the_vm(world, name)
    providers.stop()
    try:
        restored(kube, name)
        forget(world, zone, vmid)  # lost with its host meanwhile
    finally:
        providers.start()

    def not_found() -> dict[str, Any] | None:
        said = ready(kube.get(PROXMOX_MACHINE, NAMESPACE, name))
        return said if said.get("reason") == "VmNotFound" else None

    said = eventually(not_found, TIMEOUT, lambda: f"{name} VmNotFound ({providers.output()[-3000:]})")
    assert said is not None
    assert "delete the Machine" in said["message"]
    assert named(world, name) == []


def test_a_machine_of_a_paused_cluster_is_left_alone_until_it_is_unpaused(
    kube: Kube, world: World, providers: Providers, machine_name: Callable[[str], str]
) -> None:
    name = machine_name("p")
    pause = partial(
        kube.objects.patch_namespaced_custom_object,
        CLUSTER.group,
        CLUSTER.version,
        NAMESPACE,
        CLUSTER.plural,
        CLUSTER_NAME,
    )
    pause({"spec": {"paused": True}})  # as a restore writes a cluster
    try:
        machine(kube, name)
        with pytest.raises(AssertionError):  # its create is not run while paused
            eventually(lambda: named(world, name), 3.0, f"a VM {name}")
        assert not provisioned(kube, PROXMOX_MACHINE, name)
    finally:
        pause({"spec": {"paused": None}})
    wait_provisioned(kube, providers, name)
    assert len(named(world, name)) == 1


VDC_LOCKS = ("fp-lock-vdc-demo", "fp-lock-vdc-demo.security-groups")


def _expire_vdc_locks(world: World) -> None:
    """A lock the killed provider held (it may take one between the check and the kill) is free once its
    lease expires (30 s for the security groups'): let it expire now."""
    assert world.kubeconfig is not None
    api = client.CoordinationV1Api(config.new_client_from_config(config_file=str(world.kubeconfig)))
    try:
        for name in VDC_LOCKS:
            with contextlib.suppress(client.ApiException):
                lease = api.read_namespaced_lease(name, seed.NAMESPACE)
                if lease.spec and lease.spec.holder_identity:
                    lease.spec.renew_time = lease.spec.acquire_time = datetime.datetime(
                        2000, 1, 1, tzinfo=datetime.UTC
                    )
                    api.replace_namespaced_lease(name, seed.NAMESPACE, lease)
    finally:
        api.api_client.close()


def _vdc_locks_free(world: World) -> bool:
    """Whether VDC demo's locks (its creates', its security groups') are free."""
    assert world.kubeconfig is not None
    api = client.CoordinationV1Api(config.new_client_from_config(config_file=str(world.kubeconfig)))
    try:
        for name in VDC_LOCKS:
            try:
                lease = api.read_namespaced_lease(name, seed.NAMESPACE)
            except client.ApiException:
                continue
            if lease.spec and lease.spec.holder_identity:
                return False
        return True
    finally:
        api.api_client.close()


def test_a_task_error_on_clone_leaves_no_vm_and_the_machine_is_retried(
    kube: Kube, world: World, providers: Providers, machine_name: Callable[[str], str]
) -> None:
    name = machine_name("e")
    pve = world.fakes[ZONE].pve
    clones_before = len(requests_to(world, ZONE, "POST", "/clone"))
    world.fakes.on_loop(lambda: _fail_next_clone(pve))
    machine(kube, name)
    wait_provisioned(kube, providers, name)
    clones = requests_to(world, ZONE, "POST", "/clone")[clones_before:]
    assert len(clones) >= 2, clones
    failed = [t for t in _tasks(world, "qmclone") if "No space left" in str(t.get("exitstatus"))]
    assert failed, "no clone ended in TASK ERROR"
    # Nothing of the failed clone is left: one VM of that name, the one the retry made (running).
    [(zone, vmid)] = named(world, name)
    assert fake_vms(world, zone)[vmid]["status"] == "running"
    assert len([vm for vm in fake_vms(world, ZONE).values() if vm["lock"] == "clone"]) == 0


def _tasks(world: World, kind: str) -> list[dict[str, Any]]:
    pve = world.fakes[ZONE].pve
    found: list[dict[str, Any]] = world.fakes.on_loop(
        lambda: [dict(t) for t in pve.tasks.values() if t["type"] == kind]
    )
    return found


def _fail_next_clone(pve: Any) -> None:
    """The next linked clone's disk cannot be allocated: its task ends in TASK ERROR (clone failed)."""
    from fakepve.routing import die

    original = pve._qm_alloc

    def alloc(storage: str, vmid: int, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("linked_from"):
            del pve._qm_alloc
            raise die(f"unable to write to storage '{storage}': No space left on device")
        return original(storage, vmid, *args, **kwargs)

    pve._qm_alloc = alloc


def _allocated_mib(world: World, node: str) -> int:
    """The memory placement counts as taken on a node of the zone: every guest's but templates'."""
    guests = [vm for vm in fake_vms(world, ZONE).values() if vm["node"] == node and not vm["template"]]
    return sum(int(str(vm["config"].get("memory", 512)).split("=")[-1]) for vm in guests)


# The fake's nodes have 8 GiB; a "small" machine takes 1 GiB (devstack/seed.py).
NODE_MIB, SMALL_MIB = 8192, 1024
OCCUPANT_VMID = 61_000


@contextlib.contextmanager
def placed_last(world: World, node: str) -> Iterator[None]:
    """Placement tries ``node`` last, whatever earlier tests left in the module's world: a guest (not
    flex.plane's) takes its memory but a small machine's, so no other host that fits is tighter."""
    fill = NODE_MIB - SMALL_MIB - _allocated_mib(world, node)
    pve = world.fakes[ZONE].pve
    config = {"cores": 1, "memory": fill}
    world.fakes.on_loop(lambda: pve.add_vm(OCCUPANT_VMID, "occupant", node=node, config=config))
    try:
        yield
    finally:
        forget(world, ZONE, OCCUPANT_VMID)


def test_a_machine_whose_hosts_agent_is_away_is_made_on_another_host(
    kube: Kube, world: World, api: GraphQL, providers: Providers, machine_name: Callable[[str], str]
) -> None:
    name = machine_name("a")
    # The live host is the freest now, and then filled (placed_last): the agents are away on the others,
    # one of which placement tries first.
    nodes = sorted((node for zone, node in world.agents if zone == ZONE), key=partial(_allocated_mib, world))
    live, away = nodes[0], nodes[1:]
    roomy = [node for node in away if NODE_MIB - _allocated_mib(world, node) >= SMALL_MIB * 1.5]
    assert roomy, f"no host but {live} has room for the machine: the test needs one ({away})"
    for node in away:
        world.stop_agent(ZONE, node)
    try:
        with placed_last(world, live):
            machine(kube, name)
            made = wait_provisioned(kube, providers, name)
    finally:
        for node in away:
            world.start_agent(ZONE, node)
        # The world's orchestrator reaches them again (for the tests after this one).
        eventually(lambda: not api("{ hosts { id agentVersion } }", user="admin").errors, 15.0, "agents back")
    assert made["status"]["node"] == live
    [(zone, vmid)] = named(world, name)
    assert fake_vms(world, zone)[vmid]["node"] == live
    # It was tried where an agent was away first, and nothing was left there.
    assert any(f"ready on {node}" in providers.output() for node in away)
