"""Tenant clusters through the services, against the world's management cluster (the Kubernetes
emulator) and fake zones: the objects a create writes, what bad input and a full quota leave (nothing),
isolation and the bounded reads of a listing (scale, upgrade, delete and the kubeconfig:
``test_clusters_lifecycle``; what both share: ``services.clusterkit``).

No provider runs here (``services.clusterkit`` says how a test stands in for them).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kmock
import pytest
from kubernetes import client

from devstack.world import World
from orchestrator.errors import Conflict, NotFound, PermissionDenied, QuotaExceeded, ValidationFailed
from orchestrator.models.clusters import CLUSTER, MACHINE, VDC_LABEL, namespace_of
from orchestrator.services import catalog, clusters, vdcs, vms
from orchestrator.services.clusters import CreateCluster, NodePoolSpec
from orchestrator.services.clusters.create import vdc_usage_now
from orchestrator.services.clusters.inputs import DEFAULT_CONTROL_PLANE
from orchestrator.services.clusters.quota import CONTROL_PLANE_REPLICA, control_plane, worker
from orchestrator.services.vms import CreateVm
from orchestrator.sources.kube import KubeSource
from tests.orchestrator.services.clusterkit import (
    NEXT,
    VERSION,
    alice,
    demo_network,
    objects_in,
    spec,
    written,
)
from tests.orchestrator.services.conftest import MakeContext

# --------------------------------------------------------------------------------------- create


def test_a_create_writes_the_contracts_objects_labelled_with_the_vdc(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    made = clusters.create_cluster(ctx, spec(ctx, "alpha", control_plane_replicas=3))

    assert (made.name, made.vdc, made.version, made.phase) == ("alpha", "demo", VERSION, "Provisioning")
    assert [(p.name, p.count, p.compute_profile) for p in made.node_pools] == [("workers", 2, "small")]
    found = objects_in(custom, "demo", "alpha")
    assert {k: len(v) for k, v in found.items()} == {
        "Cluster": 1,
        "FlexControlPlane": 1,
        "ProxmoxCluster": 1,
        "MachineDeployment": 1,
        "ProxmoxMachineTemplate": 1,
        "KubeadmConfigTemplate": 1,
    }
    for items in found.values():
        for item in items:
            assert item["metadata"]["labels"][VDC_LABEL] == "demo"
            assert item["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "alpha"
    [cluster] = found["Cluster"]
    assert cluster["spec"]["infrastructureRef"] == {
        "apiGroup": "infrastructure.flexplane.io",
        "kind": "ProxmoxCluster",
        "name": "alpha",
    }
    assert cluster["spec"]["controlPlaneRef"]["kind"] == "FlexControlPlane"
    assert cluster["spec"]["clusterNetwork"]["pods"]["cidrBlocks"] == ["10.244.0.0/16"]
    assert "topology" not in cluster["spec"]
    assert found["FlexControlPlane"][0]["spec"] == {
        "replicas": 3,
        "version": VERSION,
        "serviceType": "LoadBalancer",
        "networkPlugin": "cilium",  # the default
        "storage": {"zone": "zone-a", "storageProfiles": ["standard"]},
    }
    assert made.network_plugin == "cilium"
    assert found["ProxmoxCluster"][0]["spec"] == {"vdc": "demo", "network": demo_network(ctx)}
    [md] = found["MachineDeployment"]
    assert md["metadata"]["name"] == "alpha-workers"
    assert md["metadata"]["labels"]["flexplane.io/node-pool"] == "workers"
    assert md["spec"]["replicas"] == 2
    template = md["spec"]["template"]["spec"]
    assert template["version"] == VERSION
    assert template["failureDomain"] == "zone-a"  # its network's zone
    assert template["infrastructureRef"]["name"] == found["ProxmoxMachineTemplate"][0]["metadata"]["name"]
    assert template["bootstrap"]["configRef"]["name"] == found["KubeadmConfigTemplate"][0]["metadata"]["name"]
    assert found["ProxmoxMachineTemplate"][0]["spec"]["template"]["spec"] == {
        "computeProfile": "small",
        "storageProfile": "standard",
        "image": "debian-12",
        "diskGb": 20,
    }
    args = found["KubeadmConfigTemplate"][0]["spec"]["template"]["spec"]["joinConfiguration"][
        "nodeRegistration"
    ]
    assert {"name": "provider-id", "value": "proxmox://{{ ds.meta_data.instance_id }}"} in args[
        "kubeletExtraArgs"
    ]


BAD_INPUT = [
    pytest.param({"version": "v1.20.0"}, "version", id="a version not in the catalog"),
    pytest.param(
        {"node_pools": (NodePoolSpec("w", "small", "standard", 0),)}, "node_pools[0].count", id="0 nodes"
    ),
    pytest.param(
        {"node_pools": (NodePoolSpec("w", "small", "standard", 1000),)},
        "node_pools[0].count",
        id="1000 nodes",
    ),
    pytest.param(
        {"node_pools": (NodePoolSpec("w", "no-such-profile", "standard", 1),)},
        "node_pools[0].compute_profile",
        id="a profile the VDC does not allow",
    ),
    pytest.param({"name": "Not_A_Label"}, "name", id="a name that is no DNS label"),
    pytest.param({"control_plane_replicas": 9}, "control_plane.replicas", id="nine control-plane replicas"),
    pytest.param({"network_plugin": "flannel"}, "network_plugin", id="a network plugin not offered"),
]


@pytest.mark.parametrize(("changes", "field"), BAD_INPUT)
def test_bad_input_is_invalid_naming_the_field_and_writes_nothing(
    make_context: MakeContext,
    custom: client.CustomObjectsApi,
    clean: None,
    changes: dict[str, Any],
    field: str,
) -> None:
    ctx = alice(make_context)
    before = written(custom, "demo")  # what other tests of this world left
    with pytest.raises(ValidationFailed) as refused:
        clusters.create_cluster(ctx, spec(ctx, **{"name": "bad", **changes}))
    assert refused.value.field == field
    assert written(custom, "demo") == before  # nothing of this create


@pytest.mark.parametrize("plugin", ["calico", "none"])
def test_a_cluster_with_another_network_plugin_or_none_says_so_to_its_control_plane(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None, plugin: str
) -> None:
    ctx = alice(make_context)
    made = clusters.create_cluster(ctx, spec(ctx, "bare", network_plugin=plugin))
    assert made.network_plugin == plugin
    [control_plane] = objects_in(custom, "demo", "bare")["FlexControlPlane"]
    assert control_plane["spec"]["networkPlugin"] == plugin
    assert clusters.get_cluster(ctx, "bare").network_plugin == plugin


def test_the_control_plane_is_told_the_clusters_zone_and_the_vdcs_storage_profiles_there(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    """Its CSI driver's StorageClasses (providers/controlplane/storage.py): the VDC's profiles with storage
    in the network's zone, in the VDC's order."""
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "stored"))
    [control_plane] = objects_in(custom, "demo", "stored")["FlexControlPlane"]
    assert control_plane["spec"]["storage"] == {"zone": "zone-a", "storageProfiles": ["standard"]}


def test_a_plugin_not_offered_is_refused_saying_which_are(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    with pytest.raises(ValidationFailed, match=r"'flannel' is not offered \(offered: cilium, calico, none\)"):
        clusters.create_cluster(ctx, spec(ctx, "flannel", network_plugin="flannel"))


def test_a_profile_or_a_node_image_the_vdc_does_not_allow_is_invalid(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    """VDC other allows compute profiles small and medium, and the image debian-12 only."""
    bob = make_context("USER", "vdc:other")
    bob.vdc = "other"
    large = (NodePoolSpec("w", "large", "standard", 1),)
    with pytest.raises(ValidationFailed) as profile:
        clusters.create_cluster(bob, spec(bob, "bobs", node_pools=large))
    with pytest.raises(ValidationFailed) as image:
        clusters.create_cluster(bob, spec(bob, "bobs", version=NEXT))  # its node image is ubuntu-24.04

    assert (profile.value.field, image.value.field) == ("node_pools[0].compute_profile", "version")
    assert "does not allow" in profile.value.message
    assert "ubuntu-24.04" in image.value.message
    assert all(not items for items in objects_in(custom, "other").values())


def test_a_network_of_another_vdc_is_invalid_as_one_that_does_not_exist(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    bob = make_context("USER", "vdc:other")
    bob.vdc = "other"
    theirs = demo_network(bob)
    before = written(custom, "demo")  # what other tests of this world left
    with pytest.raises(ValidationFailed) as refused:
        clusters.create_cluster(ctx, spec(ctx, "net", network=theirs))
    assert refused.value.field == "network"
    assert written(custom, "demo") == before  # nothing of this create


def test_a_quota_too_small_for_the_pool_is_refused_before_anything_is_written(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    demo = vdcs.get_vdc(ctx, "demo")
    room = demo.quota.vms - vdcs.fresh_usage(ctx, "demo").vms
    before = written(custom, "demo")  # what other tests of this world left
    with pytest.raises(QuotaExceeded):
        clusters.create_cluster(
            ctx, spec(ctx, "big", node_pools=(NodePoolSpec("w", "small", "standard", room + 1),))
        )
    assert written(custom, "demo") == before  # nothing of this create


def test_a_clusters_control_plane_counts_against_the_vdcs_quota_for_as_long_as_it_runs(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    """Its pods run on the management cluster, which every tenant shares: each replica takes
    CONTROL_PLANE_REPLICA of the VDC's vCPUs and memory, beside the workers."""
    ctx = alice(make_context)
    demo = vdcs.get_vdc(ctx, "demo")
    before = vdc_usage_now(ctx, demo)
    pool = NodePoolSpec("w", "small", "standard", 1)
    clusters.create_cluster(ctx, spec(ctx, "metered", node_pools=(pool,), control_plane_replicas=3))
    small = catalog.compute_profile(ctx, "small")
    grown = vdc_usage_now(ctx, demo) - before
    assert (grown.vcpus, grown.memory_mib, grown.vms) == (
        small.vcpus + 3 * CONTROL_PLANE_REPLICA.vcpus,
        small.memory_mib + 3 * CONTROL_PLANE_REPLICA.memory_mib,
        1,
    )


