"""The control-plane provider as it runs: its kopf operator against the devstack's Kubernetes emulator.

The operator is the providers' own (``providers.common.operator.run``, the entry point's), with this
provider's registry only. The test plays the other controllers: Cluster API core (the Cluster and
its ownerReference), the LoadBalancer (an address on the Service), the Deployment controller (its
status) and the tenant's API server (an emulator over TLS with the generated serving certificate).
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Iterator
from typing import Any

import kmock
import pytest
from kubernetes import client

from devstack.kube import KubeServer
from orchestrator.sources.kube_objects import CLUSTER
from providers.common import kube as common_kube
from providers.common.objects import owner_reference_to
from providers.common.operator import run
from providers.controlplane import handlers, model, steps
from providers.controlplane.kube import Kube
from tests import addresses
from tests.apikit import eventually
from tests.providers.controlplane.test_steps import written

VDC_NS = "vdc-demo"
CP_NS = "fpcp-demo-api"
LB_ADDRESS = f"127.{addresses.WORLD}.205.2"
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def operator(server: KubeServer) -> Iterator[None]:
    configuration = client.Configuration()
    configuration.host = server.url
    stop, ready = threading.Event(), threading.Event()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(steps, "RETRY_DELAY", 0.2)
        patch.setattr(handlers, "CONVERGING_DELAY", 0.2)
        # The process's client, as the entry point configures it; put back as it was afterwards.
        patch.setattr(common_kube, "_kube", common_kube.Kube.from_configuration(configuration))
        thread = threading.Thread(
            target=lambda: asyncio.run(run([handlers.PROVIDER], configuration, stop, ready)), daemon=True
        )
        thread.start()
        assert ready.wait(TIMEOUT), "the operator did not start"
        yield
        stop.set()
        thread.join(TIMEOUT)


def world(kube: Kube) -> None:
    """What Cluster API core and the tenant API (issue 16) write: the Cluster and what it refers to."""
    made = written("api")
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VDC_NS}})
    kube.ensure(made["ProxmoxCluster"])
    cluster = kube.ensure(made["Cluster"])
    made["FlexControlPlane"]["metadata"]["ownerReferences"] = [owner_reference_to(cluster, CLUSTER)]
    kube.ensure(made["FlexControlPlane"])


def fcp(kube: Kube) -> dict[str, Any] | None:
    return kube.get(steps.FCP_API, "FlexControlPlane", "api", VDC_NS)


def test_the_provider_brings_a_control_plane_up_and_takes_it_down(
    server: KubeServer, kube: Kube, operator: None
) -> None:
    world(kube)
    eventually(lambda: kube.get("v1", "Service", "kube-apiserver", CP_NS), TIMEOUT, "the Service")
    ingress = {"loadBalancer": {"ingress": [{"ip": LB_ADDRESS}]}}
    kube.patch("v1", "Service", "kube-apiserver", CP_NS, {"status": ingress}, subresource="status")
    deployment: dict[str, Any] = eventually(
        lambda: kube.get("apps/v1", "Deployment", model.DEPLOYMENT, CP_NS) or {}, TIMEOUT, "the Deployment"
    )
    current = fcp(kube)
    assert current is not None
    assert steps.FINALIZER in current["metadata"]["finalizers"]
    pki = kube.get("v1", "Secret", "pki", CP_NS)
    assert pki is not None
    tls = (base64.b64decode(pki["data"]["apiserver.crt"]), base64.b64decode(pki["data"]["apiserver.key"]))
    with KubeServer.start(LB_ADDRESS, 6443, tls=tls) as tenant:
        rolled = {"observedGeneration": deployment["metadata"]["generation"], "replicas": 2}
        rolled |= {"updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}
        kube.patch("apps/v1", "Deployment", model.DEPLOYMENT, CP_NS, {"status": rolled}, subresource="status")

        def available() -> bool:
            status = (fcp(kube) or {}).get("status") or {}
            return bool(status.get("initialization", {}).get("controlPlaneInitialized")) and any(
                c["type"] == "Available" and c["status"] == "True" for c in status.get("conditions", [])
            )

        eventually(available, TIMEOUT, lambda: f"Available (status: {(fcp(kube) or {}).get('status')})")
        configmaps = kmock.resource("", "v1", "configmaps")
        assert tenant.emulator.objects[configmaps, "kube-public", "cluster-info"] is not None
    infra = kube.get(steps.PROXMOX_CLUSTER_API, "ProxmoxCluster", "api", VDC_NS) or {}
    assert infra["spec"]["controlPlaneEndpoint"] == {"host": LB_ADDRESS, "port": 6443}

    kube.delete(steps.FCP_API, "FlexControlPlane", "api", VDC_NS)
    eventually(lambda: fcp(kube) is None, TIMEOUT, "the FlexControlPlane's deletion")
    assert kube.get("v1", "Namespace", CP_NS) is None
    assert kube.get("v1", "Secret", "api-kubeconfig", VDC_NS) is None
    assert kube.get("v1", "Secret", "api-ca", VDC_NS) is None
