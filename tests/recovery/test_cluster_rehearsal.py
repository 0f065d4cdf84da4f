"""Rehearsing the loss of the management cluster with a tenant Kubernetes cluster on it (issue 34).

A world of its own (one zone of two nodes) runs Cluster API: the real providers (``python -m providers``),
core's and CABPK's stand-in, the hosted control planes' stand-in (the tenant's API server an emulator, its
etcd snapshots and restores played end to end: devstack/hosted_control_plane.py), with the etcd snapshots'
bucket on moto's S3 server. A cluster of VDC demo is made as the tenant API writes it, with a pool of two
workers (two VMs in the fake zone), and the tenant puts a ConfigMap in its API server.

It is backed up as the schedules do: the cluster's etcd snapshot (its CronJob's run) and ``manage.py backup
--file``. Then the management cluster is lost with all that ran in it: the providers and the stand-ins stop
(the tenant's API server and its objects with them), and a new, empty Kubernetes emulator serves where the
old one did. The VMs run on. Then the procedure of docs/operating.md: Cluster API and the providers
installed and running (their CRDs, core's stand-in, the providers' process), the platform namespace made,
``manage.py restore --file`` (each cluster written paused: nothing running acts on half of it).
The cluster comes back: its control plane made anew from the newest etcd snapshot before it serves (the
tenant's ConfigMap is there), its workers the same two VMs (the same VMIDs, none made), each adopted by its
restored ProxmoxMachine, with the providerIDs they had. The time to recover (Cluster API's start, before
the restore, to the tenant's ConfigMap read back and every worker provisioned) is printed and recorded as
the suite's figure.

What the stand-ins cannot show: that a kubelet reconnects (none runs), or that etcd's real restore keeps
the revision past the old one (the restore Job's etcdutl step is not run here;
tests/orchestrator/test_etcd_backup.py restores a real etcd).
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client
from kubernetes.config import new_client_from_config, new_client_from_config_dict
from moto.server import ThreadedMotoServer

from devstack import seed
from devstack.world import World
from orchestrator.services.backup.stores import S3Settings
from orchestrator.services.clusters import objects
from orchestrator.sources.kube_objects import (
    CLUSTER_API_GROUP,
    CLUSTER_API_VERSION,
    CONTROLPLANE_GROUP,
    INFRASTRUCTURE_GROUP,
    OUR_VERSION,
)
from tests import addresses
from tests.apikit import GraphQL, eventually, vdc_namespace
from tests.conftest import world_config
from tests.promises import RecordFigure
from tests.vmkit import fake_vms

pytestmark = pytest.mark.promise("recovery")
T = TypeVar("T")
Body = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
SUITE = "recovery"
ZONE = "zone-a"
VDC, NS = "demo", "vdc-demo"
NAME = "keep"
POOL = f"{NAME}-workers"
CP_NS = f"fpcp-{VDC}-{NAME}"
BUCKET = "etcd-snapshots"
# Third octet of the module's moto server on the world's subnet: away from the zones', the orchestrator's
# (0) and the LoadBalancers' (90).
S3_OCTET = 240
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def bucket() -> Iterator[dict[str, str]]:
    """The etcd snapshots' bucket (moto's S3 server), as the providers' settings name it."""
    server = ThreadedMotoServer(
        ip_address=addresses.address(S3_OCTET, 1, addresses.FRAGILE), port=0, verbose=False
    )
    server.start()
    host, port = server.get_host_and_port()
    try:
        endpoint = f"http://{host}:{port}"
        S3Settings(endpoint, access_key="test", secret_key="test").client().create_bucket(Bucket=BUCKET)
        yield {
            "ETCD_BACKUP_S3_URL": f"s3://{BUCKET}/flexplane",
            "ETCD_BACKUP_S3_ENDPOINT": endpoint,
            "ETCD_BACKUP_S3_ACCESS_KEY": "test",
            "ETCD_BACKUP_S3_SECRET_KEY": "test",
            "ETCD_BACKUP_KEY": base64.b64encode(bytes(range(32))).decode(),
        }
    finally:
        server.stop()


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, bucket: dict[str, str]) -> Iterator[World]:
    """One zone of two nodes on the worker's second subnet, for this module alone: its management cluster is
    lost on purpose. Cluster API runs on it (started and stopped by the test)."""
    cfg = dataclasses.replace(
        world_config(Path(tmp_path_factory.mktemp("cluster-recovery-world")), addresses.FRAGILE),
        zones=(ZONE,),
        nodes_per_zone=2,
        providers_settings=tuple(bucket.items()),
    )
    with World(cfg) as running:
        try:
            yield running
        finally:
            running.stop_cluster_api()