def test_a_control_plane_that_does_not_fit_the_vdcs_vcpus_is_refused_before_anything_is_written(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    demo = vdcs.get_vdc(ctx, "demo")
    used = vdc_usage_now(ctx, demo)
    vcpus, vms = demo.quota.vcpus - used.vcpus, demo.quota.vms - used.vms
    # Workers (medium: 2 vCPUs, small: 1) that leave the room of exactly two replicas, within the VMs quota.
    target = vcpus - 2 * CONTROL_PLANE_REPLICA.vcpus
    medium = max(0, target - vms)
    small = target - 2 * medium
    assert small >= 1, f"VDC demo's room ({vcpus} vCPUs, {vms} VMs) is too small for the test"
    pools: tuple[NodePoolSpec, ...] = (NodePoolSpec("s", "small", "standard", small),)
    pools += (NodePoolSpec("m", "medium", "standard", medium),) if medium else ()
    before = written(custom, "demo")  # what other tests of this world left
    with pytest.raises(QuotaExceeded, match="vCPUs by 1"):
        clusters.create_cluster(ctx, spec(ctx, "toobig", node_pools=pools, control_plane_replicas=3))
    assert written(custom, "demo") == before  # nothing of this create
    assert clusters.create_cluster(ctx, spec(ctx, "fits", node_pools=pools, control_plane_replicas=2))


def test_a_vm_made_after_a_cluster_cannot_take_the_room_of_its_workers_but_its_own_workers_fit(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    """The quota's room a cluster was given stays its own until its workers are VMs: a tenant's VM made
    meanwhile is refused, and the provider's create of a worker (named as its Machine) counts it once."""
    ctx = alice(make_context)
    demo = vdcs.get_vdc(ctx, "demo")
    room = demo.quota.vms - vdcs.fresh_usage(ctx, "demo").vms
    made = clusters.create_cluster(
        ctx, spec(ctx, "holds", node_pools=(NodePoolSpec("w", "small", "standard", room),))
    )
    vm = CreateVm(name="squatter", compute_profile="small", storage_profile="standard", image="debian-12")
    with pytest.raises(QuotaExceeded, match="VMs by 1"):
        vms.create_vm(ctx, dataclasses.replace(vm, zone="zone-a"))

    # Cluster API core's Machine of the pool, then its VM, made as the infrastructure provider makes it.
    [md] = objects_in(custom, "demo", made.name)["MachineDeployment"]
    worker = f"{md['metadata']['name']}-w1"
    custom.create_namespaced_custom_object(
        MACHINE.group,
        MACHINE.version,
        namespace_of("demo"),
        MACHINE.plural,
        {
            "apiVersion": f"{MACHINE.group}/{MACHINE.version}",
            "kind": MACHINE.kind,
            "metadata": {"name": worker, "labels": md["spec"]["selector"]["matchLabels"]},
            "spec": {"clusterName": made.name, "bootstrap": {}, "infrastructureRef": {}},
        },
    )
    created = vms.create_vm(ctx, dataclasses.replace(vm, name=worker, zone="zone-a"))
    try:
        assert created.created
        assert vdc_usage_now(ctx, demo).vms == demo.quota.vms  # the pool's other workers, still planned
    finally:
        vms.delete_vm(ctx, created.vm.id)
        custom.delete_namespaced_custom_object(
            MACHINE.group, MACHINE.version, namespace_of("demo"), MACHINE.plural, worker
        )


def test_a_vdcs_first_cluster_makes_its_namespace_and_binds_the_orchestrator_to_read_secrets_there(
    make_context: MakeContext,
    custom: client.CustomObjectsApi,
    wired: KubeSource,
    clean: None,
    settings: Any,
) -> None:
    settings.FLEXPLANE_VDC_ROLE = "flexplane-vdc"
    settings.FLEXPLANE_SERVICE_ACCOUNT = "flexplane-system/flexplane"
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx))
    clusters.create_cluster(ctx, spec(ctx))  # the second finds both there

    namespace = client.CoreV1Api(wired.core.api_client).read_namespace(namespace_of("demo"))
    assert namespace.metadata is not None
    assert (namespace.metadata.labels or {}).get(VDC_LABEL) == "demo"
    binding = client.RbacAuthorizationV1Api(wired.core.api_client).read_namespaced_role_binding(
        "flexplane-vdc", namespace_of("demo")
    )
    assert (binding.role_ref.kind, binding.role_ref.name) == ("ClusterRole", "flexplane-vdc")
    assert [(s.kind, s.namespace, s.name) for s in binding.subjects or []] == [
        ("ServiceAccount", "flexplane-system", "flexplane")
    ]


