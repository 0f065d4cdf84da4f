"""Tenant clusters in the management plane's backup, against the devstack's Kubernetes emulator (Cluster API
core's CRDs and ours installed) served on loopback: what a backup holds of a cluster, and a restore's
writes, watched in the emulator's event log (paused while written, owners first, uids rewritten, unpaused
at the end, nothing written a second time)."""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.config import new_client_from_config

from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.kube.server import KubeServer
from orchestrator.services.backup import Scope, make_backup, restore_backup
from orchestrator.services.backup.clusters import HalfRestored, UnknownOwner
from orchestrator.services.backup.contents import restore, take
from orchestrator.services.backup.objects import ManagementObjects
from orchestrator.services.backup.sealed import NotABackup, unseal
from orchestrator.services.clusters import objects as builders
from orchestrator.sources.kube_objects import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    KUBEADM_CONFIG,
    MACHINE,
    MACHINE_DEPLOYMENT,
    PAUSED_ANNOTATION,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE,
    VDC_LABEL,
    Resource,
)
from providers.common.crds import load_crds
from tests.addresses import BACKUP, address

PLATFORM_NS = "flexplane"
SCOPE = Scope(PLATFORM_NS, ())
KEY = bytes(range(32))
HOST = address(BACKUP, 2)
VDC, NS, NAME = "alpha", "vdc-alpha", "web"
CP_NS = f"fpcp-{VDC}-{NAME}"
WORKER = f"{NAME}-workers-x7k2p"
GOING = f"{NAME}-workers-q4m9z"
PROVIDER_ID = "proxmox://0b9a3c52-55a1-4e0c-8d6e-3a1f0c2b7d91"
KOPF_DIFFBASE = "infrastructure.flexplane.io/last-handled-configuration"
Body = dict[str, Any]


class Mgmt:
    """An emulated management cluster of the test's own, with Cluster API's CRDs and ours."""

    def __init__(self, tmp_path: Path, name: str, *, without: str = "") -> None:
        self.server = KubeServer.start(host=HOST, port=0)
        self.crds = [*load_crds(), *CLUSTER_API_CORE_CRDS]
        self.server.install_crds([crd for crd in self.crds if crd["metadata"]["name"] != without])
        kubeconfig = self.server.write_kubeconfig(tmp_path / f"{name}.kubeconfig", namespace=PLATFORM_NS)
        self.api_client = new_client_from_config(str(kubeconfig))
        self.core = client.CoreV1Api(self.api_client)
        self.custom: Any = client.CustomObjectsApi(self.api_client)
        self.objects = ManagementObjects(self.api_client, 10.0)
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=PLATFORM_NS)))

    def close(self) -> None:
        self.api_client.close()
        self.server.stop()

    def create(self, resource: Resource, body: Body, namespace: str = NS) -> Body:
        made: Body = self.custom.create_namespaced_custom_object(
            resource.group, resource.version, namespace, resource.plural, body
        )
        return made

    def get(self, resource: Resource, name: str) -> Body | None:
        try:
            found: Body = self.custom.get_namespaced_custom_object(
                resource.group, resource.version, NS, resource.plural, name
            )
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    def patch(self, resource: Resource, name: str, patch: Body) -> Body:
        done: Body = self.custom.patch_namespaced_custom_object(
            resource.group, resource.version, NS, resource.plural, name, patch
        )
        return done

    def status(self, resource: Resource, name: str, status: Body) -> None:
        self.custom.patch_namespaced_custom_object_status(
            resource.group, resource.version, NS, resource.plural, name, {"status": status}
        )

    def secret(self, namespace: str, name: str, data: dict[str, bytes], **labels: str) -> None:
        self.core.create_namespaced_secret(
            namespace,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name=name, labels=labels or None),
                data={key: base64.b64encode(value).decode() for key, value in data.items()},
            ),
        )

    def namespace(self, name: str, **labels: str) -> None:
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels)))


def owner(body: Body, controller: bool = True) -> Body:
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": body["metadata"]["name"],
        "uid": body["metadata"]["uid"],
        "controller": controller,
    }


