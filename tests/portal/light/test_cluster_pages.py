"""The Kubernetes pages as a browser uses them (issue 37, item 5): ``requests`` sessions signed in as the
portal's login records them, the portal served from this process (tests/portal/served.py), the tenant
clusters' objects in memory (``tests.orchestrator.fakekube.FakeClusterApi``).

VDC demo (devstack/seed.py) allows 16 vCPUs, 32 GiB, 500 GiB of disk and 10 VMs; its VMs web-1, db-1 and
web-2 (2 vCPUs, 2 GiB and 20 GiB each) leave 10 vCPUs, 26 GiB and 7 VMs. A cluster's node is a VM of its
compute profile with a 20 GiB disk (the standard storage profile's default), and each control-plane replica
counts 1 vCPU and 1 GiB.

No providers run here: a test plays them (:func:`made_ready`), writing what they write once a cluster's
control plane answers and its nodes have joined.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import pytest
import requests
import yaml
from django.test import override_settings

from orchestrator.models.clusters import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    MACHINE_DEPLOYMENT,
    PROXMOX_CLUSTER,
    namespace_of,
)
from orchestrator.sources.kube_objects import SecretEntry
from tests.apikit import Api
from tests.orchestrator.fakekube import FakeClusterApi
from tests.portal.clusterkit import create_form, self_signed_ca
from tests.portal.pagekit import HTMX, field_error, get, post
from tests.portal.served import LightPortal

NEW = "/vdc/demo/kubernetes/new/"
VERSIONS = {"v1.33.4": "debian-12", "v1.34.2": "ubuntu-24.04"}
NEWEST = "v1.34.2"
CREATE_VERSION = """mutation($input: KubernetesVersionInput!) { createKubernetesVersion(input: $input) {
  errors { code } } }"""
CREATE_NETWORK = (
    "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) { errors { message } } }"
)
DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { message } } }"
QUOTA = 'query { vdc(id: "demo") { quota { vcpus memoryMib diskGb vms } } }'
UPDATE = 'mutation($input: VdcUpdateInput!) { updateVdc(id: "demo", input: $input) { errors { message } } }'
ENDPOINT_HOST = "198.51.100.9"
ASKED = re.compile(r'data-quota="(\w+)".*?data-asked>(\d+)', re.S)


# ------------------------------------------------------------------------------------------ shared


def offered(api: Api) -> None:
    """The catalog's Kubernetes versions (as the admin adds them; one there already is fine)."""
    for version, image in VERSIONS.items():
        answer = api(CREATE_VERSION, user="admin", variables={"input": {"version": version, "image": image}})
        assert [e["code"] for e in answer.data["createKubernetesVersion"]["errors"]] in ([], ["CONFLICT"])


@contextmanager
def demo_network(api: Api) -> Iterator[str]:
    """A network of VDC demo in zone-a for the clusters' nodes, ``zone-a/<name>``, deleted afterwards."""
    octets = uuid.uuid4().bytes
    name = f"kn{octets.hex()[:8]}"
    cidr = f"10.{200 + octets[0] % 50}.{octets[1]}.0/24"
    made = api(
        CREATE_NETWORK,
        user="alice",
        vdc="demo",
        variables={"input": {"name": name, "zone": "zone-a", "cidr": cidr}},
    )
    assert made.data["createNetwork"]["errors"] == [], made.body
    try:
        yield f"zone-a/{name}"
    finally:
        api(DELETE_NETWORK, user="alice", vdc="demo", variables={"id": f"zone-a/{name}"})


@contextmanager
def demo_quota(api: Api, **quota: int) -> Iterator[None]:
    """VDC demo with these limits (``vcpus=9``), as it was afterwards."""
    before = api(QUOTA, user="admin").data["vdc"]["quota"]
    answer = api(UPDATE, user="admin", variables={"input": {"quota": quota}})
    assert answer.data["updateVdc"]["errors"] == [], answer.body
    try:
        yield
    finally:
        api(UPDATE, user="admin", variables={"input": {"quota": before}})


