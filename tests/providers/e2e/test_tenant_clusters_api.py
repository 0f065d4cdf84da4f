"""Tenant clusters end to end through the tenant API (issue 16): GraphQL over HTTP and the portal's form, as
alice and bob, with the real providers (``python -m providers``), Cluster API core's and the hosted control
plane's stand-ins, and the fake Proxmox zones through the real agents.

One cluster lives through the module, test after test: made from GraphQL (one pool of 3 on a network of
alice's VDC), next to one made from the portal's form; scaled to 5 and back to 2; upgraded (the control
plane first, then the pool); reached with the kubeconfig alice downloads; never seen by bob; deleted,
leaving nothing. Each test polls for the state it needs. What the stand-ins cannot prove (a kubelet
joining) is said in tests/providers/e2e/test_cluster_lifecycle.py.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import yaml
from kubernetes import client
from kubernetes.config import new_client_from_config_dict

from devstack.world import World
from orchestrator.models.clusters import (
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    MACHINE,
    MACHINE_DEPLOYMENT,
    PENDING_UPGRADE_ANNOTATION,
    VDC_LABEL,
    namespace_of,
)
from tests.apikit import GraphQL, eventually
from tests.orchestrator.clusterkit import CLUSTER_FIELDS, CREATE_CLUSTER, NEXT, VERSION, cluster_input
from tests.portal.clusterkit import Management, create_in_portal, prepare, vdc_network
from tests.portal.sessionkit import login
from tests.vmkit import fake_vms

Body = dict[str, Any]

NAME, FORM = "e2e-api", "e2e-form"
POOL = "workers"
TIMEOUT = 90.0
CLUSTER = f"query($name: String!) {{ kubernetesCluster(name: $name) {{ {CLUSTER_FIELDS} }} }}"
CLUSTERS = "{ kubernetesClusters { name } }"
PAYLOAD = f"{{ kubernetesCluster {{ {CLUSTER_FIELDS} }} errors {{ field message code }} }}"
SCALE = f"""mutation($cluster: String!, $pool: String!, $count: Int!) {{
  scaleNodePool(cluster: $cluster, pool: $pool, count: $count) {PAYLOAD} }}"""
UPGRADE = f"""mutation($cluster: String!, $version: String!) {{
  upgradeKubernetesCluster(cluster: $cluster, version: $version) {PAYLOAD} }}"""
DELETE = f"mutation($cluster: String!) {{ deleteKubernetesCluster(cluster: $cluster) {PAYLOAD} }}"
KUBECONFIG = "query($cluster: String!) { kubeconfig(cluster: $cluster) { cluster endpoint kubeconfig } }"
NETWORKS = "{ networks { id name zone vnet } }"


VDC_QUOTA = "query($id: ID!) { vdc(id: $id) { quota { vcpus memoryMib } } }"
UPDATE_QUOTA = """mutation($id: ID!, $input: VdcUpdateInput!) { updateVdc(id: $id, input: $input) {
  errors { message } } }"""


@pytest.fixture(scope="module", autouse=True)
def room_for_two_control_planes(api: GraphQL) -> Iterator[None]:
    """VDC demo's quota grown, for this module, by what its two clusters' control planes take (each
    replica counts as CONTROL_PLANE_REPLICA): the session's world holds what other modules left there."""
    before = api(VDC_QUOTA, user="admin", variables={"id": "demo"}).data["vdc"]["quota"]
    grown = {"vcpus": before["vcpus"] + 4, "memoryMib": before["memoryMib"] + 4096}
    assert not api(UPDATE_QUOTA, user="admin", variables={"id": "demo", "input": {"quota": grown}}).data[
        "updateVdc"
    ]["errors"]
    yield
    api(UPDATE_QUOTA, user="admin", variables={"id": "demo", "input": {"quota": before}})


@pytest.fixture(scope="module")
def management(capi: World, api: GraphQL) -> Iterator[Management]:
    """The management cluster (the CRDs and the catalog's versions in place), the providers running."""
    found = prepare(capi, api)
    yield found
    found.core.api_client.close()


@pytest.fixture(scope="module")
def network(api: GraphQL, management: Management) -> Iterator[Body]:
    """A network of alice's VDC for the workers: its ``id`` (``<zone>/<vnet>``), ``name`` and ``vnet``."""
    with vdc_network(api) as made:
        zone, name = made.split("/")
        found = api(NETWORKS, user="alice", vdc="demo").data["networks"]
        yield next(n for n in found if (n["zone"], n["name"]) == (zone, name))