class Mgmt:
    """The management cluster as it is now (a new client: the emulator behind the kubeconfig is replaced)."""

    def __init__(self, world: World) -> None:
        self.api = new_client_from_config(config_file=str(world.kubeconfig))
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.core: Any = client.CoreV1Api(self.api)

    def __enter__(self) -> Mgmt:
        return self

    def __exit__(self, *_: object) -> None:
        self.api.close()

    def list(self, group: str, plural: str) -> list[Body]:
        version = CLUSTER_API_VERSION if group == CLUSTER_API_GROUP else OUR_VERSION
        try:
            found: list[Body] = self.custom.list_namespaced_custom_object(group, version, NS, plural)["items"]
        except client.ApiException as error:
            if error.status == 404:  # not there (yet): the CRDs, or the namespace
                return []
            raise
        return found

    def get(self, group: str, plural: str, name: str) -> Body | None:
        return next((o for o in self.list(group, plural) if o["metadata"]["name"] == name), None)

    def tenant(self) -> client.ApiClient:
        """The tenant's API server, with the admin kubeconfig the control-plane provider wrote."""
        secret = self.core.read_namespaced_secret(f"{NAME}-kubeconfig", NS)
        config = yaml.safe_load(base64.b64decode(secret.data["value"]))
        api: client.ApiClient = new_client_from_config_dict(config)
        return api


def wait(world: World, probe: Callable[[], T | None], what: str) -> T:
    found = eventually(probe, TIMEOUT, lambda: f"{what} ({said(world)})", interval=0.2)
    assert found is not None
    return found


def said(world: World) -> str:
    """The providers' and the stand-ins' last words, for a failure's message."""
    out = world.providers.output()[-3000:] if world.providers is not None else "(no providers running)"
    for part in (world.capi_core, world.hosted_control_planes):
        if part is not None:
            out += f"\n{part.loop.name}: {part.loop.errors[-5:]}"
    with Mgmt(world) as mgmt:
        for infra in mgmt.list(INFRASTRUCTURE_GROUP, "proxmoxmachines"):
            out += f"\n{infra['metadata']['name']}: {(infra.get('status') or {}).get('conditions')}"
        fcp = mgmt.get(CONTROLPLANE_GROUP, "flexcontrolplanes", NAME) or {}
        out += f"\ncontrol plane: {(fcp.get('status') or {}).get('restore')}"
    return out


def workers(world: World) -> dict[str, Body] | None:
    """The pool's Machines, when there are two, both provisioned: by name."""
    with Mgmt(world) as mgmt:
        found = [
            m for m in mgmt.list(CLUSTER_API_GROUP, "machines") if m["metadata"]["name"].startswith(POOL)
        ]
    if len(found) != 2 or any((m.get("status") or {}).get("phase") != "Provisioned" for m in found):
        return None
    return {m["metadata"]["name"]: m for m in found}


def vms(world: World) -> dict[str, int]:
    """The zone's VMs of the cluster's pool: name -> VMID."""
    return {
        str(vm["name"]): vmid
        for vmid, vm in fake_vms(world, ZONE).items()
        if str(vm["name"]).startswith(POOL)
    }


def tenant_config_map(world: World) -> Body | None:
    """The tenant's ConfigMap ``kept``, read from its API server (None while it does not answer so)."""
    try:
        with Mgmt(world) as mgmt:
            api = mgmt.tenant()
    except (client.ApiException, KeyError):
        return None
    try:
        found: Body = client.CoreV1Api(api).read_namespaced_config_map("kept", "default").to_dict()
        return found
    except (client.ApiException, OSError, Exception):
        return None
    finally:
        api.close()


def restore_succeeded(world: World) -> Body | None:
    """The FlexControlPlane's ``status.restore`` once it says Succeeded."""
    with Mgmt(world) as mgmt:
        fcp = mgmt.get(CONTROLPLANE_GROUP, "flexcontrolplanes", NAME) or {}
    restore: Body = (fcp.get("status") or {}).get("restore") or {}
    return restore if restore.get("phase") == "Succeeded" else None


def manage(world: World, key_file: Path, *args: str) -> str:
    """``manage.py`` with the orchestrator's settings and the backup key, as the operator runs it."""
    env = {**os.environ, **world.orchestrator_env(), "FLEXPLANE_BACKUP_KEY_FILE": str(key_file)}
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def build(world: World, api: GraphQL) -> None:
    """The cluster as the tenant API writes it: a network of zone-a for its nodes, a pool of two workers."""
    made = api(
        "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) { errors { message } } }",
        user="alice",
        vdc=VDC,
        variables={"input": {"name": "kept-nodes", "zone": ZONE, "cidr": "10.178.3.0/24"}},
    )
    assert made.data["createNetwork"]["errors"] == [], made.body
    pool = objects.PoolPlan("workers", "small", "standard", 2, 20, 1, 1024, zone=ZONE)
    plan = objects.ClusterPlan(VDC, NAME, "v1.34.2", "debian-12", f"{ZONE}/kept-nodes", 1, (pool,))
    with Mgmt(world) as mgmt:
        vdc_namespace(mgmt.core, VDC)
        for resource, body in objects.all_objects(plan):
            mgmt.custom.create_namespaced_custom_object(
                resource.group, resource.version, NS, resource.plural, body
            )