@contextmanager
def cleaned(clusters: FakeClusterApi, name: str, vdc: str = "demo") -> Iterator[str]:
    """A cluster's name; whatever is left of its objects and Secrets removed afterwards (they hold the VDC's
    quota: no provider makes its workers VMs here)."""
    try:
        yield name
    finally:
        namespace = namespace_of(vdc)
        for key, body in list(clusters.objects.items()):
            labels = (body.get("metadata") or {}).get("labels") or {}
            if key[1] == namespace and labels.get(CLUSTER_NAME_LABEL) == name:
                clusters.objects.pop(key, None)
        for suffix in ("ca", "kubeconfig"):
            clusters.secrets.pop((namespace, f"{name}-{suffix}"), None)


@contextmanager
def created(
    site: LightPortal, alice: requests.Session, network: str, clusters: FakeClusterApi, *, ready: bool = True
) -> Iterator[str]:
    """A cluster made through the new-cluster form (``ready``: and reported up, as :func:`made_ready`); its
    name, and its objects removed afterwards (:func:`cleaned`)."""
    with cleaned(clusters, cluster_name()) as name:
        get(alice, site, NEW)
        made = post(alice, site, NEW, form(name, network))
        assert made.status_code == 303, made.text[:2000]
        if ready:
            made_ready(clusters, name)
        yield name


def made_ready(clusters: FakeClusterApi, name: str, host: str = ENDPOINT_HOST, vdc: str = "demo") -> None:
    """What the providers and Cluster API core write once the cluster's API server answers and every worker
    has joined: its CA Secret, its endpoint, its control plane's status and each pool's replicas ready."""
    namespace = namespace_of(vdc)
    ca, key = self_signed_ca(name)
    clusters.secrets[(namespace, f"{name}-ca")] = SecretEntry(
        name=f"{name}-ca",
        type="cluster.x-k8s.io/secret",
        data={"tls.crt": ca, "tls.key": key},
        labels={CLUSTER_NAME_LABEL: name},
        resource_version="1",
        uid=str(uuid.uuid4()),
    )
    endpoint = {"controlPlaneEndpoint": {"host": host, "port": 6443}}
    for resource in (PROXMOX_CLUSTER, FLEX_CONTROL_PLANE, CLUSTER):
        clusters.patch(resource, namespace, name, {"spec": endpoint})
    [plane] = clusters.list(FLEX_CONTROL_PLANE, namespace, f"{CLUSTER_NAME_LABEL}={name}")
    replicas = plane.spec.get("replicas", 2)
    status = {"replicas": replicas, "readyReplicas": replicas, "version": plane.spec["version"]}
    status["initialization"] = {"controlPlaneInitialized": True}
    clusters.patch(FLEX_CONTROL_PLANE, namespace, name, {"status": status})
    for deployment in clusters.list(MACHINE_DEPLOYMENT, namespace, f"{CLUSTER_NAME_LABEL}={name}"):
        count = deployment.spec.get("replicas", 0)
        ready = {
            "replicas": count,
            "readyReplicas": count,
            "upToDateReplicas": count,
            "availableReplicas": count,
        }
        clusters.patch(MACHINE_DEPLOYMENT, namespace, deployment.name, {"status": ready})


def cluster_name() -> str:
    return f"k{uuid.uuid4().hex[:8]}"


def selected(page: str, field: str) -> str:
    """The value a select of the page shows chosen ('' when none is marked)."""
    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None, field
    chosen = re.search(r'<option value="([^"]*)"[^>]*selected', select.group(1))
    return chosen.group(1) if chosen else ""


def typed(page: str, field: str) -> str:
    found = re.search(rf'<input[^>]*name="{field}"[^>]*>', page)
    assert found is not None, field
    value = re.search(r'value="([^"]*)"', found.group(0))
    return value.group(1) if value else ""


def asked(part: str) -> dict[str, int]:
    """The quota figures' "This cluster" column, by resource."""
    return {resource: int(figure) for resource, figure in ASKED.findall(part)}