def seed_cluster(mgmt: Mgmt) -> None:
    """A cluster of VDC alpha as the tenant API, core, CABPK and our providers leave it: the builders'
    objects (a pool of one), the Cluster owning its parts, a Machine of the MachineDeployment with its
    KubeadmConfig and ProxmoxMachine (made: a providerID and a status), kopf's bookkeeping and finalizers;
    the control plane's namespace with its PKI and what the providers render from it; the cloud
    controller's key; a worker's bootstrap data."""
    mgmt.namespace(NS, **{VDC_LABEL: VDC})
    pool = builders.PoolPlan("workers", "small", "standard", 1, 20, 1, 1024)
    plan = builders.ClusterPlan(VDC, NAME, "v1.34.2", "debian-12", "zone-a/nodes", 1, (pool,))
    made: dict[str, Body] = {}
    for resource, body in builders.all_objects(plan):
        made[resource.kind] = mgmt.create(resource, body)
    cluster = made["Cluster"]
    for resource in (FLEX_CONTROL_PLANE, PROXMOX_CLUSTER, MACHINE_DEPLOYMENT):
        mgmt.patch(
            resource,
            NAME if resource != MACHINE_DEPLOYMENT else f"{NAME}-workers",
            {"metadata": {"ownerReferences": [owner(cluster)]}},
        )
    mgmt.patch(CLUSTER, NAME, {"metadata": {"finalizers": ["cluster.cluster.x-k8s.io"]}})
    mgmt.patch(FLEX_CONTROL_PLANE, NAME, {"spec": {"restore": {"id": "tenant-r1", "snapshot": "old.fpdump"}}})
    mgmt.status(CLUSTER, NAME, {"phase": "Provisioned"})
    deployment = mgmt.get(MACHINE_DEPLOYMENT, f"{NAME}-workers")
    assert deployment is not None
    labels = {CLUSTER_NAME_LABEL: NAME, VDC_LABEL: VDC}
    machine = mgmt.create(
        MACHINE,
        {
            "apiVersion": MACHINE.api_version,
            "kind": "Machine",
            "metadata": {
                "name": WORKER,
                "labels": labels,
                "ownerReferences": [owner(deployment)],
                "finalizers": ["machine.cluster.x-k8s.io"],
            },
            "spec": {
                "clusterName": NAME,
                "providerID": PROVIDER_ID,
                "bootstrap": {"dataSecretName": WORKER},
                "infrastructureRef": {
                    "apiGroup": PROXMOX_MACHINE.group,
                    "kind": "ProxmoxMachine",
                    "name": WORKER,
                },
            },
        },
    )
    for resource, spec in (
        (KUBEADM_CONFIG, {"joinConfiguration": {}}),
        (
            PROXMOX_MACHINE,
            {
                "computeProfile": "small",
                "storageProfile": "standard",
                "image": "debian-12",
                "providerID": PROVIDER_ID,
            },
        ),
    ):
        mgmt.create(
            resource,
            {
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "metadata": {
                    "name": WORKER,
                    "labels": labels,
                    "annotations": {KOPF_DIFFBASE: '{"spec": {}}', "keep.example.com/note": "mine"},
                    "ownerReferences": [owner(machine)],
                    "finalizers": ["infrastructure.flexplane.io/finalizer"],
                },
                "spec": spec,
            },
        )
    mgmt.status(PROXMOX_MACHINE, WORKER, {"initialization": {"provisioned": True}, "vmid": 4242})
    # A worker scaled away, its Machine going (a finalizer holds it), its ProxmoxMachine not yet.
    going = mgmt.create(
        MACHINE,
        {
            "apiVersion": MACHINE.api_version,
            "kind": "Machine",
            "metadata": {
                "name": GOING,
                "labels": labels,
                "ownerReferences": [owner(deployment)],
                "finalizers": ["machine.cluster.x-k8s.io"],
            },
            "spec": {"clusterName": NAME},
        },
    )
    mgmt.create(
        PROXMOX_MACHINE,
        {
            "apiVersion": PROXMOX_MACHINE.api_version,
            "kind": PROXMOX_MACHINE.kind,
            "metadata": {"name": GOING, "labels": labels, "ownerReferences": [owner(going)]},
            "spec": {"computeProfile": "small", "storageProfile": "standard", "image": "debian-12"},
        },
    )
    mgmt.custom.delete_namespaced_custom_object(MACHINE.group, MACHINE.version, NS, MACHINE.plural, GOING)
    mgmt.namespace(CP_NS, **{VDC_LABEL: VDC, CLUSTER_NAME_LABEL: NAME, "flexplane.io/control-plane": NAME})
    mgmt.secret(CP_NS, "pki", {"ca.crt": b"CA", "ca.key": b"CA KEY", "sa.key": b"SA KEY"})
    mgmt.secret(CP_NS, "kubeconfigs", {"admin.conf": b"derived"})
    mgmt.secret(CP_NS, "etcd-backup", {"key": b"derived"})
    mgmt.secret(NS, f"{NAME}-cloud-controller", {"key.json": b"{}"}, **labels)
    mgmt.secret(NS, f"{NAME}-kubeconfig", {"value": b"derived"}, **labels)
    mgmt.secret(NS, WORKER, {"value": b"#cloud-config"}, **labels)


