"""The Kubernetes pages, end to end: ``requests`` sessions signed in through the world's identity provider,
the portal under uvicorn, the management cluster (the world's Kubernetes emulator) holding the Cluster API
objects the pages write.

What a page did is checked where it lands: in the objects of the VDC's namespace. The providers' part is
played by the test (tests.portal.clusterkit): it writes the statuses they would write, so that a cluster
is seen becoming ready without waiting on VMs.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes.config import new_client_from_config

from devstack.world import World
from orchestrator.models.clusters import (
    CLUSTER,
    FLEX_CONTROL_PLANE,
    MACHINE_DEPLOYMENT,
    PENDING_UPGRADE_ANNOTATION,
    PROXMOX_CLUSTER,
    VDC_LABEL,
)
from tests.apikit import GraphQL
from tests.portal.clusterkit import (
    VERSIONS,
    Management,
    cleaned,
    control_plane_up,
    create_form,
    create_in_portal,
    nodes_up,
    prepare,
    self_signed_ca,
    vdc_network,
)
from tests.portal.pagekit import field_error, get, post

HTMX = {"HX-Request": "true"}
TOKENS = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')
ENDPOINT_HOST = "198.51.100.7"


def cluster_name() -> str:
    return f"k{uuid.uuid4().hex[:8]}"


def blanked(page: str, name: str) -> str:
    """A page with the cluster it names, and its CSRF tokens, blanked out."""
    return TOKENS.sub(r"\1<token>", page).replace(name, "<name>")


def text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>|\s+", " ", page))


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def management(world: World, api: GraphQL) -> Management:
    """The management cluster, with the Cluster API CRDs and the catalog's Kubernetes versions."""
    return prepare(world, api)


@pytest.fixture(scope="module")
def network(api: GraphQL) -> Iterator[str]:
    with vdc_network(api) as made:
        yield made


@pytest.fixture
def made(alice: requests.Session, world: World, management: Management, network: str) -> Iterator[str]:
    """A cluster alice made through the create form (one pool of 3), deleted afterwards."""
    with cleaned(management, "demo", cluster_name()) as name:
        answer = create_in_portal(world, alice, name, network)
        assert answer.status_code == 303, text(answer.text)[:2000]
        assert answer.headers["Location"] == f"/vdc/demo/kubernetes/{name}/"
        yield name


# ------------------------------------------------------------------------------------------ create


def test_alice_creates_a_cluster_with_one_pool_of_three_and_its_objects_carry_her_vdc(
    made: str, management: Management
) -> None:
    objects = management.everything("demo", made)

    for kind in (CLUSTER.kind, FLEX_CONTROL_PLANE.kind, PROXMOX_CLUSTER.kind, MACHINE_DEPLOYMENT.kind):
        assert objects[kind], kind
        for item in objects[kind]:
            assert item["metadata"]["namespace"] == "vdc-demo"
            assert item["metadata"]["labels"][VDC_LABEL] == "demo"
    [deployment] = objects[MACHINE_DEPLOYMENT.kind]
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["spec"]["version"] == VERSIONS[0]
    [plane] = objects[FLEX_CONTROL_PLANE.kind]
    assert (plane["spec"]["replicas"], plane["spec"]["version"]) == (2, VERSIONS[0])
    [infrastructure] = objects[PROXMOX_CLUSTER.kind]
    assert infrastructure["spec"]["vdc"] == "demo"


def test_the_create_form_offers_the_catalogs_versions_and_the_vdcs_profiles_and_networks(
    alice: requests.Session, world: World, management: Management, network: str
) -> None:
    page = get(alice, world, "/vdc/demo/kubernetes/new/")

    assert page.status_code == 200
    for version in VERSIONS:
        assert f'<option value="{version}"' in page.text
    assert '<option value="small"' in page.text
    assert f'<option value="{network}"' in page.text
    assert 'name="pools-0-name"' in page.text
    assert 'value="workers"' in page.text
    plugin = re.search(r'<select name="network_plugin"[^>]*>(.*?)</select>', page.text, re.S)
    assert plugin is not None
    assert re.findall(r'<option value="([^"]*)"', plugin.group(1)) == ["cilium", "calico", "none"]
    assert re.search(r'<option value="cilium"[^>]*selected', plugin.group(1))
    assert "the nodes stay Not Ready until you apply your own" in text(page.text)