def test_concurrent_creates_never_exceed_the_quota(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    """Each create fits alone; together only as many as the VDC's VMs quota has room for are made, the
    planned workers of the others counted before any VM exists."""
    ctx = alice(make_context)
    demo = vdcs.get_vdc(ctx, "demo")
    used = vdcs.fresh_usage(ctx, "demo")
    per_create = 2
    # Each create asks for its workers and its control plane: the quota that runs out first decides.
    small = catalog.compute_profile(ctx, "small")
    asks = worker(small.vcpus, small.memory_mib, 0, per_create) + control_plane(DEFAULT_CONTROL_PLANE)
    fitting = min(
        (getattr(demo.quota, attr) - getattr(used, attr)) // getattr(asks, attr)
        for attr in ("vcpus", "memory_mib", "vms")
    )
    room = demo.quota.vms - used.vms
    network = demo_network(ctx)

    def attempt(n: int) -> str:
        mine = alice(make_context)
        pools = (NodePoolSpec("w", "small", "standard", per_create),)
        try:
            clusters.create_cluster(mine, CreateCluster(f"race{n}", VERSION, network, pools))
        except QuotaExceeded:
            return "refused"
        return "made"

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(attempt, range(6)))

    assert outcomes.count("made") == fitting
    planned = sum(md["spec"]["replicas"] for md in objects_in(custom, "demo")["MachineDeployment"])
    assert planned <= room
    assert vdc_usage_now(ctx, demo).vms <= demo.quota.vms