@pytest.fixture
def mgmt(tmp_path: Path) -> Iterator[Mgmt]:
    made = Mgmt(tmp_path, "platform")
    try:
        seed_cluster(made)
        yield made
    finally:
        made.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Mgmt]:
    """Another management cluster, new: only the platform's namespace."""
    made = Mgmt(tmp_path, "new")
    try:
        yield made
    finally:
        made.close()


def held(document: Body) -> set[str]:
    return {
        f"{i['kind']} {i['metadata'].get('namespace', '')}/{i['metadata']['name']}"
        for i in document["clusters"]
    }


def test_a_backup_holds_each_clusters_objects_and_the_secrets_it_cannot_be_rebuilt_without(
    mgmt: Mgmt,
) -> None:
    document = take(mgmt.objects, SCOPE)[2]

    assert held(document) == {
        f"Namespace /{CP_NS}",
        f"Secret {CP_NS}/pki",
        f"Secret {NS}/{NAME}-cloud-controller",
        f"Cluster {NS}/{NAME}",
        f"FlexControlPlane {NS}/{NAME}",
        f"ProxmoxCluster {NS}/{NAME}",
        f"MachineDeployment {NS}/{NAME}-workers",
        f"Machine {NS}/{WORKER}",
        f"KubeadmConfig {NS}/{WORKER}",
        f"ProxmoxMachine {NS}/{WORKER}",
        *(
            f"{i['kind']} {NS}/{i['metadata']['name']}"
            for i in document["clusters"]
            if i["kind"] in ("ProxmoxMachineTemplate", "KubeadmConfigTemplate")
        ),
    }
    assert {i["kind"] for i in document["clusters"]} >= {"ProxmoxMachineTemplate", "KubeadmConfigTemplate"}
    for item in document["clusters"]:
        assert "status" not in item, item
        assert set(item["metadata"]) <= {"name", "namespace", "labels", "annotations", "ownerReferences"}
        for ref in item["metadata"].get("ownerReferences", []):
            assert "uid" not in ref
    [control_plane] = [i for i in document["clusters"] if i["kind"] == "FlexControlPlane"]
    assert "restore" not in control_plane["spec"]  # a request that ran: without its status it would again
    [infra] = [i for i in document["clusters"] if i["kind"] == "ProxmoxMachine"]
    assert infra["spec"]["providerID"] == PROVIDER_ID
    assert infra["metadata"]["annotations"] == {"keep.example.com/note": "mine"}  # kopf's is not held


def _wipe(mgmt: Mgmt) -> None:
    """Everything of the cluster gone (finalizers taken off first: the management cluster is lost)."""
    for resource, name in (
        (PROXMOX_MACHINE, WORKER),
        (KUBEADM_CONFIG, WORKER),
        (MACHINE, WORKER),
        (MACHINE, GOING),
        (CLUSTER, NAME),
    ):
        mgmt.patch(resource, name, {"metadata": {"finalizers": None}})
    mgmt.core.delete_namespace(NS)
    mgmt.core.delete_namespace(CP_NS)
    mgmt.namespace(NS, **{VDC_LABEL: VDC})  # the platform's part restores it anyway


def _uid(mgmt: Mgmt, kind: str, name: str) -> str:
    resource = {
        r.kind: r for r in (CLUSTER, FLEX_CONTROL_PLANE, PROXMOX_CLUSTER, MACHINE_DEPLOYMENT, MACHINE)
    }[kind]
    found = mgmt.get(resource, name)
    assert found is not None
    return str(found["metadata"]["uid"])


