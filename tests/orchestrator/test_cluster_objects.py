"""A tenant cluster's objects and what is read from them, without a world (pure): the objects a plan
makes, their names, the phase the statuses say, the planned workers the quota counts, and the limits."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from orchestrator.errors import ValidationFailed
from orchestrator.models import ComputeProfile
from orchestrator.models.clusters import (
    DELETING,
    FAILED,
    NODE_POOL_LABEL,
    PENDING_UPGRADE_ANNOTATION,
    PROVISIONING,
    PROXMOX_MACHINE_TEMPLATE,
    READY,
    SCALING,
    UPGRADING,
    WORKERS_PENDING_ANNOTATION,
    KubeObject,
    KubernetesCluster,
)
from orchestrator.services.clusters import inputs, objects
from orchestrator.services.clusters.inputs import NodePoolSpec
from orchestrator.services.clusters.quota import planned
from providers.controlplane import workers

POOL = objects.PoolPlan("web", "small", "standard", 3, 20, 1, 1024)
PLAN = objects.ClusterPlan("demo", "shop", "v1.34.2", "debian-12", "zone-a/fpabc123", 2, (POOL,))
NS = "vdc-demo"


def obj(
    kind: str, name: str, spec: dict[str, Any], status: dict[str, Any] | None = None, **extra: Any
) -> KubeObject:
    labels = objects.labels("demo", "shop", **extra.pop("labels", {}))
    return KubeObject(kind, name, NS, labels, spec, status or {}, **extra)


def cluster_of(
    plane: dict[str, Any] | None = None, pool: dict[str, Any] | None = None, **cluster: Any
) -> KubernetesCluster:
    bodies = {body["kind"]: body for _, body in objects.all_objects(PLAN)}
    md = bodies["MachineDeployment"]
    template = bodies["ProxmoxMachineTemplate"]
    return KubernetesCluster.of(
        obj("Cluster", "shop", bodies["Cluster"]["spec"], cluster.pop("status", {}), **cluster),
        obj("FlexControlPlane", "shop", bodies["FlexControlPlane"]["spec"], plane),
        obj("ProxmoxCluster", "shop", {"vdc": "demo", "network": "zone-a/fpabc123"}),
        [
            obj(
                "MachineDeployment",
                md["metadata"]["name"],
                md["spec"],
                pool,
                labels={NODE_POOL_LABEL: "web"},
                generation=2,
            )
        ],
        {
            template["metadata"]["name"]: obj(
                "ProxmoxMachineTemplate", template["metadata"]["name"], template["spec"]
            )
        },
    )


UP = {"initialization": {"controlPlaneInitialized": True}, "readyReplicas": 2, "version": "v1.34.2"}
ALL_READY = {"replicas": 3, "readyReplicas": 3, "upToDateReplicas": 3}


def test_the_objects_are_written_with_the_cluster_last_and_named_after_the_cluster_and_pool() -> None:
    written = [(resource.kind, body["metadata"]["name"]) for resource, body in objects.all_objects(PLAN)]
    assert written[-1] == ("Cluster", "shop")
    assert ("MachineDeployment", "shop-web") in written
    assert ("FlexControlPlane", "shop") in written
    templates = [name for kind, name in written if kind.endswith("Template")]
    assert all(name.startswith("shop-web-") and len(name) == len("shop-web-") + 8 for name in templates)


def test_scaling_a_pool_down_removes_its_newest_workers() -> None:
    (md,) = [body for resource, body in objects.all_objects(PLAN) if resource.kind == "MachineDeployment"]
    assert md["spec"]["deletion"] == {"order": "Newest"}  # core's default is Random


def kubelet_args(plan: objects.ClusterPlan) -> list[dict[str, str]]:
    [template] = [b for r, b in objects.all_objects(plan) if r.kind == "KubeadmConfigTemplate"]
    args: list[dict[str, str]] = template["spec"]["template"]["spec"]["joinConfiguration"][
        "nodeRegistration"
    ]["kubeletExtraArgs"]
    return args


def test_kubelets_leave_their_nodes_to_the_cloud_controller_only_where_the_cluster_has_one() -> None:
    """Without a controller, a node registered with ``cloud-provider: external`` would stay tainted
    uninitialized for ever."""
    external = {"name": "cloud-provider", "value": "external"}
    assert external not in kubelet_args(PLAN)
    args = kubelet_args(dataclasses.replace(PLAN, cloud_controller=True))
    assert args == [
        {"name": "provider-id", "value": objects.PROVIDER_ID},
        external,
        {"name": "node-labels", "value": f"{NODE_POOL_LABEL}=web"},
    ]


def test_a_template_of_other_content_has_another_name_and_the_same_content_the_same() -> None:
    spec = objects.machine_spec(POOL, "debian-12")
    same = objects.machine_template("demo", "shop", "web", spec)["metadata"]["name"]
    assert objects.machine_template("demo", "shop", "web", dict(spec))["metadata"]["name"] == same
    other = objects.machine_template("demo", "shop", "web", {**spec, "image": "ubuntu-24.04"})
    assert other["metadata"]["name"] != same


def test_the_longest_names_fit_a_dns_label() -> None:
    pool = objects.PoolPlan("p" * inputs.MAX_POOL_NAME, "small", "standard", 1, 20, 1, 1024)
    plan = objects.ClusterPlan("demo", "c" * inputs.MAX_CLUSTER_NAME, "v1.34.2", "debian-12", "n", 1, (pool,))
    assert all(len(body["metadata"]["name"]) <= 63 for _, body in objects.all_objects(plan))


@pytest.mark.parametrize(
    ("plane", "pool", "cluster", "phase"),
    [
        pytest.param(None, None, {}, PROVISIONING, id="nothing reported yet"),
        pytest.param(UP, None, {}, PROVISIONING, id="a control plane and no worker yet"),
        pytest.param(UP, ALL_READY, {}, READY, id="everything as asked"),
        pytest.param(
            UP, {"replicas": 2, "readyReplicas": 2, "upToDateReplicas": 2}, {}, SCALING, id="a pool growing"
        ),
        pytest.param(
            {**UP, "version": "v1.33.4"}, ALL_READY, {}, UPGRADING, id="the control plane upgrading"
        ),
        pytest.param(
            UP, {"replicas": 4, "readyReplicas": 3, "upToDateReplicas": 1}, {}, UPGRADING, id="a pool rolling"
        ),
        pytest.param(
            UP, {**ALL_READY, "observedGeneration": 1}, {}, UPGRADING, id="a pool's new version not seen yet"
        ),
        pytest.param(UP, {**ALL_READY, "observedGeneration": 2}, {}, READY, id="a pool's spec seen"),
        pytest.param(UP, ALL_READY, {"deleting": True}, DELETING, id="deleting"),
        pytest.param(UP, ALL_READY, {"status": {"phase": "Failed"}}, FAILED, id="core says failed"),
    ],
)
def test_the_phase_follows_the_objects_statuses(
    plane: dict[str, Any] | None, pool: dict[str, Any] | None, cluster: dict[str, Any], phase: str
) -> None:
    assert cluster_of(plane, pool, **cluster).phase == phase


def test_a_cluster_shows_its_pools_sizes_network_and_endpoint() -> None:
    made = cluster_of(UP, ALL_READY)
    assert made.vdc == "demo"
    assert made.endpoint is None
    [pool] = made.node_pools
    assert (pool.name, pool.compute_profile, pool.storage_profile, pool.count, pool.ready, pool.network) == (
        "web",
        "small",
        "standard",
        3,
        3,
        "zone-a/fpabc123",
    )


def test_planned_workers_count_at_their_size_less_the_vms_made_for_them() -> None:
    bodies = {body["kind"]: body for _, body in objects.all_objects(PLAN)}
    md = obj("MachineDeployment", "shop-web", bodies["MachineDeployment"]["spec"])
    template = bodies["ProxmoxMachineTemplate"]
    templates = {template["metadata"]["name"]: obj("ProxmoxMachineTemplate", "t", template["spec"])}
    machines = [
        obj("Machine", f"shop-web-{n}", {}, labels={"cluster.x-k8s.io/deployment-name": "shop-web"})
        for n in range(2)
    ]
    profiles = {"small": ComputeProfile(name="small", vcpus=1, memory_mib=1024, cpu_type="host")}

    none_made = planned([md], templates, machines, set(), profiles)
    one_made = planned([md], templates, machines, {"shop-web-0"}, profiles)

    assert (none_made.vms, none_made.vcpus, none_made.memory_mib, none_made.disk_gb) == (3, 3, 3072, 60)
    assert (one_made.vms, one_made.disk_gb) == (2, 40)


@pytest.mark.parametrize("count", [0, 101, -1, True])
def test_a_pool_has_one_to_a_hundred_nodes(count: int) -> None:
    with pytest.raises(ValidationFailed) as refused:
        inputs.validate_pools((NodePoolSpec("web", "small", "standard", count),))
    assert refused.value.field == "node_pools[0].count"


def test_pools_are_named_once_each() -> None:
    twice = (NodePoolSpec("web", "small", "standard", 1), NodePoolSpec("web", "small", "standard", 1))
    with pytest.raises(ValidationFailed) as refused:
        inputs.validate_pools(twice)
    assert refused.value.field == "node_pools[1].name"


def test_a_cluster_whose_control_plane_runs_the_new_version_is_upgrading_until_its_pools_do() -> None:
    bodies = {body["kind"]: body for _, body in objects.all_objects(PLAN)}
    md, template = bodies["MachineDeployment"], bodies["ProxmoxMachineTemplate"]
    plane = obj("FlexControlPlane", "shop", {**bodies["FlexControlPlane"]["spec"], "version": "v1.35.0"})
    plane = dataclasses.replace(plane, status={**UP, "version": "v1.35.0"})
    pool = obj("MachineDeployment", md["metadata"]["name"], md["spec"], ALL_READY)
    templates = {template["metadata"]["name"]: obj("ProxmoxMachineTemplate", "t", template["spec"])}

    cluster = KubernetesCluster.of(obj("Cluster", "shop", {}), plane, None, [pool], templates)

    assert cluster.control_plane.version == "v1.35.0"
    assert cluster.node_pools[0].version == "v1.34.2"  # its upgrade pending on the control plane
    assert cluster.phase == UPGRADING


def test_an_upgrade_records_the_pools_new_template_and_flags_the_control_plane() -> None:
    ref = {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "shop-web-b"}
    pending = objects.pending_upgrade("v1.35.0", "shop-web-new", ref)

    recorded = objects.pending_patch(pending, apply=False)
    assert set(recorded) == {"metadata"}  # the pool's spec waits
    value = json.loads(recorded["metadata"]["annotations"][PENDING_UPGRADE_ANNOTATION])
    assert value == {
        "version": "v1.35.0",
        "infrastructureRef": objects.ref(PROXMOX_MACHINE_TEMPLATE, "shop-web-new"),
        "bootstrapConfigRef": ref,
    }
    # What the control-plane provider reads (providers/controlplane/workers.py).
    read = workers.parse(recorded["metadata"]["annotations"][PENDING_UPGRADE_ANNOTATION])
    assert read == workers.PendingUpgrade("v1.35.0", value["infrastructureRef"], ref)
    applied = objects.pending_patch(pending, apply=True)
    assert applied["metadata"]["annotations"] == {PENDING_UPGRADE_ANNOTATION: None}
    assert applied["spec"]["template"]["spec"]["version"] == "v1.35.0"
    assert objects.control_plane_upgrade("v1.35.0") == {
        "metadata": {"annotations": {WORKERS_PENDING_ANNOTATION: "v1.35.0"}},
        "spec": {"version": "v1.35.0"},
    }
    assert objects.control_plane_upgrade("v1.35.0", there=True) == {"spec": {"version": "v1.35.0"}}