@pytest.fixture(scope="module")
def alice_portal(world: World) -> requests.Session:
    return login(world, "alice")[0]


def cluster(api: GraphQL, name: str, user: str = "alice", vdc: str = "demo") -> Body | None:
    found: Body | None = api(CLUSTER, user=user, vdc=vdc, variables={"name": name}).data["kubernetesCluster"]
    return found


def in_phase(api: GraphQL, name: str, phase: str, check: Callable[[Body], bool] = lambda c: True) -> Body:
    last: list[Body | None] = [None]

    def probe() -> Body | None:
        last[0] = found = cluster(api, name)
        return found if found is not None and found["phase"] == phase and check(found) else None

    found = eventually(probe, TIMEOUT, lambda: f"{name} {phase} (last seen: {last[0]})", 0.1)
    assert found is not None
    return found


def mutate(api: GraphQL, query: str, field: str, **variables: Any) -> Body:
    answer = api(query, user="alice", vdc="demo", variables=variables)
    assert answer.errors == [], answer.body
    payload: Body = answer.data[field]
    assert payload["errors"] == [], payload
    return payload


def worker_vms(world: World, cluster_name: str) -> dict[str, tuple[str, Body]]:
    """The fake zones' VMs of the cluster's pool, by name: (zone, vm)."""
    prefix = f"{cluster_name}-{POOL}-"
    return {
        vm["name"]: (zone, vm)
        for zone in world.fakes.zones
        for vm in fake_vms(world, zone).values()
        if str(vm["name"]).startswith(prefix)
    }


def machines(management: Management, cluster_name: str) -> list[Body]:
    return management.objects(MACHINE, "demo", cluster_name)


def workers(management: Management, world: World, count: int, version: str) -> set[str]:
    """The names of ``count`` provisioned workers at ``version``, none going, each one VM (polled)."""

    def probe() -> set[str] | None:
        found = machines(management, NAME)
        if len(found) != count or any(m["metadata"].get("deletionTimestamp") for m in found):
            return None
        if any(
            m.get("status", {}).get("phase") != "Provisioned" or m["spec"]["version"] != version
            for m in found
        ):
            return None
        names = {m["metadata"]["name"] for m in found}
        return names if set(worker_vms(world, NAME)) == names else None

    def state() -> str:
        found = [
            (m["metadata"]["name"], m.get("status", {}).get("phase")) for m in machines(management, NAME)
        ]
        return f"{count} workers at {version} (machines: {found}; VMs: {sorted(worker_vms(world, NAME))})"

    seen = eventually(probe, TIMEOUT, state, 0.1)
    assert seen is not None
    return seen


def nothing_left(management: Management, world: World, name: str) -> bool:
    if any(management.everything("demo", name).values()) or machines(management, name):
        return False
    selector = f"{CLUSTER_NAME_LABEL}={name}"
    core: Any = management.core
    if core.list_namespaced_secret(namespace_of("demo"), label_selector=selector).items:
        return False
    if any(n.metadata.name == f"fpcp-demo-{name}" for n in core.list_namespace().items):
        return False
    return not worker_vms(world, name)


# ------------------------------------------------------------------------------------------ create


def test_alice_makes_a_cluster_from_graphql_and_one_from_the_portals_form_and_both_become_ready(
    api: GraphQL, management: Management, network: Body, alice_portal: requests.Session, capi: World
) -> None:
    values = cluster_input(NAME, network["id"], count=3)
    made = mutate(api, CREATE_CLUSTER, "createKubernetesCluster", input=values)["kubernetesCluster"]
    assert (made["name"], made["vdc"], made["version"], made["network"]) == (
        NAME,
        "demo",
        VERSION,
        network["id"],
    )
    # The form names the network as its list does, <zone>/<name>.
    answer = create_in_portal(capi, alice_portal, FORM, f"{network['zone']}/{network['name']}")
    assert answer.status_code == 303, re.sub(r"<[^>]+>|\s+", " ", answer.text.split('id="main"')[-1])[:3000]

    for name in (NAME, FORM):
        objects = management.everything("demo", name)
        for kind, found in objects.items():
            assert found, kind
            for obj in found:  # in her VDC's namespace, labelled with her VDC
                assert (obj["metadata"]["namespace"], obj["metadata"]["labels"][VDC_LABEL]) == (
                    "vdc-demo",
                    "demo",
                )

    for name in (NAME, FORM):
        ready = in_phase(api, name, "Ready")
        assert ready["endpoint"].startswith("https://")
        assert ready["controlPlane"]["initialized"] is True
        assert [(p["name"], p["count"], p["ready"]) for p in ready["nodePools"]] == [(POOL, 3, 3)]


