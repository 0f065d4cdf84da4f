"""Tenant clusters through the services, after their create: scale, upgrade, delete, and the kubeconfig
(``test_clusters`` has the create, isolation and reads; what both share: ``services.clusterkit``).

No provider runs here (``services.clusterkit`` says how a test stands in for them).
"""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID
from kubernetes import client, config

from orchestrator.errors import Conflict, NotFound, QuotaExceeded, ValidationFailed
from orchestrator.models.clusters import (
    FLEX_CONTROL_PLANE,
    MACHINE_DEPLOYMENT,
    PENDING_UPGRADE_ANNOTATION,
    PROXMOX_CLUSTER,
    WORKERS_PENDING_ANNOTATION,
    namespace_of,
)
from orchestrator.services import clusters, vdcs
from orchestrator.sources.kube import KubeSource
from tests.orchestrator.clusterkit import ca_secret
from tests.orchestrator.services.clusterkit import FAR, NEXT, VERSION, alice, objects_in, spec
from tests.orchestrator.services.conftest import MakeContext

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
    # VDC demo may hold another module's cluster (the isolation matrix stages one, and the providers' runs
    # put finalizers on what they saw): this test's own are what it checks.
    listed = {c.name for c in clusters.list_clusters(ctx)}
    assert "gone" not in listed
    assert "kept" in listed
    with pytest.raises(NotFound):
        clusters.get_cluster(ctx, "gone")


# ------------------------------------------------------------------------------------ kubeconfig


def make_ready(custom: client.CustomObjectsApi, core: client.CoreV1Api, name: str) -> x509.Certificate:
    """What the providers and core would write once the cluster is up: statuses, endpoint, its CA."""
    ns = namespace_of("demo")
    secret = ca_secret(name)
    core.create_namespaced_secret(ns, secret)
    assert secret.data is not None
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret.data["tls.crt"]))
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