def figures(session: requests.Session, site: LightPortal, chosen: dict[str, str]) -> requests.Response:
    """The quota figures of these choices, as the form's htmx asks for them."""
    return get(session, site, f"{NEW}?{urlencode(chosen)}", **HTMX, **{"HX-Target": "quota"})


def form(name: str, network: str, **fields: str) -> dict[str, str]:
    """The create form as the page first shows it in demo (one pool of three small nodes), filled in."""
    return create_form(name, network, {"version": NEWEST, **fields})


@pytest.fixture(scope="module")
def network(api: Api) -> Iterator[str]:
    offered(api)
    with demo_network(api) as made:
        yield made


# ------------------------------------------------------------------------------------------ the form


def test_the_form_starts_with_three_of_the_smallest_nodes_which_fit_demo(
    site: LightPortal, alice: requests.Session, network: str
) -> None:
    page = get(alice, site, NEW)

    assert page.status_code == 200
    assert selected(page.text, "pools-0-compute_profile") == "small"
    assert typed(page.text, "pools-0-count") == "3"
    assert selected(page.text, "version") == NEWEST
    assert '<option value="small" selected>small: 1 vCPU, 1 GiB</option>' in page.text
    assert '<option value="large">large: 4 vCPU, 8 GiB</option>' in page.text
    assert "standard: 20 GiB disk per node</option>" in page.text
    # Three small nodes of 20 GiB and a control plane of two replicas.
    assert asked(page.text) == {"vcpus": 5, "memory_mib": 5120, "disk_gb": 60, "vms": 3}
    assert "data-over=" not in page.text
    assert "This cluster</th>" in page.text


def test_in_a_tight_vdc_the_first_pool_starts_with_the_nodes_that_fit(
    site: LightPortal, alice: requests.Session, api: Api, network: str
) -> None:
    with demo_quota(api, vcpus=9):  # 3 vCPUs left: two replicas and one small node
        tight = get(alice, site, NEW).text
    with demo_quota(api, vcpus=7):  # 1 left: not even one node beside the control plane
        full = get(alice, site, NEW).text

    assert (selected(tight, "pools-0-compute_profile"), typed(tight, "pools-0-count")) == ("small", "1")
    assert "data-over=" not in tight
    assert (selected(full, "pools-0-compute_profile"), typed(full, "pools-0-count")) == ("small", "1")
    assert 'data-over="vcpus"' in full
    assert "This cluster needs more vCPUs than the quota has left." in full


def test_the_quota_figures_follow_the_pools_as_typed(
    site: LightPortal, alice: requests.Session, network: str
) -> None:
    chosen: dict[str, str] = {
        "version": NEWEST,
        "control_plane_replicas": "3",
        "pools": "3",
        "pools-0-name": "workers",
        "pools-0-compute_profile": "large",
        "pools-0-storage_profile": "standard",
        "pools-0-count": "2",
        "pools-1-name": "big",
        "pools-1-compute_profile": "medium",
        "pools-1-storage_profile": "standard",
        "pools-1-count": "1",
        "pools-2-name": "",  # left out: it counts for nothing
        "pools-2-compute_profile": "large",
        "pools-2-storage_profile": "standard",
        "pools-2-count": "9",
    }

    part = figures(alice, site, chosen)
    less = figures(alice, site, {**chosen, "pools-0-count": "1"})

    assert part.status_code == 200
    assert part.text.lstrip().startswith('<section id="quota"')
    assert asked(part.text) == {
        "vcpus": 3 + 8 + 2,
        "memory_mib": 3072 + 16384 + 4096,
        "disk_gb": 60,
        "vms": 3,
    }
    assert 'data-over="vcpus"' in part.text  # 13 of the 10 left
    assert "This cluster needs more vCPUs than the quota has left." in part.text
    assert asked(less.text)["vcpus"] == 3 + 4 + 2
    assert "data-over=" not in less.text