def test_her_three_workers_are_vms_of_her_vdc_on_the_chosen_network(
    management: Management, network: Body, capi: World
) -> None:
    names = workers(management, capi, 3, VERSION)
    vms = worker_vms(capi, NAME)
    assert set(vms) == names
    for zone, vm in vms.values():
        assert (zone, vm["pool"], vm["status"]) == (network["zone"], "fp-demo", "running")
        assert f"bridge={network['vnet']}" in vm["config"]["net0"], vm["config"]["net0"]


def test_the_portals_cluster_is_deleted_and_leaves_nothing(
    api: GraphQL, management: Management, capi: World
) -> None:
    deleted = mutate(api, DELETE, "deleteKubernetesCluster", cluster=FORM)["kubernetesCluster"]
    assert deleted["phase"] == "Deleting"
    eventually(lambda: nothing_left(management, capi, FORM), TIMEOUT, f"nothing of {FORM} left", 0.1)


# ------------------------------------------------------------------------------------------ scale


def test_scaling_to_five_then_back_to_two(api: GraphQL, management: Management, capi: World) -> None:
    three = workers(management, capi, 3, VERSION)
    scaled = mutate(api, SCALE, "scaleNodePool", cluster=NAME, pool=POOL, count=5)["kubernetesCluster"]
    assert scaled["nodePools"][0]["count"] == 5
    five = workers(management, capi, 5, VERSION)
    assert three < five
    in_phase(api, NAME, "Ready", lambda c: c["nodePools"][0]["ready"] == 5)

    mutate(api, SCALE, "scaleNodePool", cluster=NAME, pool=POOL, count=2)
    two = workers(management, capi, 2, VERSION)
    assert two < three  # the newest went first
    in_phase(api, NAME, "Ready", lambda c: c["nodePools"][0]["ready"] == 2)


# ------------------------------------------------------------------------------------------ upgrade


def test_an_upgrade_rolls_the_control_plane_first_then_the_pool(
    api: GraphQL, management: Management, capi: World
) -> None:
    before = workers(management, capi, 2, VERSION)
    upgraded = mutate(api, UPGRADE, "upgradeKubernetesCluster", cluster=NAME, version=NEXT)[
        "kubernetesCluster"
    ]
    assert (upgraded["version"], upgraded["phase"]) == (NEXT, "Upgrading")
    assert upgraded["nodePools"][0]["version"] == VERSION  # the pool waits for its control plane
    [deployment] = management.objects(MACHINE_DEPLOYMENT, "demo", NAME)
    assert PENDING_UPGRADE_ANNOTATION in deployment["metadata"]["annotations"]

    # Watched as it goes: whenever the pool (read first) asks for the new version, or a worker of it
    # exists, the control plane (read after) runs it already.
    seen: list[tuple[str | None, str, list[str]]] = []

    def rolled() -> bool:
        [md] = management.objects(MACHINE_DEPLOYMENT, "demo", NAME)
        found = machines(management, NAME)
        [fcp] = management.objects(FLEX_CONTROL_PLANE, "demo", NAME)
        running = fcp.get("status", {}).get("version")
        versions = [m["spec"]["version"] for m in found]
        seen.append((running, md["spec"]["template"]["spec"]["version"], versions))
        done = [m for m in found if not m["metadata"].get("deletionTimestamp")]
        return (
            len(done) == 2
            and all(m["spec"]["version"] == NEXT for m in done)
            and all(m.get("status", {}).get("phase") == "Provisioned" for m in done)
        )

    eventually(rolled, TIMEOUT, lambda: f"the pool rolled to {NEXT} (seen: {seen[-3:]})", 0.05)
    assert seen[0][:2] == (VERSION, VERSION)  # the first look: nothing moved yet
    for running, asked, versions in seen:
        if asked == NEXT or NEXT in versions:
            assert running == NEXT, seen
    apps: Any = client.AppsV1Api(management.core.api_client)
    pods = apps.read_namespaced_deployment("control-plane", f"fpcp-demo-{NAME}")
    images = {c.name: c.image for c in pods.spec.template.spec.containers}
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert images[component].endswith(f":{NEXT}"), images

    after = workers(management, capi, 2, NEXT)
    assert not after & before
    ready = in_phase(api, NAME, "Ready")
    assert (ready["controlPlane"]["version"], ready["nodePools"][0]["version"]) == (NEXT, NEXT)
    [deployment] = management.objects(MACHINE_DEPLOYMENT, "demo", NAME)
    assert PENDING_UPGRADE_ANNOTATION not in (deployment["metadata"].get("annotations") or {})