def test_a_tenant_cluster_survives_losing_the_management_cluster(
    platform: World, tmp_path: Path, record_figure: RecordFigure
) -> None:
    api = GraphQL(platform)
    platform.start_cluster_api({"LEADER_TTL": "3"})
    build(platform, api)
    before = wait(platform, lambda: workers(platform), "two provisioned workers")
    hosted = platform.hosted_control_planes
    assert hosted is not None
    wait(platform, lambda: hosted.server(CP_NS), "the tenant's API server")
    with Mgmt(platform) as mgmt:
        tenant = wait(platform, lambda: _tenant_or_none(mgmt), "the tenant's kubeconfig")
    try:
        client.CoreV1Api(tenant).create_namespaced_config_map(
            "default",
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name="kept"), data={"state": "tenant's"}),
        )
    finally:
        tenant.close()
    machines_vms = vms(platform)
    assert sorted(machines_vms) == sorted(before)
    provider_ids = {name: m["spec"]["providerID"] for name, m in before.items()}

    # The backups, as their schedules take them: the cluster's etcd snapshot, then the platform's.
    snapshot = hosted.snapshot(CP_NS)
    assert snapshot.startswith(f"s3://{BUCKET}/flexplane/etcd-{VDC}-{NAME}/")
    key_file = tmp_path / "backup.key"
    key_file.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    backup = tmp_path / "platform.fpbackup"
    said_backup = manage(platform, key_file, "backup", "--file", str(backup))
    backed_up = re.search(r"backed up (\d+) objects", said_backup)
    assert backed_up is not None, said_backup

    # The management cluster lost, and what ran in it: the providers, core, the control plane's pods.
    platform.stop_cluster_api()
    platform.replace_kube()
    with Mgmt(platform) as mgmt:
        assert mgmt.list(CLUSTER_API_GROUP, "clusters") == []
    assert tenant_config_map(platform) is None
    assert vms(platform) == machines_vms  # the workers' VMs run on

    # The procedure: Cluster API and the providers installed (their CRDs, core, the providers, running
    # while the restore writes: each cluster is written paused), the platform namespace, the restore.
    started = time.monotonic()
    platform.start_cluster_api({"LEADER_TTL": "3"})
    with Mgmt(platform) as mgmt:
        mgmt.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=seed.NAMESPACE)))
    said_restore = manage(platform, key_file, "restore", "--file", str(backup))
    assert f"created: FlexControlPlane {NS}/{NAME}" in said_restore, said_restore
    restored = time.monotonic()
    back = wait(platform, lambda: tenant_config_map(platform), "the tenant's ConfigMap back")
    control_plane_back = time.monotonic()
    after = wait(platform, lambda: workers(platform), "the two workers provisioned again")
    recovered = time.monotonic()

    assert back["data"] == {"state": "tenant's"}
    assert sorted(after) == sorted(before)  # the same Machines, by name
    assert {name: m["spec"]["providerID"] for name, m in after.items()} == provider_ids
    assert vms(platform) == machines_vms  # the same VMs, the same VMIDs, none made
    with Mgmt(platform) as mgmt:
        infra = {m["metadata"]["name"]: m for m in mgmt.list(INFRASTRUCTURE_GROUP, "proxmoxmachines")}
    assert {name: m["status"]["vmid"] for name, m in infra.items()} == machines_vms
    # The control plane's own account: its etcd restored from the newest snapshot, as the restore asked.
    restore = wait(platform, lambda: restore_succeeded(platform), "the control plane's restore Succeeded")
    assert restore["id"].startswith("platform-restore-")
    assert restore["snapshot"] == ""

    figures = {
        "cluster: time to recover (s)": round(recovered - started, 2),
        "cluster: Cluster API started, management cluster restored in (s)": round(restored - started, 2),
        "cluster: tenant API server back in (s)": round(control_plane_back - restored, 2),
        "cluster: worker VMs made anew": len(set(vms(platform).values()) - set(machines_vms.values())),
        "cluster: objects backed up": int(backed_up.group(1)),
        "cluster: platform backup (bytes)": backup.stat().st_size,
    }
    for name, value in figures.items():
        record_figure(SUITE, name, value)
    print("\ncluster recovery rehearsal: " + ", ".join(f"{name} {value}" for name, value in figures.items()))


def _tenant_or_none(mgmt: Mgmt) -> client.ApiClient | None:
    try:
        return mgmt.tenant()
    except client.ApiException:
        return None