def test_a_write_that_fails_half_way_takes_back_what_was_written(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    """The Cluster, written last, is refused (an object of that name, not flex.plane's, is in the way):
    the templates, MachineDeployment, ProxmoxCluster and FlexControlPlane written before it go again."""
    ctx = alice(make_context)
    foreign = {
        "apiVersion": CLUSTER.api_version,
        "kind": "Cluster",
        "metadata": {"name": "blocked"},
        "spec": {},
    }
    custom.create_namespaced_custom_object(
        CLUSTER.group, CLUSTER.version, namespace_of("demo"), CLUSTER.plural, foreign
    )

    with pytest.raises(Conflict) as refused:
        clusters.create_cluster(ctx, spec(ctx, "blocked"))

    assert "nothing was left behind" in refused.value.message
    assert all(not items for items in objects_in(custom, "demo", "blocked").values())
    assert clusters.list_clusters(alice(make_context)) == []


def test_a_second_cluster_of_the_same_name_is_invalid(make_context: MakeContext, clean: None) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "twice"))
    with pytest.raises(ValidationFailed) as refused:
        clusters.create_cluster(ctx, spec(ctx, "twice"))
    assert refused.value.field == "name"


# ------------------------------------------------------------------------------------- isolation


def test_another_vdcs_cluster_is_indistinguishable_from_a_missing_one(
    make_context: MakeContext, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "secret"))
    bob = make_context("USER", "vdc:other")
    bob.vdc = "other"
    with pytest.raises(NotFound) as theirs:
        clusters.get_cluster(bob, "secret")
    with pytest.raises(NotFound) as missing:
        clusters.get_cluster(bob, "no-such-cluster")
    assert str(theirs.value).replace("secret", "X") == str(missing.value).replace("no-such-cluster", "X")
    assert clusters.list_clusters(bob) == []
    for change in (
        lambda: clusters.scale_node_pool(bob, "secret", "workers", 3),
        lambda: clusters.delete_cluster(bob, "secret"),
        lambda: clusters.kubeconfig(bob, "secret"),
    ):
        with pytest.raises(NotFound):
            change()
    bob.vdc = "demo"
    with pytest.raises(PermissionDenied):
        clusters.list_clusters(bob)
    assert "secret" in {c.name for c in clusters.list_clusters(ctx)}  # VDC demo may hold others' too