def test_a_count_that_is_not_a_number_counts_for_nothing_in_the_figures(
    site: LightPortal, alice: requests.Session, network: str
) -> None:
    chosen = {"version": NEWEST, "control_plane_replicas": "", "pools": "1", "pools-0-count": "many"}
    chosen |= {"pools-0-compute_profile": "small", "pools-0-storage_profile": "standard"}

    part = figures(alice, site, chosen)

    assert part.status_code == 200
    assert asked(part.text) == {"vcpus": 0, "memory_mib": 0, "disk_gb": 0, "vms": 0}


def test_a_pool_added_starts_inside_what_the_pools_before_it_leave(
    site: LightPortal, alice: requests.Session, network: str
) -> None:
    get(alice, site, NEW)
    # Three medium nodes and two replicas: 8 of the 10 vCPUs left, so two small nodes fit beside.
    fields = {"pools-0-compute_profile": "medium", "add_pool": "1"}

    answer = post(alice, site, NEW, form(cluster_name(), network, **fields))

    assert answer.status_code == 200
    assert (selected(answer.text, "pools-1-compute_profile"), typed(answer.text, "pools-1-count")) == (
        "small",
        "2",
    )
    assert typed(answer.text, "pools-1-name") == ""
    assert asked(answer.text)["vcpus"] == 8  # the new pool, unnamed, counts for nothing yet