@pytest.mark.parametrize("plugin", ["calico", "none"])
def test_alice_creates_a_cluster_with_calico_or_without_a_network_plugin(
    alice: requests.Session, world: World, management: Management, network: str, plugin: str
) -> None:
    with cleaned(management, "demo", cluster_name()) as name:
        get(alice, world, "/vdc/demo/kubernetes/new/")
        answer = post(
            alice, world, "/vdc/demo/kubernetes/new/", create_form(name, network, {"network_plugin": plugin})
        )
        assert answer.status_code == 303, text(answer.text)[:2000]
        [plane] = management.everything("demo", name)[FLEX_CONTROL_PLANE.kind]
        assert plane["spec"]["networkPlugin"] == plugin


def test_adding_a_node_pool_shows_the_form_again_with_two_and_creates_nothing(
    alice: requests.Session, world: World, management: Management, network: str
) -> None:
    name = cluster_name()
    get(alice, world, "/vdc/demo/kubernetes/new/")

    answer = post(alice, world, "/vdc/demo/kubernetes/new/", {**create_form(name, network), "add_pool": "1"})

    assert answer.status_code == 200
    assert 'name="pools-1-name"' in answer.text
    assert 'name="pools" value="2"' in answer.text
    assert f'value="{name}"' in answer.text  # what was typed stays
    assert "data-error-for" not in answer.text
    assert management.objects(CLUSTER, "demo", name) == []


def test_a_cluster_with_two_pools_gets_a_machine_deployment_each_and_a_pool_left_empty_is_left_out(
    alice: requests.Session, world: World, management: Management, network: str
) -> None:
    second = {"pools-1-name": "big", "pools-1-compute_profile": "medium", "pools-1-count": "1"}
    second |= {"pools-1-storage_profile": "standard", "pools-1-network": ""}
    blank = {"pools-2-name": "", "pools-2-count": "3", "pools-2-compute_profile": "small"}
    with cleaned(management, "demo", cluster_name()) as name:
        get(alice, world, "/vdc/demo/kubernetes/new/")

        answer = post(
            alice,
            world,
            "/vdc/demo/kubernetes/new/",
            create_form(name, network, {"pools": "3"} | second | blank),
        )

        assert answer.status_code == 303, text(answer.text)[:2000]
        deployments = management.objects(MACHINE_DEPLOYMENT, "demo", name)
        assert sorted((d["metadata"]["name"], d["spec"]["replicas"]) for d in deployments) == [
            (f"{name}-big", 1),
            (f"{name}-workers", 3),
        ]


def test_a_pool_left_empty_says_nothing_when_another_field_is_wrong(
    alice: requests.Session, world: World, management: Management, network: str
) -> None:
    name = cluster_name()
    get(alice, world, "/vdc/demo/kubernetes/new/")
    fields = {"pools": "2", "pools-0-count": "0", "pools-1-name": "", "pools-1-count": ""}

    answer = post(alice, world, "/vdc/demo/kubernetes/new/", create_form(name, network, fields))

    assert "1 to 100 nodes" in field_error(answer.text, "pools-0-count")
    assert 'data-error-for="' not in answer.text.split('data-pool="1"')[1]
    assert 'name="pools-1-name"' in answer.text  # still shown, to be filled in or left
    assert management.objects(CLUSTER, "demo", name) == []


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"pools-0-count": "0"}, "pools-0-count", "1 to 100 nodes"),
        ({"pools-0-count": "1000"}, "pools-0-count", "1 to 100 nodes"),
        ({"pools-0-count": "60"}, "pools-0-count", "would exceed the quota of VDC 'demo'"),
        ({"name": "Not_A_Label"}, "name", "not a DNS label"),
        ({"control_plane_replicas": "9"}, "control_plane_replicas", "1 to 5 replicas"),
        ({"version": "v1.0.0"}, "version", "v1.0.0"),
        ({"network": "zone-a/no-such-network"}, "network", "no-such-network"),
        ({"network_plugin": "flannel"}, "network_plugin", "flannel"),
        ({"pools-0-compute_profile": "no-such-profile"}, "pools-0-compute_profile", "no-such-profile"),
    ],
    ids=[
        "no nodes",
        "a thousand nodes",
        "over the quota",
        "a bad name",
        "too many replicas",
        "a version",
        "a network",
        "a network plugin not offered",
        "a profile",
    ],
)
def test_bad_input_is_said_next_to_its_field_and_nothing_is_written(
    alice: requests.Session,
    world: World,
    management: Management,
    network: str,
    fields: dict[str, str],
    field: str,
    words: str,
) -> None:
    name = fields.get("name") or cluster_name()
    get(alice, world, "/vdc/demo/kubernetes/new/")

    answer = post(alice, world, "/vdc/demo/kubernetes/new/", create_form(name, network, fields))

    assert answer.status_code == 200
    assert words in field_error(answer.text, field), text(answer.text)[:3000]
    assert management.objects(CLUSTER, "demo", name.lower()) == []


