"""The cloud controller's load balancers with real packets (root: network namespaces, nftables).

The VDC's edge gateway runs for real: the light world's agents hand what they are sent to an
:class:`agent.gateways.GatewayManager` on a "host" namespace (what the agent's service calls;
``tests/gateway`` proves that path), which holds the zone's external bridge and the VDC network's VNet
bridge. On the external bridge, a client namespace at the external network's router address (the
uplink's side, as the internet is in ``tests/gateway``); on the VNet bridge, a "node" namespace with the
worker VM's address, its kube-proxy played by a listener on the Service's NodePort. The controller is
given the Service; the client connects to the address the controller gave it, and after the Service is
deleted connects no more. Everything made is removed afterwards, also when a test fails.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.gateways import GatewayManager
from agent.gateways.net import NS_PREFIX
from agentclient import AgentTarget
from agentclient.gateways import GatewaySpec, GatewayState
from providers.cloud.controller import CloudController
from providers.cloud.tenant import TenantCluster
from tests.gateway.topology import INTERNET, ask, echo_server, sh, source_address, unanswered
from tests.gatewaykit import NO_EXTERNAL, UPDATE_ZONE, ZONE, external_settings
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.providers.cloud.conftest import Worker, delete_service, ingress, load_balancer, register

EXTERNAL_BRIDGE = "fpcext"  # inside the host namespace: no other test's name
NODE_PORT = 30080
WAIT = 0.5  # how long a probe that must fail waits for an answer
NETWORKS = "{ networks { vnet cidr gateway } }"


@pytest.fixture(scope="module", autouse=True)
def _root_and_tools() -> None:
    if os.geteuid() != 0:
        pytest.fail("the cloud controller's packet tests run as root (network namespaces, nftables)")
    missing = [tool for tool in ("ip", "nft") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: make install installs nftables (iproute2 is Debian's)")


class Site:
    """The host namespace (its external and VNet bridges), the client on the external bridge and the
    node on the VNet bridge; :meth:`destroy` removes every namespace made, the gateways' included."""

    def __init__(self) -> None:
        self.rid = secrets.token_hex(3)
        self.made: list[str] = []
        self.gateway_prefixes: list[str] = []

    def ns(self, role: str) -> str:
        return f"fcc-{self.rid}-{role}"

    @property
    def host(self) -> str:
        return self.ns("host")

    @property
    def client(self) -> str:
        return self.ns("client")

    @property
    def node(self) -> str:
        return self.ns("node")

    def build(self) -> Site:
        try:
            self._namespace(self.host)
            self.bridge(EXTERNAL_BRIDGE)
            self._attach(self.client, EXTERNAL_BRIDGE, f"{INTERNET}/24", None)
        except BaseException:
            self.destroy()
            raise
        return self

    def bridge(self, name: str) -> None:
        sh("ip", "-n", self.host, "link", "add", name, "type", "bridge")
        sh("ip", "-n", self.host, "link", "set", name, "up")

    def add_node(self, vnet: str, address: str, gateway: str) -> None:
        """The worker VM: its NIC on the VNet's bridge, its default route the network's gateway (the
        edge gateway's leg)."""
        self.bridge(vnet)
        self._attach(self.node, vnet, address, gateway)

    def _namespace(self, name: str) -> None:
        sh("ip", "netns", "add", name)
        self.made.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")

    def _attach(self, ns: str, bridge: str, address: str, gateway: str | None) -> None:
        self._namespace(ns)
        outer = f"v{ns[-10:]}"[-15:]
        sh("ip", "-n", self.host, "link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "-n", self.host, "link", "set", outer, "master", bridge, "up")
        sh("ip", "-n", ns, "address", "add", address, "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        if gateway:
            sh("ip", "-n", ns, "route", "add", "default", "via", gateway)

    def destroy(self) -> None:
        listed = sh("ip", "netns", "list").stdout.split()
        gateways = [n for n in listed if any(n.startswith(NS_PREFIX + p) for p in self.gateway_prefixes)]
        for name in [*gateways, *reversed(self.made)]:
            sh("ip", "netns", "delete", name, check=False)
        self.made.clear()


class HostGateways:
    """The light world's agents as the host that runs the zone's gateways: what they are sent is applied
    by the host namespace's gateway manager."""

    def __init__(self, manager: GatewayManager) -> None:
        self.manager = manager

    def apply_gateway(self, target: AgentTarget, spec: GatewaySpec, *, timeout: float) -> GatewayState:
        return self.manager.apply(spec)

    def gateway_state(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> GatewayState | None:
        return self.manager.state(gateway_id)

    def remove_gateway(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> None:
        self.manager.remove(gateway_id)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    built = Site().build()
    try:
        yield built
    finally:
        built.destroy()


@pytest.fixture(scope="module")
def gateways(
    api: InProcessApi, light: LightWorld, site: Site, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostGateways]:
    """zone-a with an external network on the host namespace's bridge, its gateways on pve1, which runs
    them in that namespace (this module's stand-in for the conftest's gateways that run nowhere)."""
    running = HostGateways(GatewayManager("pve1", Path(tmp_path_factory.mktemp("gateways")), host=site.host))
    with pytest.MonkeyPatch.context() as patch:
        for name in ("apply_gateway", "gateway_state", "remove_gateway"):
            patch.setattr(light.agents, name, getattr(running, name))
        settings = external_settings(EXTERNAL_BRIDGE, nodes="pve1")
        answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": settings})
        assert answer.data["updateZone"]["errors"] == [], answer.body
        try:
            yield running
        finally:
            api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": NO_EXTERNAL})


@pytest.fixture(scope="module")
def worker(
    api: InProcessApi, vdc: str, site: Site, tenant: TenantCluster, vm: Callable[[str], Worker]
) -> Worker:
    """The cluster's worker: a VM of the VDC, its namespace on the VNet's bridge (each test registers its
    Node: the conftest's controller removes the test's Nodes afterwards)."""
    site.gateway_prefixes.append(vdc)
    made = vm("pkt")
    [network] = api(NETWORKS, user="admin", vdc=vdc).data["networks"]
    prefix = ipaddress.IPv4Network(network["cidr"]).prefixlen
    site.add_node(network["vnet"], f"{made.address}/{prefix}", network["gateway"])
    return made


def test_a_client_on_the_uplink_reaches_the_node_port_through_the_services_address_until_it_is_deleted(
    site: Site, worker: Worker, tenant: TenantCluster, controller: CloudController
) -> None:
    register(tenant, worker.name)
    controller.reconcile()  # the Node initialized: a ready backend
    load_balancer(tenant, "echo", (80, NODE_PORT))
    with echo_server(site.node, NODE_PORT):
        controller.reconcile()
        address = ingress(tenant, "echo")
        assert address is not None

        answer = ask(site.client, address, 80)
        # The node sees the client's own address: the gateway translates the destination only.
        assert source_address(answer) == INTERNET

        delete_service(tenant, "echo")
        controller.reconcile()

        assert unanswered(site.client, address, 80, timeout=WAIT)


def test_source_ranges_let_in_only_the_clients_they_name(
    site: Site, worker: Worker, tenant: TenantCluster, controller: CloudController
) -> None:
    register(tenant, worker.name)
    controller.reconcile()
    load_balancer(tenant, "ranged", (8080, NODE_PORT), loadBalancerSourceRanges=["198.51.100.0/24"])
    with echo_server(site.node, NODE_PORT):
        controller.reconcile()
        address = ingress(tenant, "ranged")
        assert address is not None

        assert unanswered(site.client, address, 8080, timeout=WAIT)

        tenant.core.patch_namespaced_service(
            "ranged", "default", {"spec": {"loadBalancerSourceRanges": ["198.51.100.0/24", f"{INTERNET}/32"]}}
        )
        controller.reconcile()

        assert source_address(ask(site.client, address, 8080)) == INTERNET
