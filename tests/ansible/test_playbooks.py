"""Playbooks of flexplane.cloud against the API (tests/ansible/conftest.py): a VDC's network, VM, public IP
and port forward built, a second run changing nothing, a teardown in check mode changing nothing while
saying what it would, then the teardown leaving nothing; a security group, a VM in it and a snapshot the
same way; a cluster made, scaled and deleted; a ready cluster's kubeconfig written once (tests/cli's
cluster, as its providers leave it); and a refusal of the API failing its task with the API's code and
field."""

from __future__ import annotations

import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from apiclient import FlexPlane
from tests.ansible.conftest import Playbook
from tests.cli.test_clusters import ready_cluster
from tests.gatewaykit import NO_EXTERNAL, UPDATE_ZONE, ZONE, external_settings
from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.portal.light.conftest import RunningGateways, without_gateway
from tests.portal.light.test_cluster_pages import ENDPOINT_HOST, NEWEST, cleaned, demo_network, offered

__all__ = ["ready_cluster"]

NETWORKS = "{ networks { id name zone } }"
DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { field message code } } }"


@pytest.fixture
def uplink(api: InProcessApi, light: LightWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """zone-a with an external network whose gateways the nodes' agents apply; afterwards VDC demo's public
    IPs and gateway go and the zone has none (as the light world's admin, also when a test failed)."""
    running = RunningGateways(light)
    for name in ("apply_gateway", "gateway_state", "remove_gateway"):
        monkeypatch.setattr(light.agents, name, getattr(running, name))
    answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": external_settings("fpans")})
    assert answer.data["updateZone"]["errors"] == [], answer.body
    try:
        yield
    finally:
        without_gateway(api)
        api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": NO_EXTERNAL})


@pytest.fixture
def network_name(api: InProcessApi, vm_name: Callable[[str], str]) -> Iterator[str]:
    """A network name of the test's own; the network goes afterwards if a test left it, as the light
    world's admin: after the VMs (``vm_name``), and after ``trusting`` (requested before ``playbook``)."""
    name = f"ans-{uuid.uuid4().hex[:6]}"
    yield name
    for network in api(NETWORKS, user="admin", vdc="demo").data["networks"]:
        if network["name"] == name:
            api(DELETE_NETWORK, user="admin", vdc="demo", variables={"id": network["id"]})


def test_a_vdc_is_built_left_as_it_is_on_a_second_run_and_torn_down(
    network_name: str,
    uplink: None,
    playbook: Playbook,
    vm_name: Callable[[str], str],
    as_key: FlexPlane,
) -> None:
    front = {"vm": vm_name("ans"), "network": network_name, "cidr": "10.77.5.0/24", "zone": ZONE}

    built = playbook("build.yml", **front)
    again = playbook("build.yml", **front)
    checked = playbook("teardown.yml", check=True, **front)
    still = as_key.public_ips().public_ips
    torn = playbook("teardown.yml", **front)
    torn_again = playbook("teardown.yml", **front)

    assert built.returncode == 0, built.output
    assert built.recap["changed"] == 4, built.output  # the network, the VM, the public IP, the forward
    assert again.returncode == 0, again.output
    assert again.recap["changed"] == 0, again.output
    assert checked.returncode == 0, checked.output
    assert checked.recap["changed"] == 4, checked.output  # the forward, the IP, the VM, the network
    assert "+++ after" in checked.output  # --diff shows what would go
    assert [[forward.port for forward in ip.port_forwards] for ip in still] == [[8080]]
    assert torn.returncode == 0, torn.output
    assert torn.recap["changed"] == 4, torn.output
    assert torn_again.returncode == 0, torn_again.output
    assert torn_again.recap["changed"] == 0, torn_again.output
    assert as_key.public_ips().public_ips == []
    assert network_name not in [network.name for network in as_key.networks().networks]
    assert front["vm"] not in [vm.name for vm in as_key.all_virtual_machines()]


def test_what_the_api_refuses_fails_the_task_with_its_code_and_field(
    network_name: str, playbook: Playbook
) -> None:
    refused = playbook("refused.yml", network=network_name, zone=ZONE)

    assert refused.returncode == 0, refused.output  # the play checks the failure itself
    assert refused.recap["failed"] == 0, refused.output
    assert refused.recap["ignored"] == 1, refused.output
    assert "INVALID" in refused.output


def test_a_security_group_and_a_snapshot_are_made_changed_only_where_they_differ_and_removed(
    playbook: Playbook, vm_name: Callable[[str], str], as_key: FlexPlane
) -> None:
    group = {"group": f"ans{uuid.uuid4().hex[:6]}", "vm": vm_name("sg"), "with_vm": False}
    guarded = {**group, "ports": "80,443", "with_vm": True}

    made = playbook("guarded.yml", **{**group, "ports": "80"})
    widened = playbook("guarded.yml", check=True, **{**group, "ports": "80,443"})
    groups_then = as_key.security_groups().security_groups
    rules_then = [g.rules[0].ports for g in groups_then if g.name == group["group"]]
    changed = playbook("guarded.yml", **{**group, "ports": "80,443"})
    joined = playbook("guarded.yml", **guarded)
    again = playbook("guarded.yml", **guarded)
    removed = playbook("unguarded.yml", **guarded)
    removed_again = playbook("unguarded.yml", **guarded)

    assert made.returncode == 0, made.output
    assert made.recap["changed"] == 1, made.output  # the group
    assert widened.returncode == 0, widened.output
    assert widened.recap["changed"] == 1, widened.output
    assert "443" in widened.output  # the diff shows the new rule
    assert rules_then == ["80"]  # check mode changed nothing
    assert changed.returncode == 0, changed.output
    assert changed.recap["changed"] == 1, changed.output  # the group's rules
    assert joined.returncode == 0, joined.output
    assert joined.recap["changed"] == 2, joined.output  # the VM in the group, its snapshot
    assert again.returncode == 0, again.output
    assert again.recap["changed"] == 0, again.output
    assert removed.returncode == 0, removed.output
    assert removed.recap["changed"] == 3, removed.output  # the snapshot, the VM, the group
    assert removed_again.returncode == 0, removed_again.output
    assert removed_again.recap["changed"] == 0, removed_again.output
    assert group["group"] not in [g.name for g in as_key.security_groups().security_groups]


@pytest.fixture(scope="module")
def cluster_network(api: InProcessApi) -> Iterator[str]:
    """The catalog's Kubernetes versions, and a network of VDC demo for a cluster's nodes (as alice and the
    admin, before the service account's turn)."""
    offered(api)
    with demo_network(api) as network:
        yield network


def test_a_cluster_is_made_scaled_only_when_its_count_differs_and_deleted(
    cluster_network: str, tenant_clusters: FakeClusterApi, playbook: Playbook, as_key: FlexPlane
) -> None:
    with cleaned(tenant_clusters, f"ans{uuid.uuid4().hex[:6]}") as name:
        spec = {"cluster": name, "version": NEWEST, "network": cluster_network, "state": "present"}

        made = playbook("cluster.yml", count=1, **spec)
        again = playbook("cluster.yml", count=1, **spec)
        checked = playbook("cluster.yml", check=True, count=2, **spec)
        count_then = as_key.kubernetes_cluster(name).kubernetes_cluster
        scaled = playbook("cluster.yml", count=2, **spec)
        count_now = as_key.kubernetes_cluster(name).kubernetes_cluster
        deleted = playbook("cluster.yml", count=2, **{**spec, "state": "absent"})
        deleted_again = playbook("cluster.yml", count=2, **{**spec, "state": "absent"})

    assert made.returncode == 0, made.output
    assert made.recap["changed"] == 1, made.output
    assert again.returncode == 0, again.output
    assert again.recap["changed"] == 0, again.output
    assert checked.returncode == 0, checked.output
    assert checked.recap["changed"] == 1, checked.output
    assert count_then is not None
    assert [pool.count for pool in count_then.node_pools] == [1]
    assert scaled.returncode == 0, scaled.output
    assert scaled.recap["changed"] == 1, scaled.output
    assert count_now is not None
    assert [pool.count for pool in count_now.node_pools] == [2]
    assert deleted.returncode == 0, deleted.output
    assert deleted.recap["changed"] == 1, deleted.output
    assert deleted_again.returncode == 0, deleted_again.output
    assert deleted_again.recap["changed"] == 0, deleted_again.output


def test_a_clusters_kubeconfig_is_written_once_and_kept_while_it_is_valid(
    ready_cluster: str, playbook: Playbook, tmp_path: Path
) -> None:
    dest = tmp_path / "kube" / "config"

    checked = playbook("kubeconfig.yml", check=True, cluster=ready_cluster, dest=str(dest))
    written_in_check_mode = dest.exists()
    written = playbook("kubeconfig.yml", cluster=ready_cluster, dest=str(dest))
    kept = playbook("kubeconfig.yml", cluster=ready_cluster, dest=str(dest))

    assert checked.returncode == 0, checked.output
    assert checked.recap["changed"] == 1, checked.output
    assert not written_in_check_mode
    assert written.returncode == 0, written.output
    assert written.recap["changed"] == 1, written.output
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    config = yaml.safe_load(dest.read_text(encoding="utf-8"))
    assert config["clusters"][0]["name"] == ready_cluster
    assert config["clusters"][0]["cluster"]["server"] == f"https://{ENDPOINT_HOST}:6443"
    assert kept.returncode == 0, kept.output
    assert kept.recap["changed"] == 0, kept.output