# ------------------------------------------------------------------------------------------ live progress


def test_the_cluster_page_reads_its_status_again_until_the_cluster_is_ready(
    alice: requests.Session, world: World, management: Management, network: str, made: str
) -> None:
    page = get(alice, world, f"/vdc/demo/kubernetes/{made}/")
    assert page.status_code == 200
    status = re.search(r'<div id="cluster-status"[^>]*>', page.text)
    assert status is not None
    assert "hx-trigger=" in status.group(0)
    assert 'data-cluster-phase="Provisioning"' in page.text
    assert "Available once the control plane has an endpoint" in page.text
    assert f"Its nodes join network {network.partition('/')[2]} (" in page.text

    ca, key = self_signed_ca(made)
    control_plane_up(management, "demo", made, ENDPOINT_HOST, ca, key)
    nodes_up(management, "demo", made)
    fragment = get(alice, world, f"/vdc/demo/kubernetes/{made}/", **HTMX, **{"HX-Target": "cluster-status"})

    assert fragment.status_code == 200
    assert "<html" not in fragment.text
    assert 'data-cluster-phase="Ready"' in fragment.text
    assert "hx-trigger=" not in fragment.text  # settled: it stops asking
    assert "3 of 3 ready" in text(fragment.text)
    assert f"https://{ENDPOINT_HOST}:6443" in fragment.text


def test_the_list_shows_each_clusters_version_status_nodes_and_endpoint(
    alice: requests.Session, world: World, management: Management, made: str
) -> None:
    provisioning = get(alice, world, "/vdc/demo/kubernetes/")
    row = re.search(rf'<tr[^>]*data-cluster="{made}">(.*?)</tr>', provisioning.text, re.S)
    assert row is not None
    assert "data-changing" in provisioning.text  # a cluster on its way: the table reads itself again
    assert VERSIONS[0] in row.group(1)
    assert "0 of 3 ready" in text(row.group(1))

    ca, key = self_signed_ca(made)
    control_plane_up(management, "demo", made, ENDPOINT_HOST, ca, key)
    nodes_up(management, "demo", made)
    table = get(alice, world, "/vdc/demo/kubernetes/", **HTMX, **{"HX-Target": "cluster-table"})
    row = re.search(rf'<tr[^>]*data-cluster="{made}">(.*?)</tr>', table.text, re.S)

    assert row is not None
    assert "<html" not in table.text
    assert 'data-cluster-phase="Ready"' in row.group(1)
    assert "3 of 3 ready" in text(row.group(1))
    assert f"https://{ENDPOINT_HOST}:6443" in row.group(1)


# ------------------------------------------------------------------------------------------ actions


def scale_workers(session: requests.Session, world: World, cluster: str, count: str) -> requests.Response:
    """The scale form of the cluster's page, sent for its pool ``workers``: the answer."""
    get(session, world, f"/vdc/demo/kubernetes/{cluster}/")
    return post(session, world, f"/vdc/demo/kubernetes/{cluster}/scale/", {"pool": "workers", "count": count})


def test_scaling_a_pool_writes_its_new_count_and_the_page_follows_it(
    alice: requests.Session, world: World, management: Management, made: str
) -> None:
    answer = scale_workers(alice, world, made, "5")

    assert answer.status_code == 303
    assert answer.headers["Location"] == f"/vdc/demo/kubernetes/{made}/"
    [deployment] = management.objects(MACHINE_DEPLOYMENT, "demo", made)
    assert deployment["spec"]["replicas"] == 5
    page = get(alice, world, f"/vdc/demo/kubernetes/{made}/")
    assert "0 of 5 ready" in text(page.text)
    assert "is being scaled to 5" in text(page.text)


def test_a_scale_out_of_bounds_is_said_next_to_the_count(
    alice: requests.Session, world: World, management: Management, made: str
) -> None:
    answer = scale_workers(alice, world, made, "0")

    assert answer.status_code == 200
    assert "1 to 100 nodes" in field_error(answer.text, "count")
    [deployment] = management.objects(MACHINE_DEPLOYMENT, "demo", made)
    assert deployment["spec"]["replicas"] == 3


