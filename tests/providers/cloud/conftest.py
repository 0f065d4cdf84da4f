"""The cloud controller against its two stand-ins: a tenant cluster's API server (the devstack's Kubernetes
emulator on loopback, as ``devstack/hosted_control_plane.py`` serves one per hosted control plane) and
flex.plane's API in this process on the light world (``tests/orchestrator/api/light``), reached through
``apiclient`` over ``httpx.WSGITransport`` as a service account of a scratch VDC: USER there, its token
minted with the roles Zitadel holds for it (as ``tests/orchestrator/api/light/test_service_accounts.py``).

zone-a has an external network for the module, and the light world's agents run the gateways they are
sent (``tests/portal/light/conftest.RunningGateways``: applied at once, no packets; the packets are
``test_cloud_packets.py``'s). A test's Nodes and Services go afterwards; the VDC's VMs, gateway and VDC at
the module's end.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler
from kubernetes import client

from apiclient import FlexPlane
from devstack.kube import KubeServer
from providers.cloud.controller import CloudController
from providers.cloud.model import UNINITIALIZED_TAINT
from providers.cloud.tenant import TenantCluster
from providers.cloud.vdc import Vdc
from tests.apiclient.conftest import ORIGIN
from tests.gatewaykit import NO_EXTERNAL, UPDATE_ZONE, ZONE, external_settings
from tests.orchestrator.api.light.conftest import api, issuer, kube, light, tenant_clusters, zitadel
from tests.orchestrator.api.light.test_service_accounts import machine_token
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.portal.light.conftest import RELEASE, RunningGateways
from tests.vmkit import create, payload, scratch_vdcs

__all__ = ["api", "issuer", "kube", "light", "tenant_clusters", "zitadel"]

CLUSTER = "web"
# The scratch VDC's publicIps: its gateway's uplink address and two for Services.
PUBLIC_IPS = 3
CREATE_ACCOUNT = (
    "mutation($v: ID!, $n: String!, $e: DateTime!) { createServiceAccount(vdc: $v, name: $n, expiresAt: $e) "
    "{ serviceAccount { id } errors { field code message } } }"
)
REVOKE_ACCOUNT = "mutation($id: ID!) { revokeServiceAccount(id: $id) { errors { code } } }"
DELETE_GATEWAY = "mutation($zone: String) { deleteEdgeGateway(zone: $zone) { errors { code } } }"


@pytest.fixture(scope="module")
def gateways(api: InProcessApi, light: LightWorld) -> Iterator[RunningGateways]:
    """zone-a with an external network, its nodes' agents applying the gateways they are sent."""
    running = RunningGateways(light)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("apply_gateway", "gateway_state", "remove_gateway"):
            patch.setattr(light.agents, name, getattr(running, name))
        # The bridge's name is only stored: the light world's nodes make none.
        answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": external_settings("fpcloud")})
        assert answer.data["updateZone"]["errors"] == [], answer.body
        try:
            yield running
        finally:
            api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": NO_EXTERNAL})


@pytest.fixture(scope="module")
def vdc(api: InProcessApi, light: LightWorld, gateways: RunningGateways) -> Iterator[str]:
    """The cluster's VDC, of zone-a, with room for two Services' addresses; its gateway goes with it."""
    with scratch_vdcs(api, light) as make:
        ident = make(publicIps=PUBLIC_IPS)
        try:
            yield ident
        finally:
            for ip in api("{ publicIps { address } }", user="admin", vdc=ident).data["publicIps"] or []:
                api(RELEASE, user="admin", vdc=ident, variables={"a": ip["address"]})
            api(DELETE_GATEWAY, user="admin", vdc=ident, variables={"zone": ZONE})


@pytest.fixture(scope="module")
def account_token(api: InProcessApi, zitadel: FakeZitadel, vdc: str) -> Iterator[str]:
    """The token of the cluster's service account (USER of its VDC only), revoked afterwards."""
    expires = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    made = payload(
        api(CREATE_ACCOUNT, user="admin", variables={"v": vdc, "n": f"cloud-{CLUSTER}", "e": expires}),
        "createServiceAccount",
    )
    assert made["errors"] == [], made["errors"]
    ident = made["serviceAccount"]["id"]
    yield machine_token(api, zitadel, ident)
    api(REVOKE_ACCOUNT, user="admin", variables={"id": ident})