def test_a_restore_onto_a_new_management_cluster_brings_the_cluster_back_owned_by_its_new_owners(
    mgmt: Mgmt, fresh: Mgmt
) -> None:
    blob = make_backup(mgmt.objects, SCOPE, KEY)[3]
    document = unseal(blob, KEY)[1]
    before = fresh.server.emulator.revision

    restored = restore_backup(fresh.objects, blob, KEY)[1]

    outcomes = dict(restored.outcomes)
    for item in document["clusters"]:
        meta = item["metadata"]
        where = f"{meta['namespace']}/" if meta.get("namespace") else ""
        assert outcomes[f"{item['kind']} {where}{meta['name']}"] == "created"
        if item["kind"] in ("Namespace", "Secret"):
            continue
        group, version = item["apiVersion"].split("/")
        found = fresh.custom.get_namespaced_custom_object(
            group, version, NS, f"{item['kind'].lower()}s", meta["name"]
        )
        assert PAUSED_ANNOTATION not in (found["metadata"].get("annotations") or {})
        for ref in found["metadata"].get("ownerReferences", []):
            assert ref["uid"] == _uid(fresh, ref["kind"], ref["name"]), (item["kind"], ref)
    cluster = fresh.get(CLUSTER, NAME)
    assert cluster is not None
    assert "paused" not in cluster["spec"]
    control_plane = fresh.get(FLEX_CONTROL_PLANE, NAME)  # made anew: etcd from the newest snapshot first
    assert control_plane is not None
    stamp = "".join(c for c in document["createdAt"] if c.isalnum())
    assert control_plane["spec"]["restore"] == {
        "id": f"platform-restore-{stamp}",
        "snapshot": "",
        "newControlPlane": True,
    }
    pki = fresh.core.read_namespaced_secret("pki", CP_NS)
    assert pki.data is not None
    assert base64.b64decode(pki.data["ca.key"]) == b"CA KEY"
    infra = fresh.get(PROXMOX_MACHINE, WORKER)
    assert infra is not None
    assert infra["spec"]["providerID"] == PROVIDER_ID
    assert "status" not in infra or not infra["status"]

    # Watched as a controller would have seen it: every Cluster API object appeared paused, its owners
    # before it, and the Cluster paused before any of them.
    seen: list[str] = []
    for event in fresh.server.emulator.events():
        if event.revision <= before or event.type != "ADDED":
            continue
        body = event.after
        if body["kind"] in ("Namespace", "Secret", "ConfigMap", "RoleBinding"):
            continue
        assert body["metadata"]["annotations"][PAUSED_ANNOTATION] == "restore", body["kind"]
        if body["kind"] == "Cluster":
            assert body["spec"]["paused"] is True
        for ref in body["metadata"].get("ownerReferences", []):
            assert f"{ref['kind']}/{ref['name']}" in seen, (body["kind"], ref)
        seen.append(f"{body['kind']}/{body['metadata']['name']}")
    assert seen[0] == f"Cluster/{NAME}"


def test_a_second_restore_writes_nothing(mgmt: Mgmt, fresh: Mgmt) -> None:
    blob = make_backup(mgmt.objects, SCOPE, KEY)[3]
    restore_backup(fresh.objects, blob, KEY)
    revision = fresh.server.emulator.revision

    restored = restore_backup(fresh.objects, blob, KEY)[1]

    assert not restored.changed
    assert fresh.server.emulator.revision == revision


def test_a_restore_over_a_lost_cluster_in_place_brings_it_back(mgmt: Mgmt) -> None:
    blob = make_backup(mgmt.objects, SCOPE, KEY)[3]
    _wipe(mgmt)

    restored = restore_backup(mgmt.objects, blob, KEY)[1]

    assert dict(restored.outcomes)[f"ProxmoxMachine {NS}/{WORKER}"] == "created"
    machine = mgmt.get(MACHINE, WORKER)
    assert machine is not None
    assert machine["metadata"]["ownerReferences"][0]["uid"] == _uid(
        mgmt, "MachineDeployment", f"{NAME}-workers"
    )