def test_upgrading_asks_the_control_plane_and_the_pools_for_the_newer_version(
    alice: requests.Session, world: World, management: Management, made: str
) -> None:
    page = get(alice, world, f"/vdc/demo/kubernetes/{made}/")
    assert f'<option value="{VERSIONS[1]}"' in page.text

    answer = post(alice, world, f"/vdc/demo/kubernetes/{made}/upgrade/", {"version": VERSIONS[1]})

    assert answer.status_code == 303, text(answer.text)[:2000]
    [plane] = management.objects(FLEX_CONTROL_PLANE, "demo", made)
    assert plane["spec"]["version"] == VERSIONS[1]
    [deployment] = management.objects(MACHINE_DEPLOYMENT, "demo", made)
    # The pool follows once the control plane runs the version (its control-plane provider applies it).
    assert deployment["spec"]["template"]["spec"]["version"] == VERSIONS[0]
    assert VERSIONS[1] in deployment["metadata"]["annotations"][PENDING_UPGRADE_ANNOTATION]


def test_deleting_asks_first_then_deletes_the_clusters_objects(
    alice: requests.Session, world: World, management: Management, made: str
) -> None:
    confirm = get(alice, world, f"/vdc/demo/kubernetes/{made}/delete/")
    assert confirm.status_code == 200
    assert f"Delete cluster {made}?" in confirm.text
    assert management.objects(CLUSTER, "demo", made)  # asking deleted nothing

    answer = post(alice, world, f"/vdc/demo/kubernetes/{made}/delete/", {"confirm": "yes"})

    assert answer.status_code == 303
    assert answer.headers["Location"] == "/vdc/demo/kubernetes/"
    left = management.objects(CLUSTER, "demo", made)
    assert left == [] or left[0]["metadata"].get("deletionTimestamp")
    if not left:  # gone (no finalizer held it here): the page following it sends the browser to the list
        polled = get(alice, world, f"/vdc/demo/kubernetes/{made}/", **HTMX, **{"HX-Target": "cluster-status"})
        assert polled.headers["HX-Redirect"] == "/vdc/demo/kubernetes/"


def test_the_kubeconfig_downloads_as_a_file_that_loads_in_the_official_client(
    alice: requests.Session, world: World, management: Management, made: str, tmp_path: Path
) -> None:
    ca, key = self_signed_ca(made)
    control_plane_up(management, "demo", made, ENDPOINT_HOST, ca, key)

    answer = get(alice, world, f"/vdc/demo/kubernetes/{made}/kubeconfig/")

    assert answer.status_code == 200, text(answer.text)[:2000]
    assert answer.headers["Content-Disposition"] == f'attachment; filename="{made}.kubeconfig"'
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.text.startswith(f"# Kubernetes cluster {made} of VDC demo: these credentials expire at ")
    path = tmp_path / f"{made}.kubeconfig"
    path.write_text(answer.text)
    loaded = new_client_from_config(config_file=str(path))
    assert loaded.configuration.host == f"https://{ENDPOINT_HOST}:6443"
    assert loaded.configuration.ssl_ca_cert is not None
    assert Path(loaded.configuration.ssl_ca_cert).read_bytes().strip() == ca.strip()
    # Her own certificate, of the VDC's group, signed by the cluster's CA.
    certificate = x509.load_pem_x509_certificate(Path(loaded.configuration.cert_file).read_bytes())
    assert certificate.issuer == x509.load_pem_x509_certificate(ca).subject
    assert (
        certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "flexplane:vdc:demo"
    )
    assert certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice@example.com"


def test_the_kubeconfig_of_a_cluster_without_an_endpoint_is_refused_in_words(
    alice: requests.Session, world: World, made: str
) -> None:
    answer = get(alice, world, f"/vdc/demo/kubernetes/{made}/kubeconfig/")

    assert answer.status_code == 409
    assert "Content-Disposition" not in answer.headers
    assert "has no API endpoint yet" in text(answer.text)


# ------------------------------------------------------------------------------------------ isolation


def test_bob_gets_for_alices_cluster_the_same_404_as_for_one_that_does_not_exist(
    bob: requests.Session, world: World, management: Management, made: str
) -> None:
    for suffix in ("", "scale/", "upgrade/", "delete/", "kubeconfig/"):
        for vdc in ("demo", "other"):
            answers = [
                (get(bob, world, f"/vdc/{vdc}/kubernetes/{name}/{suffix}"), name)
                for name in (made, "no-such-cluster")
            ]
            for answer, _ in answers:
                assert answer.status_code == 404, (vdc, suffix)
            foreign, missing = (blanked(answer.text, name) for answer, name in answers)
            assert foreign == missing, (vdc, suffix)
    for page in ("/vdc/other/kubernetes/", "/vdc/demo/kubernetes/"):
        assert made not in get(bob, world, page).text
    answer = post(bob, world, f"/vdc/other/kubernetes/{made}/delete/", {"confirm": "yes"})
    assert answer.status_code == 404
    assert management.objects(CLUSTER, "demo", made)