@pytest.fixture(scope="module")
def flexplane(account_token: str, vdc: str) -> Iterator[FlexPlane]:
    """flex.plane's API as the service account, in its VDC, through the WSGI application in this process."""
    with FlexPlane(
        ORIGIN, account_token, vdc=vdc, transport=httpx.WSGITransport(app=WSGIHandler())
    ) as api_client:
        yield api_client


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    """The tenant cluster's API server."""
    with KubeServer.start() as running:
        yield running


@pytest.fixture(scope="module")
def tenant(server: KubeServer) -> Iterator[TenantCluster]:
    configuration = client.Configuration()
    configuration.host = server.url
    api_client = client.ApiClient(configuration)
    yield TenantCluster(api_client)
    api_client.close()


@pytest.fixture
def controller(tenant: TenantCluster, flexplane: FlexPlane) -> Iterator[CloudController]:
    """The controller of cluster ``web``; the test's Nodes, Services and Events are removed afterwards
    (the Services' addresses by a last pass, as the controller gives them back)."""
    made = CloudController(tenant, Vdc(flexplane), CLUSTER, interval=0.5)
    yield made
    made.shutdown()
    for service in tenant.services():
        delete_service(tenant, service["metadata"]["name"])
    made.reconcile()
    for node in tenant.nodes():
        tenant.delete_node(node["metadata"]["name"])
    tenant.core.delete_collection_namespaced_event("default")


@dataclass(frozen=True)
class Worker:
    """A VM of the VDC and its Node in the tenant cluster."""

    id: str
    name: str
    address: str


@pytest.fixture(scope="module")
def vm(api: InProcessApi, vdc: str) -> Callable[[str], Worker]:
    """``vm("w1")``: a VM of the VDC made through the API (its NIC on the VDC's default network)."""
    prefix = f"{vdc}-"

    def make(name: str) -> Worker:
        made = payload_of(create(api, "admin", vdc, name=prefix + name))
        ident = made["virtualMachine"]["id"]
        nics = api(
            "query($id: ID!) { virtualMachine(id: $id) { nics { ipAddress } } }",
            user="admin",
            vdc=vdc,
            variables={"id": ident},
        )
        return Worker(ident, prefix + name, nics.data["virtualMachine"]["nics"][0]["ipAddress"])

    return make


def payload_of(made: dict[str, Any]) -> dict[str, Any]:
    assert made["errors"] == [], made["errors"]
    return made


def register(tenant: TenantCluster, name: str, *, ready: bool = True) -> None:
    """A Node as a kubelet with ``--cloud-provider=external`` registers it: tainted uninitialized, with no
    provider ID (as a kubelet not told one) and no addresses, and its Ready condition."""
    body: Any = {  # the client takes the API's JSON as well as its models
        "metadata": {"name": name},
        "spec": {"taints": [{"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }
    tenant.core.create_node(body)


def node_of(tenant: TenantCluster, name: str) -> dict[str, Any] | None:
    return next((n for n in tenant.nodes() if n["metadata"]["name"] == name), None)


def delete_service(tenant: TenantCluster, name: str) -> None:
    """Delete a Service of ``default`` (the answer not decoded: the emulator answers a Status, which the
    client would read as a Service)."""
    tenant.core.delete_namespaced_service(name, "default", _preload_content=False)


def load_balancer(tenant: TenantCluster, name: str, *ports: tuple[int, int], **spec: Any) -> None:
    body: Any = {  # the client takes the API's JSON as well as its models
        "metadata": {"name": name},
        "spec": {
            "type": "LoadBalancer",
            "ports": [{"name": f"p{p}", "port": p, "nodePort": n, "protocol": "TCP"} for p, n in ports],
            **spec,
        },
    }
    tenant.core.create_namespaced_service("default", body)


def service(tenant: TenantCluster, name: str) -> dict[str, Any]:
    return next(s for s in tenant.services() if s["metadata"]["name"] == name)


def ingress(tenant: TenantCluster, name: str) -> str | None:
    found = (service(tenant, name).get("status") or {}).get("loadBalancer", {}).get("ingress") or []
    return found[0]["ip"] if found else None