# ------------------------------------------------------------------------------------------ kubeconfig


def test_the_kubeconfig_alice_downloads_reaches_her_cluster_over_verified_tls(
    api: GraphQL, management: Management
) -> None:
    answer = api(KUBECONFIG, user="alice", vdc="demo", variables={"cluster": NAME})
    assert answer.errors == [], answer.body
    issued = answer.data["kubeconfig"]
    endpoint = cluster(api, NAME)["endpoint"]  # type: ignore[index]
    config = yaml.safe_load(issued["kubeconfig"])
    [named] = config["clusters"]
    assert named["cluster"]["server"] == endpoint == issued["endpoint"]
    core: Any = management.core
    secret = core.read_namespaced_secret(f"{NAME}-ca", namespace_of("demo"))
    ca = base64.b64decode(named["cluster"]["certificate-authority-data"])
    assert ca == base64.b64decode(secret.data["tls.crt"])

    tenant = new_client_from_config_dict(config)
    try:
        assert tenant.configuration.verify_ssl
        assert tenant.configuration.ssl_ca_cert
        tenant_core: Any = client.CoreV1Api(tenant)
        listed = tenant_core.list_namespace()
        assert "kube-system" in {n.metadata.name for n in listed.items}
    finally:
        tenant.close()


# ------------------------------------------------------------------------------------------ bob


def test_bob_sees_none_of_it(api: GraphQL) -> None:
    mine = api(CLUSTERS, user="bob", vdc="other").data["kubernetesClusters"]
    assert NAME not in {c["name"] for c in mine}
    assert api(CLUSTER, user="bob", vdc="other", variables={"name": NAME}).codes == ["NOT_FOUND"]
    assert api(KUBECONFIG, user="bob", vdc="other", variables={"cluster": NAME}).codes == ["NOT_FOUND"]
    assert api(CLUSTER, user="bob", vdc="demo", variables={"name": NAME}).codes == ["FORBIDDEN"]
    for query, field, variables in (
        (SCALE, "scaleNodePool", {"pool": POOL, "count": 3}),
        (UPGRADE, "upgradeKubernetesCluster", {"version": NEXT}),
        (DELETE, "deleteKubernetesCluster", {}),
    ):
        # Her cluster is to bob what a cluster that does not exist is.
        answers = [
            api(query, user="bob", vdc="other", variables={"cluster": name, **variables}).data[field]
            for name in (NAME, "e2e-none")
        ]
        assert answers[0]["kubernetesCluster"] is None
        assert (
            [(e["field"], e["code"]) for e in answers[0]["errors"]]
            == [(e["field"], e["code"]) for e in answers[1]["errors"]]
            != []
        )
    assert cluster(api, NAME) is not None  # alice's, untouched


# ------------------------------------------------------------------------------------------ delete


def test_deleting_the_cluster_leaves_nothing(api: GraphQL, management: Management, capi: World) -> None:
    deleted = mutate(api, DELETE, "deleteKubernetesCluster", cluster=NAME)["kubernetesCluster"]
    assert deleted["phase"] == "Deleting"
    eventually(lambda: nothing_left(management, capi, NAME), TIMEOUT, f"nothing of {NAME} left", 0.1)
    assert api(CLUSTER, user="alice", vdc="demo", variables={"name": NAME}).codes == ["NOT_FOUND"]
    hosted = capi.hosted_control_planes
    assert hosted is not None
    eventually(lambda: hosted.server(f"fpcp-demo-{NAME}") is None, TIMEOUT, "the tenant API server stopped")
