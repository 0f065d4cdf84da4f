"""An upgrade's workers follow the control plane: the pending upgrade of a pool, applied only once the
control plane runs its version; the pure patch, then the provider's step against the emulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from orchestrator.services.clusters import objects
from orchestrator.sources.kube_objects import (
    FLEX_CONTROL_PLANE,
    KUBEADM_CONFIG_TEMPLATE,
    MACHINE_DEPLOYMENT,
    PROXMOX_MACHINE_TEMPLATE,
    WORKERS_PENDING_ANNOTATION,
)
from orchestrator.sources.kube_objects import PENDING_UPGRADE_ANNOTATION as PENDING_ANNOTATION
from providers.common.crds import load_crds
from providers.controlplane import workers
from providers.controlplane.kube import Kube, KubeError, resource_path
from providers.controlplane.workers import PendingUpgrade

NS = "vdc-demo"
MDS = resource_path(MACHINE_DEPLOYMENT, namespace=NS)
FCPS = resource_path(FLEX_CONTROL_PLANE, namespace=NS)
NEW_INFRA = objects.ref(PROXMOX_MACHINE_TEMPLATE, "web-w-new")
BOOTSTRAP = objects.ref(KUBEADM_CONFIG_TEMPLATE, "web-w-b")
PENDING = PendingUpgrade("v1.35.0", NEW_INFRA, BOOTSTRAP).encode()


def deployment(pool: str, annotations: dict[str, str] | None = None, cluster: str = "web") -> dict[str, Any]:
    """The MachineDeployment ``<cluster>-<pool>`` of one worker, as the tenant API writes it."""
    plan = objects.PoolPlan(pool, "small", "standard", 1, 20, 1, 1024)
    body = objects.machine_deployment("demo", cluster, plan, "v1.34.2", "web-w-old", "web-w-a")
    body["metadata"] |= {"namespace": NS, "resourceVersion": "7", "annotations": annotations or {}}
    return body


# ------------------------------------------------------------------------------------ pure


def test_a_pending_upgrade_waits_while_the_control_plane_runs_an_older_version() -> None:
    assert workers.worker_patch(deployment("a", {PENDING_ANNOTATION: PENDING}), "v1.34.2") is None


def test_a_pending_upgrade_is_applied_once_the_control_plane_runs_its_version() -> None:
    patch = workers.worker_patch(deployment("a", {PENDING_ANNOTATION: PENDING}), "v1.35.0")

    assert patch == {
        "metadata": {"annotations": {PENDING_ANNOTATION: None}, "resourceVersion": "7"},
        "spec": {
            "template": {
                "spec": {
                    "version": "v1.35.0",
                    "infrastructureRef": NEW_INFRA,
                    "bootstrap": {"configRef": BOOTSTRAP},
                }
            }
        },
    }


def test_a_pool_without_a_pending_upgrade_is_left_alone() -> None:
    assert workers.worker_patch(deployment("a"), "v1.35.0") is None


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        json.dumps({"version": "latest", "infrastructureRef": NEW_INFRA}),
        json.dumps({"version": "v1.35.0"}),
        json.dumps({"version": "v1.35.0", "infrastructureRef": {"name": "x"}}),
        json.dumps({"version": "v1.35.0", "infrastructureRef": NEW_INFRA, "bootstrapConfigRef": "x"}),
    ],
)
def test_a_malformed_pending_upgrade_is_removed_and_never_applied(value: str) -> None:
    patch = workers.worker_patch(deployment("a", {PENDING_ANNOTATION: value}), "v9.0.0")

    assert patch == {"metadata": {"annotations": {PENDING_ANNOTATION: None}, "resourceVersion": "7"}}


def test_an_upgrade_keeps_the_bootstrap_template_when_it_names_none() -> None:
    value = PendingUpgrade("v1.35.0", NEW_INFRA).encode()
    patch = workers.worker_patch(deployment("a", {PENDING_ANNOTATION: value}), "v1.35.0") or {}

    assert "bootstrap" not in patch["spec"]["template"]["spec"]
    assert workers.parse(value) == PendingUpgrade("v1.35.0", NEW_INFRA)


# ------------------------------------------------------------------------------------ on the emulator


@pytest.fixture(scope="module")
def kube() -> Iterator[Kube]:
    with KubeServer.start() as server:
        server.install_crds([*CLUSTER_API_CORE_CRDS, *load_crds()])
        configuration = client.Configuration()
        configuration.host = server.url
        api_client = client.ApiClient(configuration)
        kube = Kube(api_client)
        kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        yield kube
        api_client.close()


def create(kube: Kube, path: str, body: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(json.dumps(body))
    body["metadata"].pop("resourceVersion", None)
    made = kube.request("POST", path, body)
    assert made is not None
    return made


def control_plane(kube: Kube, name: str, flag: str | None) -> dict[str, Any]:
    annotations = {WORKERS_PENDING_ANNOTATION: flag} if flag else {}
    body = objects.control_plane(objects.ClusterPlan("demo", name, "v1.35.0", "debian-12", "net-1", 2, ()))
    body["metadata"] |= {"namespace": NS, "annotations": annotations}
    return create(kube, FCPS, body)


def read(kube: Kube, path: str) -> dict[str, Any]:
    found = kube.request("GET", path)
    assert found is not None
    return found


def test_the_pools_move_only_once_the_rollout_is_complete_and_the_flag_goes_with_the_last(kube: Kube) -> None:
    create(kube, MDS, deployment("w", {PENDING_ANNOTATION: PENDING}))
    create(kube, MDS, deployment("x"))
    create(kube, MDS, deployment("w", {PENDING_ANNOTATION: PENDING}, cluster="other"))
    fcp = control_plane(kube, "web", "v1.35.0")

    assert workers.apply_pending(kube, fcp, "web", rolled_out=False) == 0
    assert read(kube, f"{MDS}/web-w")["spec"]["template"]["spec"]["version"] == "v1.34.2"

    assert workers.apply_pending(kube, fcp, "web", rolled_out=True) == 1
    moved = read(kube, f"{MDS}/web-w")
    assert moved["spec"]["template"]["spec"]["version"] == "v1.35.0"
    assert moved["spec"]["template"]["spec"]["infrastructureRef"] == NEW_INFRA
    assert PENDING_ANNOTATION not in (moved["metadata"].get("annotations") or {})
    assert read(kube, f"{MDS}/web-x")["spec"]["template"]["spec"]["version"] == "v1.34.2"
    assert (
        read(kube, f"{MDS}/other-w")["spec"]["template"]["spec"]["version"] == "v1.34.2"
    )  # another cluster's
    assert WORKERS_PENDING_ANNOTATION not in (read(kube, f"{FCPS}/web")["metadata"].get("annotations") or {})

    again = read(kube, f"{FCPS}/web")
    assert workers.apply_pending(kube, again, "web", rolled_out=True) == 0  # no flag: nothing read or written


def test_a_newer_pending_upgrade_keeps_the_flag_and_waits(kube: Kube) -> None:
    newer = PendingUpgrade("v1.36.0", NEW_INFRA).encode()
    create(kube, MDS, deployment("w", {PENDING_ANNOTATION: newer}, cluster="late"))
    fcp = control_plane(kube, "late", "v1.36.0")

    assert workers.apply_pending(kube, fcp, "late", rolled_out=True) == 0  # runs v1.35.0, not v1.36.0
    assert read(kube, f"{MDS}/late-w")["metadata"]["annotations"][PENDING_ANNOTATION] == newer
    assert read(kube, f"{FCPS}/late")["metadata"]["annotations"][WORKERS_PENDING_ANNOTATION] == "v1.36.0"


def test_a_pool_changed_since_it_was_read_is_not_overwritten(kube: Kube) -> None:
    create(kube, MDS, deployment("w", {PENDING_ANNOTATION: PENDING}, cluster="race"))
    stale = read(kube, f"{MDS}/race-w")
    kube.request(
        "PATCH",
        f"{MDS}/race-w",
        {"metadata": {"annotations": {"touched": "yes"}}},
        content_type=workers.MERGE_PATCH,
    )
    patch = workers.worker_patch(stale, "v1.35.0")
    assert patch is not None
    with pytest.raises(KubeError) as refused:
        kube.request("PATCH", f"{MDS}/race-w", patch, content_type=workers.MERGE_PATCH)
    assert refused.value.status == 409


class Forbidden(Kube):
    """The management cluster as a provider without ``machinedeployments`` patch sees it."""

    def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> dict[str, Any] | None:
        if method == "PATCH" and "/machinedeployments/" in path:
            raise KubeError(403, method, path, "forbidden")
        return super().request(method, path, body, **kwargs)


def test_a_refused_patch_never_stops_the_control_planes_reconcile(kube: Kube) -> None:
    create(kube, MDS, deployment("w", {PENDING_ANNOTATION: PENDING}, cluster="denied"))
    fcp = control_plane(kube, "denied", "v1.35.0")

    assert workers.apply_pending(Forbidden(kube.api), fcp, "denied", rolled_out=True) == 0
    assert read(kube, f"{MDS}/denied-w")["metadata"]["annotations"][PENDING_ANNOTATION] == PENDING
    assert read(kube, f"{FCPS}/denied")["metadata"]["annotations"][WORKERS_PENDING_ANNOTATION] == "v1.35.0"
