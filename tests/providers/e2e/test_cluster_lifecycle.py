"""A tenant cluster's whole life on the stand-ins: the real providers (``python -m providers``), Cluster API
core's and CABPK's stand-in (devstack/capi_core.py), the hosted control plane's runtime stand-in
(devstack/hosted_control_plane.py: a LoadBalancer address, and the tenant's API server as an emulator over
HTTPS with the rendered serving certificate), the fake Proxmox zones through the real agents.

What this proves: the providers follow the Cluster API contract as core and CABPK drive it (Machines from a
MachineDeployment, bootstrap data, providerIDs, scaling, rollouts, deletion), make and delete the VMs in the
tenant's VDC, render the hosted control plane and install into the tenant's API server what joins need.
What it cannot prove: that kubeadm joins, a kubelet runs or Konnectivity tunnels (no VM boots here).

The Cluster API objects are written directly, made by the tenant API's builders
(``orchestrator.services.clusters.objects``). One cluster
lives through the module, test after test (bring-up, scaling, upgrade, faults, deletion); each test waits
for the state it needs by polling.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import requests
import yaml
from kubernetes import client
from kubernetes.config import new_client_from_config, new_client_from_config_dict

from devstack.capi_kube import WATCH_FILTER_LABEL
from devstack.world import World
from orchestrator.services.clusters import objects
from orchestrator.sources.kube_objects import (
    BOOTSTRAP_GROUP,
    CLUSTER_API_GROUP,
    CLUSTER_API_VERSION,
    CONTROLPLANE_GROUP,
    INFRASTRUCTURE_GROUP,
    OUR_VERSION,
    Resource,
)
from tests.apikit import GraphQL, eventually, vdc_namespace
from tests.vmkit import fake_vms, named

Body = dict[str, Any]
T = TypeVar("T")

NS = "vdc-demo"
CLUSTER = "e2e"
POOL = f"{CLUSTER}-workers"
CP_NAMESPACE = f"fpcp-demo-{CLUSTER}"
ZONE = "zone-a"
CREATE_NETWORK = (
    "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) { errors { message } } }"
)
DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { message } } }"
CORE, BOOTSTRAP, INFRA, CP = CLUSTER_API_GROUP, BOOTSTRAP_GROUP, INFRASTRUCTURE_GROUP, CONTROLPLANE_GROUP
# Core's stand-in sees only this module's objects (core's --watch-filter), whatever other modules left.
WATCH_FILTER = "e2e-lifecycle"
VERSIONS = ("v1.34.2", "v1.35.0")
TIMEOUT = 90.0


class Mgmt:
    """The management cluster, through the official client."""

    def __init__(self, world: World) -> None:
        self.api = new_client_from_config(config_file=str(world.kubeconfig))
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.core: Any = client.CoreV1Api(self.api)
        self.apps: Any = client.AppsV1Api(self.api)

    @staticmethod
    def _version(group: str) -> str:
        return CLUSTER_API_VERSION if group in (CORE, BOOTSTRAP) else OUR_VERSION

    def list(self, group: str, plural: str, selector: str = "") -> list[Body]:
        found: list[Body] = self.custom.list_namespaced_custom_object(
            group, self._version(group), NS, plural, label_selector=selector
        )["items"]
        return found

    def get(self, group: str, plural: str, name: str) -> Body | None:
        try:
            found: Body = self.custom.get_namespaced_custom_object(
                group, self._version(group), NS, plural, name
            )
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    def create(self, resource: Resource, body: Body) -> None:
        self.custom.create_namespaced_custom_object(
            resource.group, resource.version, NS, resource.plural, body
        )

    def patch(self, group: str, plural: str, name: str, patch: Body) -> None:
        self.custom.patch_namespaced_custom_object(group, self._version(group), NS, plural, name, patch)

    def secret_text(self, name: str, key: str) -> str:
        return base64.b64decode(self.core.read_namespaced_secret(name, NS).data[key]).decode()


def cluster_objects(network: str) -> list[tuple[Resource, Body]]:
    """What the tenant API writes (the product's builders): a cluster, one node pool of 3 on a network
    of zone-a, every object labelled for core's stand-in."""
    # The pool's network is zone-a's: its Machines stay in zone-a.
    pool = objects.PoolPlan("workers", "small", "standard", 3, 20, 1, 1024, zone=ZONE)
    plan = objects.ClusterPlan("demo", CLUSTER, VERSIONS[0], "debian-12", network, 2, (pool,))
    made = objects.all_objects(plan)
    for _, body in made:
        body["metadata"]["labels"][WATCH_FILTER_LABEL] = WATCH_FILTER
    return made


@pytest.fixture(scope="module")
def network(api: GraphQL) -> Iterator[str]:
    """A network of VDC demo in zone-a for the cluster's workers, deleted afterwards."""
    made = api(
        CREATE_NETWORK,
        user="alice",
        vdc="demo",
        variables={"input": {"name": "e2e-nodes", "zone": ZONE, "cidr": "10.177.3.0/24"}},
    )
    assert made.data["createNetwork"]["errors"] == [], made.body
    yield f"{ZONE}/e2e-nodes"
    api(DELETE_NETWORK, user="alice", vdc="demo", variables={"id": f"{ZONE}/e2e-nodes"})


@pytest.fixture(scope="module")
def mgmt(capi: World, network: str) -> Iterator[Mgmt]:
    kube = Mgmt(capi)
    vdc_namespace(kube.core, "demo")
    for resource, body in cluster_objects(network):
        kube.create(resource, body)
    yield kube
    kube.api.close()


def wait(probe: Callable[[], T | None], what: str | Callable[[], str], interval: float = 0.1) -> T:
    """Poll ``probe`` until it answers something (within TIMEOUT), and return that."""
    found = eventually(probe, TIMEOUT, what, interval)
    assert found is not None
    return found


def providers_log(world: World) -> str:
    """The providers' and the stand-ins' last words, for a failure's message."""
    said = world.providers.output()[-3000:] if world.providers is not None else "(no providers running)"
    for part in (world.capi_core, world.hosted_control_planes):
        if part is not None:
            said += f"\n{part.loop.name}: {part.loop.errors[-5:]}"
    if world.hosted_control_planes is not None:
        said += f"\ntenant API servers: {world.hosted_control_planes.servers}"
    kube = Mgmt(world)
    said += f"\nmachines: {phases(kube)}"
    for infra in kube.list(INFRA, "proxmoxmachines"):
        said += f"\n{infra['metadata']['name']}: {infra.get('status', {}).get('conditions')}"
    kube.api.close()
    return said


def machines(mgmt: Mgmt) -> list[Body]:
    return [m for m in mgmt.list(CORE, "machines", f"cluster.x-k8s.io/deployment-name={POOL}")]


def live(mgmt: Mgmt) -> list[Body]:
    return [m for m in machines(mgmt) if not m["metadata"].get("deletionTimestamp")]


def workers_ready(
    mgmt: Mgmt, world: World, count: int, version: str | None = None
) -> Callable[[], list[Body] | None]:
    """A probe: ``count`` Machines, all provisioned (at ``version``), none going, and one VM each."""

    def probe() -> list[Body] | None:
        found = machines(mgmt)
        if len(found) != count or any(m["metadata"].get("deletionTimestamp") for m in found):
            return None
        if any(m.get("status", {}).get("phase") != "Provisioned" for m in found):
            return None
        if version is not None and any(m["spec"]["version"] != version for m in found):
            return None
        return found

    return probe


def phases(mgmt: Mgmt) -> list[tuple[str, str | None]]:
    return [(m["metadata"]["name"], m.get("status", {}).get("phase")) for m in machines(mgmt)]


def wait_workers(mgmt: Mgmt, world: World, count: int, version: str | None = None) -> list[Body]:
    return wait(
        workers_ready(mgmt, world, count, version),
        lambda: f"{count} provisioned workers ({phases(mgmt)}; {providers_log(world)})",
    )


def vms_of_cluster(world: World) -> dict[str, list[tuple[str, int, Body]]]:
    """The fake zones' VMs named after the pool's Machines: name -> [(zone, vmid, vm)]."""
    found: dict[str, list[tuple[str, int, Body]]] = {}
    for zone in world.fakes.zones:
        for vmid, vm in fake_vms(world, zone).items():
            if str(vm["name"]).startswith(f"{POOL}-"):
                found.setdefault(vm["name"], []).append((zone, vmid, vm))
    return found


def tenant_api(mgmt: Mgmt) -> client.ApiClient:
    """The tenant cluster's API server, with the admin kubeconfig the control-plane provider wrote."""
    return new_client_from_config_dict(yaml.safe_load(mgmt.secret_text(f"{CLUSTER}-kubeconfig", "value")))


def snippet(world: World, zone: str, node: str, name: str) -> str:
    return (world.agents[(zone, node)].config_path.parent / "snippets" / name).read_text()


def smbios_uuid(vm: Body) -> str:
    return dict(part.split("=", 1) for part in vm["config"]["smbios1"].split(","))["uuid"]


# ------------------------------------------------------------------------------------------ bring-up


def test_the_providers_process_answers_the_kubelets_probes(capi: World) -> None:
    """Liveness and readiness, where the chart's probes read them (FLEXPLANE_PROBES_LISTEN)."""

    def answer(path: str) -> requests.Response | None:
        try:
            return requests.get(f"http://{capi.providers_probes}{path}", timeout=5)
        except requests.ConnectionError:
            return None  # not serving yet: the process is still checking Cluster API core

    for path in ("/healthz", "/readyz"):
        got = eventually(lambda: answer(path), 30, f"the providers' {path}")  # noqa: B023 (called at once)
        assert got is not None
        assert got.status_code == 200, got.text
        assert got.json() == {"status": "ok"}
    missing = requests.get(f"http://{capi.providers_probes}/metrics", timeout=5)
    assert missing.status_code == 404


def test_the_hosted_control_plane_comes_up_and_serves_the_tenant_api(mgmt: Mgmt, capi: World) -> None:
    def initialized() -> Body | None:
        fcp = mgmt.get(CP, "flexcontrolplanes", CLUSTER)
        return (
            fcp
            if (fcp or {}).get("status", {}).get("initialization", {}).get("controlPlaneInitialized")
            else None
        )

    fcp = wait(initialized, lambda: f"the control plane initialized ({providers_log(capi)})")
    assert fcp["status"]["externalManagedControlPlane"] is True
    hosted = capi.hosted_control_planes
    assert hosted is not None
    server = hosted.server(CP_NAMESPACE)
    assert server is not None
    address = server.url.split("//")[1].rsplit(":", 1)[0]
    assert fcp["spec"]["controlPlaneEndpoint"] == {"host": address, "port": 6443}

    def cluster_initialized() -> Body | None:
        cluster = mgmt.get(CORE, "clusters", CLUSTER) or {}
        init = cluster.get("status", {}).get("initialization", {})
        return (
            cluster if init == {"infrastructureProvisioned": True, "controlPlaneInitialized": True} else None
        )

    cluster = wait(cluster_initialized, "the Cluster's status (core's stand-in)")
    assert cluster["spec"]["controlPlaneEndpoint"] == {"host": address, "port": 6443}

    # The hosted control plane's objects in its namespace, and Cluster API's Secrets in the VDC's.
    deployment = mgmt.apps.read_namespaced_deployment("control-plane", CP_NAMESPACE)
    containers = {c.name for c in deployment.spec.template.spec.containers}
    assert {
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "konnectivity-server",
    } <= containers
    service = mgmt.core.read_namespaced_service("kube-apiserver", CP_NAMESPACE)
    assert service.status.load_balancer.ingress[0].ip == address
    for name in (f"{CLUSTER}-kubeconfig", f"{CLUSTER}-ca"):
        secret = mgmt.core.read_namespaced_secret(name, NS)
        assert secret.type == "cluster.x-k8s.io/secret"
        assert secret.metadata.labels["cluster.x-k8s.io/cluster-name"] == CLUSTER

    # The provider's installs reached the tenant's API server over HTTPS (TLS verified against the CA).
    api = tenant_api(mgmt)
    try:
        core: Any = client.CoreV1Api(api)
        assert core.read_namespaced_config_map("cluster-info", "kube-public").data["kubeconfig"]
        apps: Any = client.AppsV1Api(api)
        assert apps.read_namespaced_daemon_set("konnectivity-agent", "kube-system")
        rbac: Any = client.RbacAuthorizationV1Api(api)
        binding = rbac.read_cluster_role_binding("flexplane:vdc-admins")
        assert [s.name for s in binding.subjects] == ["flexplane:vdc:demo"]
    finally:
        api.close()

    # What the provider sees of its health: the API server's /readyz through the endpoint, etcd's member
    # ready (the stand-in reports the StatefulSet's status), the agents' DaemonSet read (the stand-in runs
    # no node: none scheduled).
    def healthy() -> Body | None:
        health = ((mgmt.get(CP, "flexcontrolplanes", CLUSTER) or {}).get("status") or {}).get("health") or {}
        return health if health.get("etcd", {}).get("readyMembers") == 1 else None

    health = wait(healthy, "the control plane's health")
    assert health["apiServer"] == {"ready": True, "reason": "Ready", "message": ""}
    assert health["etcd"] == {"members": 1, "readyMembers": 1}
    assert health["konnectivity"] == {"observed": True, "agents": 0, "connectedAgents": 0}


def test_three_workers_become_vms_in_vdc_demo_with_their_bootstrap_data(mgmt: Mgmt, capi: World) -> None:
    workers = wait_workers(mgmt, capi, 3)
    vms = vms_of_cluster(capi)
    assert sorted(vms) == sorted(m["metadata"]["name"] for m in workers)
    api = tenant_api(mgmt)
    try:
        core: Any = client.CoreV1Api(api)
        tokens = {
            s.metadata.name
            for s in core.list_namespaced_secret("kube-system").items
            if s.type == "bootstrap.kubernetes.io/token"
        }
    finally:
        api.close()
    for machine in workers:
        name = machine["metadata"]["name"]
        [(zone, vmid, vm)] = vms[name]
        assert (zone, vm["pool"], vm["status"]) == (ZONE, "fp-demo", "running")
        assert machine["spec"]["providerID"] == f"proxmox://{smbios_uuid(vm)}"
        # On the cluster's network: the address it was given there is the Machine's InternalIP.
        address = vm["config"]["ipconfig0"].split("ip=")[1].split("/")[0]
        assert machine["status"]["addresses"][0] == {"type": "InternalIP", "address": address}
        # CABPK's bootstrap data is the VM's cloud-init user data, its join token valid in the tenant cluster.
        data = mgmt.secret_text(machine["spec"]["bootstrap"]["dataSecretName"], "value")
        assert data.startswith("## template: jinja\n#cloud-config\n")
        assert snippet(capi, zone, vm["node"], f"fp-demo-{vmid}-user.yaml") == data
        join = yaml.safe_load(yaml.safe_load(data)["write_files"][0]["content"])
        token = join["discovery"]["bootstrapToken"]
        assert token["apiServerEndpoint"] == f"{machine_endpoint(mgmt)}"
        assert f"bootstrap-token-{token['token'].split('.')[0]}" in tokens

    # Each worker's kubelet (the stand-in's) registers its Node, NotReady until a network plugin runs on
    # it: the provider's default, Cilium, installed with kubeadm's addons, makes every one Ready.
    names = {machine["metadata"]["name"] for machine in workers}

    def ready_nodes() -> set[str] | None:
        api = tenant_api(mgmt)
        try:
            core: Any = client.CoreV1Api(api)
            apps: Any = client.AppsV1Api(api)
            nodes = core.list_node().items
            agents = apps.read_namespaced_daemon_set("cilium", "kube-system")
        finally:
            api.close()
        ready = {
            node.metadata.name
            for node in nodes
            if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        }
        return ready if ready == names and agents is not None else None

    wait(ready_nodes, "the workers' Nodes Ready")


def machine_endpoint(mgmt: Mgmt) -> str:
    cluster = mgmt.get(CORE, "clusters", CLUSTER)
    assert cluster is not None
    endpoint = cluster["spec"]["controlPlaneEndpoint"]
    return f"{endpoint['host']}:{endpoint['port']}"


# ------------------------------------------------------------------------------------------ scaling


def test_scaling_to_five_then_back_to_two_removes_the_newest_vms(mgmt: Mgmt, capi: World) -> None:
    first = {m["metadata"]["name"] for m in wait_workers(mgmt, capi, 3)}
    mgmt.patch(CORE, "machinedeployments", POOL, {"spec": {"replicas": 5}})
    five = {m["metadata"]["name"] for m in wait_workers(mgmt, capi, 5)}
    added = five - first
    assert len(added) == 2
    assert set(vms_of_cluster(capi)) == five

    mgmt.patch(CORE, "machinedeployments", POOL, {"spec": {"replicas": 2}})
    two = {m["metadata"]["name"] for m in wait_workers(mgmt, capi, 2)}
    assert two < first  # the two new ones went, then the newest of the first three
    eventually(lambda: set(vms_of_cluster(capi)) == two, TIMEOUT, lambda: f"only {two} left in Proxmox")


# ------------------------------------------------------------------------------------------ upgrade


def test_an_upgrade_changes_the_control_planes_images_and_rolls_the_pool(mgmt: Mgmt, capi: World) -> None:
    before = {m["metadata"]["name"] for m in wait_workers(mgmt, capi, 2)}
    # Control plane first, then the workers (the tenant API's order).
    mgmt.patch(CP, "flexcontrolplanes", CLUSTER, {"spec": {"version": VERSIONS[1]}})

    def upgraded() -> Body | None:
        fcp = mgmt.get(CP, "flexcontrolplanes", CLUSTER)
        status = (fcp or {}).get("status", {})
        return fcp if status.get("version") == VERSIONS[1] and status.get("upToDateReplicas") == 2 else None

    eventually(upgraded, TIMEOUT, lambda: f"the control plane at {VERSIONS[1]} ({providers_log(capi)})", 0.1)
    deployment = mgmt.apps.read_namespaced_deployment("control-plane", CP_NAMESPACE)
    images = {c.name: c.image for c in deployment.spec.template.spec.containers}
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert images[component].endswith(f":{VERSIONS[1]}"), images

    mgmt.patch(CORE, "machinedeployments", POOL, {"spec": {"template": {"spec": {"version": VERSIONS[1]}}}})
    after = {m["metadata"]["name"] for m in wait_workers(mgmt, capi, 2, VERSIONS[1])}
    assert not after & before
    eventually(lambda: set(vms_of_cluster(capi)) == after, TIMEOUT, "the old workers' VMs gone")


# ------------------------------------------------------------------------------------------ faults


def scale_by_one_and_catch_the_clone(
    mgmt: Mgmt, capi: World, count: int, state: Callable[[Body], bool] = lambda vm: True
) -> tuple[str, str, str]:
    """Scale the pool to ``count`` (one more) with zone-a slowed down; (machine, zone, node) of the new
    Machine's VM as soon as its clone exists, mid-create."""
    pve = capi.fakes[ZONE].pve
    known = {m["metadata"]["name"] for m in machines(mgmt)}
    capi.fakes.on_loop(lambda: pve.slow_network(0.3))
    try:
        mgmt.patch(CORE, "machinedeployments", POOL, {"spec": {"replicas": count}})

        def cloning() -> tuple[str, str, str] | None:
            for name, found in vms_of_cluster(capi).items():
                if name not in known and state(found[0][2]):
                    zone, _, vm = found[0]
                    return name, zone, vm["node"]
            return None

        return wait(cloning, "the new worker's clone", interval=0.02)
    finally:
        capi.fakes.on_loop(lambda: pve.slow_network(0.0))


def test_a_worker_whose_nodes_agent_goes_down_mid_create_is_made_once(mgmt: Mgmt, capi: World) -> None:
    """The agent of the node its VM is being cloned on goes away. Proxmox's API is the cluster's: the
    create either goes on through another node's agent (the clone is fine, only its agent is gone) or
    fails, leaves nothing and is made on another node, as the timing falls. Either way the Machine gets
    one VM while that agent stays away, its providerID names that VM, and no half-made one is left."""
    wait_workers(mgmt, capi, 2)
    name, zone, node = scale_by_one_and_catch_the_clone(mgmt, capi, 3)
    capi.stop_agent(zone, node)
    try:
        wait_workers(mgmt, capi, 3)
        made = wait(
            lambda: vms_of_cluster(capi)[name] if len(vms_of_cluster(capi)[name]) == 1 else None,
            lambda: f"one VM for {name}: {vms_of_cluster(capi)[name]}",
        )
        machine = next(m for m in machines(mgmt) if m["metadata"]["name"] == name)
        assert machine["spec"]["providerID"] == f"proxmox://{smbios_uuid(made[0][2])}"
        assert made[0][2]["status"] == "running"
    finally:
        capi.start_agent(zone, node)
    wait(lambda: len(vms_of_cluster(capi)[name]) == 1, lambda: f"one VM for {name} ({providers_log(capi)})")


def test_the_providers_killed_mid_create_resume_without_a_second_vm(mgmt: Mgmt, capi: World) -> None:
    wait_workers(mgmt, capi, 3)
    # Killed once the VM runs, before (or as) the provider records it: the restart finds it by its tag.
    name, _, _ = scale_by_one_and_catch_the_clone(mgmt, capi, 4, lambda vm: vm["status"] == "running")
    capi.kill_providers()
    capi.start_providers_process()
    wait_workers(mgmt, capi, 4)
    assert len(vms_of_cluster(capi)[name]) == 1
    assert len(named(capi, name)) == 1


def test_a_task_error_on_clone_leaves_no_vm_and_the_worker_is_made_again(mgmt: Mgmt, capi: World) -> None:
    wait_workers(mgmt, capi, 4)
    pve = capi.fakes[ZONE].pve
    capi.fakes.on_loop(lambda: fail_next_clone(pve))
    mgmt.patch(CORE, "machinedeployments", POOL, {"spec": {"replicas": 5}})
    workers = wait_workers(mgmt, capi, 5)
    vms = vms_of_cluster(capi)
    assert sorted(vms) == sorted(m["metadata"]["name"] for m in workers)
    assert all(len(found) == 1 for found in vms.values())
    assert capi.fakes.on_loop(lambda: not hasattr(pve, "_qm_alloc") or "failing" not in repr(pve._qm_alloc))


def fail_next_clone(pve: Any) -> None:
    """The next linked clone's disk cannot be allocated: its task ends in TASK ERROR."""
    from fakepve.routing import die

    original = pve._qm_alloc

    def failing(storage: str, vmid: int, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("linked_from"):
            del pve._qm_alloc
            raise die(f"unable to write to storage '{storage}': No space left on device")
        return original(storage, vmid, *args, **kwargs)

    pve._qm_alloc = failing


# ------------------------------------------------------------------------------------------ deletion


def test_deleting_the_cluster_leaves_nothing(mgmt: Mgmt, capi: World) -> None:
    wait_workers(mgmt, capi, 5)
    mgmt.custom.delete_namespaced_custom_object(CORE, CLUSTER_API_VERSION, NS, "clusters", CLUSTER)

    def nothing_left() -> bool:
        selector = f"cluster.x-k8s.io/cluster-name={CLUSTER}"
        kinds = [
            (CORE, "clusters"),
            (CORE, "machinedeployments"),
            (CORE, "machines"),
            (BOOTSTRAP, "kubeadmconfigs"),
            (INFRA, "proxmoxclusters"),
            (INFRA, "proxmoxmachines"),
            (CP, "flexcontrolplanes"),
            (INFRA, "proxmoxmachinetemplates"),
            (BOOTSTRAP, "kubeadmconfigtemplates"),
        ]
        if any(mgmt.list(group, plural, selector) for group, plural in kinds):
            return False
        if mgmt.core.list_namespaced_secret(NS, label_selector=selector).items:
            return False
        if any(n.metadata.name == CP_NAMESPACE for n in mgmt.core.list_namespace().items):
            return False
        return not vms_of_cluster(capi)

    eventually(
        nothing_left, TIMEOUT, lambda: f"nothing of {CLUSTER} left ({providers_log(capi)})", interval=0.2
    )
    hosted = capi.hosted_control_planes
    assert hosted is not None
    eventually(lambda: hosted.server(CP_NAMESPACE) is None, TIMEOUT, "the tenant API server stopped")