# --------------------------------------------------------------------------------------- reads


def kube_reads(world: World, after: int) -> list[str]:
    return [
        str(r.url.path)
        for r in list(world.kube.emulator)
        if r.id > after and r.method == kmock.method.GET and "/apis/" in str(r.url.path)
    ]


def test_listing_twenty_clusters_costs_one_list_per_kind(
    world: World, make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    from orchestrator.services.clusters import objects
    from orchestrator.services.clusters.objects import ClusterPlan, PoolPlan

    ctx = alice(make_context)
    for n in range(20):
        plan = ClusterPlan(
            "demo",
            f"many{n}",
            VERSION,
            "debian-12",
            "zone-a/x",
            2,
            (PoolPlan("w", "small", "standard", 1, 20, 1, 1024),),
        )
        for resource, body in objects.all_objects(plan):
            custom.create_namespaced_custom_object(
                resource.group, resource.version, namespace_of("demo"), resource.plural, body
            )
    catalog.list_kubernetes_versions(ctx)  # the catalog's own read, before the mark
    after = max(r.id for r in list(world.kube.emulator))
    listed = clusters.list_clusters(ctx)
    reads = kube_reads(world, after)

    assert len(listed) == 20
    assert all(len(c.node_pools) == 1 for c in listed)
    assert len(reads) == 5, reads  # Cluster, FlexControlPlane, ProxmoxCluster, MachineDeployment, template