def test_a_restore_over_a_changed_cluster_pauses_it_puts_its_spec_back_and_keeps_finalizers(
    mgmt: Mgmt,
) -> None:
    blob = make_backup(mgmt.objects, SCOPE, KEY)[3]
    mgmt.patch(MACHINE_DEPLOYMENT, f"{NAME}-workers", {"spec": {"replicas": 7}})
    before = mgmt.server.emulator.revision

    restored = restore_backup(mgmt.objects, blob, KEY)[1]

    changed = [o for o in restored.outcomes if o[1] != "unchanged"]
    assert changed == [(f"MachineDeployment {NS}/{NAME}-workers", "updated")]
    deployment = mgmt.get(MACHINE_DEPLOYMENT, f"{NAME}-workers")
    assert deployment is not None
    assert deployment["spec"]["replicas"] == 1
    control_plane = mgmt.get(FLEX_CONTROL_PLANE, NAME)  # not made anew: its own request stands
    assert control_plane is not None
    assert control_plane["spec"]["restore"] == {"id": "tenant-r1", "snapshot": "old.fpdump"}
    cluster = mgmt.get(CLUSTER, NAME)
    assert cluster is not None
    assert cluster["metadata"]["finalizers"] == ["cluster.cluster.x-k8s.io"]
    assert "paused" not in cluster["spec"]
    assert PAUSED_ANNOTATION not in (cluster["metadata"].get("annotations") or {})
    # The Cluster was paused before the MachineDeployment was written, and unpaused after.
    writes = [
        (e.after["kind"], bool((e.after.get("spec") or {}).get("paused")))
        for e in mgmt.server.emulator.events()
        if e.revision > before
    ]
    assert writes == [
        ("Cluster", True),
        ("MachineDeployment", False),
        ("MachineDeployment", False),
        ("Cluster", False),
    ]


def test_a_cluster_object_owned_by_what_is_nowhere_is_refused_by_name(mgmt: Mgmt, fresh: Mgmt) -> None:
    document = take(mgmt.objects, SCOPE)[2]
    broken = copy.deepcopy(document)
    broken["clusters"] = [i for i in broken["clusters"] if i["kind"] != "MachineDeployment"]

    with pytest.raises(
        UnknownOwner, match=f"Machine {NS}/{WORKER} is owned by MachineDeployment {NAME}-workers"
    ):
        restore(fresh.objects, broken)


def test_a_cluster_object_of_no_cluster_the_backup_holds_is_refused(mgmt: Mgmt, fresh: Mgmt) -> None:
    document = take(mgmt.objects, SCOPE)[2]
    document["clusters"] = [i for i in document["clusters"] if i["kind"] != "Cluster"]

    with pytest.raises(NotABackup, match="belongs to no Cluster it holds"):
        restore(fresh.objects, document)


def test_a_restore_that_fails_half_way_leaves_the_cluster_paused_and_a_second_one_ends_it(
    mgmt: Mgmt, tmp_path: Path
) -> None:
    blob = make_backup(mgmt.objects, SCOPE, KEY)[3]
    # A management cluster without CABPK's CRDs installed yet: its KubeadmConfigs cannot be written.
    missing = "kubeadmconfigs.bootstrap.cluster.x-k8s.io"
    target = Mgmt(tmp_path, "half", without=missing)
    try:
        with pytest.raises(HalfRestored, match=f"cluster {NS}/{NAME} is left paused, half restored"):
            restore_backup(target.objects, blob, KEY)
        cluster = target.get(CLUSTER, NAME)
        assert cluster is not None
        assert cluster["spec"]["paused"] is True  # no controller acts on the half of it written
        assert target.get(MACHINE, WORKER) is not None

        target.server.install_crds([crd for crd in target.crds if crd["metadata"]["name"] == missing])
        restored = restore_backup(target.objects, blob, KEY)[1]

        assert dict(restored.outcomes)[f"KubeadmConfig {NS}/{WORKER}"] == "created"
        cluster = target.get(CLUSTER, NAME)
        assert cluster is not None
        assert "paused" not in cluster["spec"]
        machine = target.get(MACHINE, WORKER)
        assert machine is not None
        assert PAUSED_ANNOTATION not in (machine["metadata"].get("annotations") or {})
        assert not restore_backup(target.objects, blob, KEY)[1].changed
    finally:
        target.close()