def test_over_the_quota_the_create_is_refused_next_to_the_count_and_the_figures_say_why(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    name = cluster_name()
    get(alice, site, NEW)

    answer = post(alice, site, NEW, form(name, network, **{"pools-0-compute_profile": "large"}))

    assert answer.status_code == 200
    assert "would exceed the quota of VDC 'demo'" in field_error(answer.text, "pools-0-count")
    assert 'data-over="vcpus"' in answer.text
    assert tenant_clusters.list(CLUSTER, namespace_of("demo"), f"{CLUSTER_NAME_LABEL}={name}") == []


# ------------------------------------------------------------------------------------------ live progress


def test_the_cluster_page_follows_a_new_cluster_until_ready_and_then_offers_its_kubeconfig(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    with cleaned(tenant_clusters, cluster_name()) as name:
        get(alice, site, NEW)
        made = post(alice, site, NEW, form(name, network))
        assert made.status_code == 303, made.text[:2000]
        path = f"/vdc/demo/kubernetes/{name}/"
        assert made.headers["Location"] == path

        page = get(alice, site, path).text
        status = re.search(r'<div id="cluster-status"[^>]*>', page)
        assert status is not None
        assert "hx-trigger=" in status.group(0)
        assert f"Cluster {name} is created." in page
        assert "being made" not in page
        assert "data-kubeconfig-pending" in page
        assert "hx-swap-oob" not in page  # the page itself holds both parts
        assert "<dd data-cluster-network-plugin>Cilium</dd>" in page  # the form's default

        made_ready(tenant_clusters, name)
        polled = get(alice, site, path, **HTMX, **{"HX-Target": "cluster-status"})

        assert polled.status_code == 200
        assert "<html" not in polled.text
        assert 'data-cluster-phase="Ready"' in polled.text
        assert "hx-trigger=" not in polled.text  # settled: it stops asking
        assert "data-following" not in polled.text
        assert f"https://{ENDPOINT_HOST}:6443" in polled.text
        kubeconfig = re.search(r'<section id="cluster-kubeconfig"[^>]*>(.*?)</section>', polled.text, re.S)
        assert kubeconfig is not None
        assert 'hx-swap-oob="true"' in kubeconfig.group(0)
        assert f'href="{path}kubeconfig/"' in kubeconfig.group(1)
        assert "data-kubeconfig-pending" not in polled.text

        downloaded = get(alice, site, f"{path}kubeconfig/")
        assert downloaded.status_code == 200
        loaded: dict[str, Any] = yaml.safe_load(downloaded.text)
        assert loaded["clusters"][0]["cluster"]["server"] == f"https://{ENDPOINT_HOST}:6443"


def test_while_it_is_being_made_the_polled_part_says_the_kubeconfig_is_not_there_yet(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    with created(site, alice, network, tenant_clusters, ready=False) as name:
        polled = get(alice, site, f"/vdc/demo/kubernetes/{name}/", **HTMX, **{"HX-Target": "cluster-status"})

        assert 'data-cluster-phase="Provisioning"' in polled.text
        assert "hx-trigger=" in polled.text
        assert "data-following" in polled.text
        assert re.search(r'<section id="cluster-kubeconfig"[^>]*hx-swap-oob="true"', polled.text)
        assert "data-kubeconfig-pending" in polled.text
        assert "data-kubeconfig>" not in polled.text


def test_scaling_a_pool_down_asks_first_naming_how_many_nodes_go_and_cancel_keeps_them(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    with created(site, alice, network, tenant_clusters) as name:
        path = f"/vdc/demo/kubernetes/{name}/"
        namespace = namespace_of("demo")

        def replicas() -> int:
            [pool] = tenant_clusters.list(MACHINE_DEPLOYMENT, namespace, f"{CLUSTER_NAME_LABEL}={name}")
            return int(pool.spec["replicas"])

        before = replicas()
        assert before >= 2
        asked = post(alice, site, f"{path}scale/", {"pool": "workers", "count": "1"})
        assert asked.status_code == 200
        going = before - 1
        said = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", asked.text)))
        assert f"Remove {going} node{'s' if going > 1 else ''} of pool workers of cluster {name}?" in said
        assert f"Node pool workers has {before} nodes; 1 stays, the {going} newest go." in said
        assert "This cannot be undone." in said
        assert 'name="count" value="1"' in asked.text
        assert f'href="{path}"' in asked.text  # Cancel: back to the cluster, nothing sent
        assert replicas() == before

        done = post(alice, site, f"{path}scale/", {"pool": "workers", "count": "1", "confirm": "yes"})
        assert done.status_code == 303
        assert replicas() == 1

        grown = post(alice, site, f"{path}scale/", {"pool": "workers", "count": "2"})
        assert grown.status_code == 303  # more nodes take nothing away: no question
        assert replicas() == 2


# ------------------------------------------------------------------------------------------ exposure


def test_the_form_offers_the_shared_address_first_only_where_the_installation_has_one(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    assert 'name="control_plane_exposure"' not in get(alice, site, NEW).text  # nothing to choose
    with override_settings(FLEXPLANE_CONTROL_PLANE_SHARED_PORT="7443"):
        page = get(alice, site, NEW).text
        assert selected(page, "control_plane_exposure") == "shared"
        assert '<option value="loadBalancer">A load balancer of its own</option>' in page
        for exposure, service_type, shown in (
            ("shared", "SNI", "The shared address, by the cluster's host name"),
            ("loadBalancer", "LoadBalancer", "A load balancer of its own"),
        ):
            with cleaned(tenant_clusters, cluster_name()) as name:
                made = post(alice, site, NEW, form(name, network, control_plane_exposure=exposure))
                assert made.status_code == 303, made.text[:2000]
                [plane] = tenant_clusters.list(
                    FLEX_CONTROL_PLANE, namespace_of("demo"), f"{CLUSTER_NAME_LABEL}={name}"
                )
                assert plane.spec["serviceType"] == service_type
                made_ready(tenant_clusters, name)
                page = get(alice, site, f"/vdc/demo/kubernetes/{name}/").text
                assert f"<dd data-cluster-exposure>{shown}</dd>" in page


def test_a_form_asking_for_the_shared_address_where_there_is_none_gets_a_load_balancer(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    """A form sent with a field this installation does not offer (an old page, a script): the field is
    not the form's, so it is ignored and the cluster gets a load balancer of its own."""
    with cleaned(tenant_clusters, cluster_name()) as name:
        made = post(alice, site, NEW, form(name, network, control_plane_exposure="shared"))
        assert made.status_code == 303, made.text[:2000]
        [plane] = tenant_clusters.list(
            FLEX_CONTROL_PLANE, namespace_of("demo"), f"{CLUSTER_NAME_LABEL}={name}"
        )
        assert plane.spec["serviceType"] == "LoadBalancer"
