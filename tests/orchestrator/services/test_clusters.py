"""Tenant clusters through the services, against the world's management cluster (the Kubernetes
emulator) and fake zones: the objects a create writes, what bad input and a full quota leave (nothing),
isolation, the bounded reads of a listing, scale, upgrade, delete, and the kubeconfig.

No provider runs here: where a test needs a cluster the providers would have made ready, it writes the
status and Secrets on the objects itself, as the providers would.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import itertools
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client, config

from devstack.world import World
from orchestrator.errors import Conflict, NotFound, PermissionDenied, QuotaExceeded, ValidationFailed
from orchestrator.models.clusters import (
    CLUSTER,
    FLEX_CONTROL_PLANE,
    KUBEADM_CONFIG_TEMPLATE,
    MACHINE,
    MACHINE_DEPLOYMENT,
    PENDING_UPGRADE_ANNOTATION,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE_TEMPLATE,
    VDC_LABEL,
    WORKERS_PENDING_ANNOTATION,
    Resource,
    namespace_of,
)
from orchestrator.services import catalog, clusters, vdcs, vms
from orchestrator.services.clusters import CreateCluster, NodePoolSpec
from orchestrator.services.clusters.create import vdc_usage_now
from orchestrator.services.context import Context
from orchestrator.services.vms import CreateVm
from orchestrator.sources.kube import KubeSource
from tests.orchestrator.clusterkit import install_crds
from tests.orchestrator.services.conftest import MakeContext

VERSION, NEXT, FAR = "v1.33.4", "v1.34.2", "v1.36.0"
ALL_KINDS = (
    CLUSTER,
    FLEX_CONTROL_PLANE,
    PROXMOX_CLUSTER,
    MACHINE_DEPLOYMENT,
    PROXMOX_MACHINE_TEMPLATE,
    KUBEADM_CONFIG_TEMPLATE,
)
_names = itertools.count()


@pytest.fixture(scope="module")
def custom(wired: KubeSource, world: World) -> client.CustomObjectsApi:
    install_crds(world)
    return client.CustomObjectsApi(wired.core.api_client)


@pytest.fixture(scope="module")
def versions(wired: KubeSource) -> Iterator[None]:
    """Three Kubernetes versions in the catalog, the first with Debian 12 as its node image, the others
    Ubuntu 24.04."""
    from orchestrator.auth import Principal

    admin = Context(principal=Principal("admin", "admin", "", frozenset({"ADMIN"})))
    for version, image in ((VERSION, "debian-12"), (NEXT, "ubuntu-24.04"), (FAR, "ubuntu-24.04")):
        with contextlib.suppress(Conflict):  # made before by another module (clusterkit's: the same)
            catalog.create_kubernetes_version(admin, {"version": version, "image": image})
    yield
    for version in (VERSION, NEXT, FAR):
        catalog.delete_kubernetes_version(
            Context(principal=Principal("admin", "admin", "", frozenset({"ADMIN"}))), version
        )


def listed(custom: client.CustomObjectsApi, r: Resource, vdc: str, selector: str = "") -> list[Any]:
    answer: Any = custom.list_namespaced_custom_object(
        r.group, r.version, namespace_of(vdc), r.plural, label_selector=selector
    )
    items: list[Any] = answer["items"]
    return items


def objects_in(custom: client.CustomObjectsApi, vdc: str, cluster: str | None = None) -> dict[str, list[Any]]:
    selector = VDC_LABEL if cluster is None else f"cluster.x-k8s.io/cluster-name={cluster}"
    return {r.kind: listed(custom, r, vdc, selector) for r in ALL_KINDS}


def wipe(custom: client.CustomObjectsApi, vdc: str) -> None:
    for r in ALL_KINDS:
        for item in listed(custom, r, vdc):
            custom.delete_namespaced_custom_object(
                r.group, r.version, namespace_of(vdc), r.plural, item["metadata"]["name"]
            )


@pytest.fixture(scope="module")
def networked(wired: KubeSource) -> None:
    """VDCs demo and other have their default networks in zone-a (the world's VDCs predate networks: a
    VM create would make them)."""
    from orchestrator.auth import Principal
    from orchestrator.services import locks, networks

    admin = Context(principal=Principal("admin", "admin", "", frozenset({"ADMIN"})))
    for vdc in ("demo", "other"):
        with locks.vdc_lock(admin, vdc):
            networks.ensure_default_networks(admin, vdcs.get_vdc(admin, vdc), ["zone-a"])


@pytest.fixture
def clean(custom: client.CustomObjectsApi, versions: None, networked: None) -> Iterator[None]:
    yield
    wipe(custom, "demo")
    wipe(custom, "other")


def alice(make_context: MakeContext) -> Context:
    ctx = make_context("USER", "vdc:demo", subject="alice-subject")
    ctx.principal = type(ctx.principal)(
        subject="alice-subject", name="Alice", email="alice@example.com", roles=ctx.principal.roles
    )
    ctx.vdc = "demo"
    return ctx


def demo_network(ctx: Context) -> str:
    from orchestrator.services import networks

    [default] = [n for n in networks.list_networks(ctx) if n.zone == "zone-a" and n.is_default]
    return default.id


def spec(ctx: Context, name: str | None = None, **changes: Any) -> CreateCluster:
    pools = changes.pop("node_pools", (NodePoolSpec("workers", "small", "standard", 2),))
    values: dict[str, Any] = {
        "name": name or f"c{next(_names)}",
        "version": VERSION,
        "network": demo_network(ctx),
        "node_pools": tuple(pools),
    }
    values.update(changes)
    return CreateCluster(**values)


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
    }
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
    with pytest.raises(ValidationFailed) as refused:
        clusters.create_cluster(ctx, spec(ctx, **{"name": "bad", **changes}))
    assert refused.value.field == field
    assert all(not items for items in objects_in(custom, "demo").values())


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
    with pytest.raises(ValidationFailed) as refused:
        clusters.create_cluster(ctx, spec(ctx, "net", network=theirs))
    assert refused.value.field == "network"
    assert all(not items for items in objects_in(custom, "demo").values())


def test_a_quota_too_small_for_the_pool_is_refused_before_anything_is_written(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    demo = vdcs.get_vdc(ctx, "demo")
    room = demo.quota.vms - vdcs.fresh_usage(ctx, "demo").vms
    with pytest.raises(QuotaExceeded):
        clusters.create_cluster(
            ctx, spec(ctx, "big", node_pools=(NodePoolSpec("w", "small", "standard", room + 1),))
        )
    assert all(not items for items in objects_in(custom, "demo").values())


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
    room = demo.quota.vms - vdcs.fresh_usage(ctx, "demo").vms
    per_create = 2
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

    assert outcomes.count("made") == room // per_create
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
    assert [c.name for c in clusters.list_clusters(ctx)] == ["secret"]


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


# ------------------------------------------------------------------------------------- changes


def test_scaling_a_pool_sets_its_replicas_and_growing_it_checks_the_quota(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "scaled"))
    scaled = clusters.scale_node_pool(ctx, "scaled", "workers", 3)
    assert [p.count for p in scaled.node_pools] == [3]
    demo = vdcs.get_vdc(ctx, "demo")
    with pytest.raises(QuotaExceeded):
        clusters.scale_node_pool(ctx, "scaled", "workers", demo.quota.vms + 1)
    with pytest.raises(ValidationFailed) as invalid:
        clusters.scale_node_pool(ctx, "scaled", "workers", 0)
    assert invalid.value.field == "count"
    back = clusters.scale_node_pool(ctx, "scaled", "workers", 1)
    assert [p.count for p in back.node_pools] == [1]
    [md] = objects_in(custom, "demo", "scaled")["MachineDeployment"]
    assert md["spec"]["replicas"] == 1


def test_an_upgrade_moves_the_control_plane_and_leaves_the_pools_new_template_pending(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "up"))
    before = objects_in(custom, "demo", "up")["MachineDeployment"][0]["spec"]["template"]["spec"]
    with pytest.raises(ValidationFailed):
        clusters.upgrade_cluster(ctx, "up", FAR)  # two minor versions at once
    upgraded = clusters.upgrade_cluster(ctx, "up", NEXT)

    assert upgraded.version == NEXT
    assert upgraded.phase in ("Provisioning", "Upgrading")
    found = objects_in(custom, "demo", "up")
    [fcp], [md] = found["FlexControlPlane"], found["MachineDeployment"]
    assert fcp["spec"]["version"] == NEXT
    assert fcp["metadata"]["annotations"][WORKERS_PENDING_ANNOTATION] == NEXT
    # The workers wait for the control plane: the pool's spec is untouched, its upgrade recorded.
    assert md["spec"]["template"]["spec"] == before
    pending = json.loads(md["metadata"]["annotations"][PENDING_UPGRADE_ANNOTATION])
    assert pending["version"] == NEXT
    assert pending["infrastructureRef"]["name"] != before["infrastructureRef"]["name"]
    assert pending["infrastructureRef"]["name"] in {
        t["metadata"]["name"] for t in found["ProxmoxMachineTemplate"]
    }
    assert pending["bootstrapConfigRef"] == before["bootstrap"]["configRef"]
    with pytest.raises(ValidationFailed):
        clusters.upgrade_cluster(ctx, "up", VERSION)  # never down


def test_an_upgrade_to_the_version_the_control_plane_runs_moves_the_pools_at_once(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "there"))
    custom.patch_namespaced_custom_object(
        FLEX_CONTROL_PLANE.group,
        FLEX_CONTROL_PLANE.version,
        namespace_of("demo"),
        FLEX_CONTROL_PLANE.plural,
        "there",
        {"spec": {"version": NEXT}},
    )
    custom.patch_namespaced_custom_object_status(
        FLEX_CONTROL_PLANE.group,
        FLEX_CONTROL_PLANE.version,
        namespace_of("demo"),
        FLEX_CONTROL_PLANE.plural,
        "there",
        {"status": {"version": NEXT}},
    )
    clusters.upgrade_cluster(ctx, "there", NEXT)

    found = objects_in(custom, "demo", "there")
    [fcp], [md] = found["FlexControlPlane"], found["MachineDeployment"]
    assert WORKERS_PENDING_ANNOTATION not in (fcp["metadata"].get("annotations") or {})
    assert PENDING_UPGRADE_ANNOTATION not in (md["metadata"].get("annotations") or {})
    assert md["spec"]["template"]["spec"]["version"] == NEXT


def test_a_delete_removes_every_object_of_the_cluster(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "gone"))
    clusters.create_cluster(ctx, spec(ctx, "kept"))
    deleted = clusters.delete_cluster(ctx, "gone")
    assert deleted.phase == "Deleting"
    assert all(not items for items in objects_in(custom, "demo", "gone").values())
    assert [c.name for c in clusters.list_clusters(ctx)] == ["kept"]
    with pytest.raises(NotFound):
        clusters.get_cluster(ctx, "gone")


# ------------------------------------------------------------------------------------ kubeconfig


def make_ready(custom: client.CustomObjectsApi, core: client.CoreV1Api, name: str) -> x509.Certificate:
    """What the providers and core would write once the cluster is up: statuses, endpoint, its CA."""
    ns = namespace_of("demo")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    core.create_namespaced_secret(
        ns,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name=f"{name}-ca", labels={"cluster.x-k8s.io/cluster-name": name}),
            type="cluster.x-k8s.io/secret",
            data={"tls.crt": base64.b64encode(pem).decode(), "tls.key": base64.b64encode(key_pem).decode()},
        ),
    )
    g, v = PROXMOX_CLUSTER.group, PROXMOX_CLUSTER.version
    custom.patch_namespaced_custom_object(
        g,
        v,
        ns,
        PROXMOX_CLUSTER.plural,
        name,
        {"spec": {"controlPlaneEndpoint": {"host": "192.0.2.10", "port": 6443}}},
    )
    custom.patch_namespaced_custom_object_status(
        FLEX_CONTROL_PLANE.group,
        FLEX_CONTROL_PLANE.version,
        ns,
        FLEX_CONTROL_PLANE.plural,
        name,
        {
            "status": {
                "initialization": {"controlPlaneInitialized": True},
                "readyReplicas": 2,
                "replicas": 2,
                "version": VERSION,
            }
        },
    )
    custom.patch_namespaced_custom_object_status(
        MACHINE_DEPLOYMENT.group,
        MACHINE_DEPLOYMENT.version,
        ns,
        MACHINE_DEPLOYMENT.plural,
        f"{name}-workers",
        {"status": {"replicas": 2, "readyReplicas": 2, "upToDateReplicas": 2, "availableReplicas": 2}},
    )
    return ca


def test_the_kubeconfig_loads_in_the_official_client_and_names_the_endpoint_and_ca(
    make_context: MakeContext, custom: client.CustomObjectsApi, wired: KubeSource, clean: None, tmp_path: Path
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "conf"))
    with pytest.raises(Conflict):
        clusters.kubeconfig(ctx, "conf")  # no endpoint yet
    core = client.CoreV1Api(wired.core.api_client)
    ca = make_ready(custom, core, "conf")
    try:
        assert clusters.get_cluster(ctx, "conf").phase == "Ready"
        issued = clusters.kubeconfig(ctx, "conf")

        configuration = client.Configuration()
        config.load_kube_config_from_dict(yaml.safe_load(issued.text), client_configuration=configuration)
        assert configuration.host == "https://192.0.2.10:6443"
        assert configuration.ssl_ca_cert is not None
        assert configuration.cert_file is not None
        assert Path(configuration.ssl_ca_cert).read_bytes() == ca.public_bytes(serialization.Encoding.PEM)
        certificate = x509.load_pem_x509_certificate(Path(configuration.cert_file).read_bytes())
        assert certificate.issuer == ca.subject
        certificate.verify_directly_issued_by(ca)
        assert certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice@example.com"
        assert (
            certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value
            == "flexplane:vdc:demo"
        )
        lifetime = certificate.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
        assert datetime.timedelta(hours=7) < lifetime <= datetime.timedelta(hours=8)
        assert issued.expires_at == certificate.not_valid_after_utc
    finally:
        core.delete_namespaced_secret("conf-ca", namespace_of("demo"))
