"""The cloud controller of a tenant cluster, through flex.plane's API as its VDC's service account: Nodes
initialized from their VMs and removed with them, Services of type LoadBalancer given a public address of
the VDC's edge gateway with forwards to their NodePorts and their source ranges as firewall rules, within
the VDC's publicIps quota, and everything given back when the Service goes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agentclient import AgentTarget, AgentUnavailable
from agentclient.gateways import GatewaySpec, GatewayState
from apiclient import FlexPlane
from providers.cloud.balancers import QUOTA_REASON
from providers.cloud.controller import CloudController
from providers.cloud.model import owner
from providers.cloud.tenant import TenantCluster
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.providers.cloud.conftest import (
    CLUSTER,
    Worker,
    delete_service,
    ingress,
    load_balancer,
    node_of,
    register,
)

GATEWAY = """query { edgeGateways { zone publicIps { address portForwards { protocol port toAddress toPort } }
  firewallRules { action protocol source destination portFrom portTo description } } }"""
SMBIOS = "query($id: ID!) { virtualMachine(id: $id) { smbiosUuid } }"


@dataclass(frozen=True)
class Cloud:
    """Both sides a test acts on and looks at: flex.plane's API (as admin, in the cluster's VDC), the tenant
    cluster, the controller and the VDC's VMs; one fixture, so each test names what it does rather than the
    five fixtures it needs."""

    api: InProcessApi
    vdc: str
    tenant: TenantCluster
    controller: CloudController
    vm: Callable[[str], Worker]

    def initialized(self, name: str) -> Worker:
        """A VM whose Node has registered and been through a pass of the controller."""
        worker = self.vm(name)
        register(self.tenant, worker.name)
        self.controller.reconcile()
        return worker

    def addressed(self, name: str, *ports: tuple[int, int], **spec: Any) -> str:
        """A Service of type LoadBalancer after a pass: the public address its ingress was given."""
        load_balancer(self.tenant, name, *ports, **spec)
        self.controller.reconcile()
        address = ingress(self.tenant, name)
        assert address is not None
        return address

    def gateway(self) -> dict[str, Any]:
        [found] = self.api(GATEWAY, user="admin", vdc=self.vdc).data["edgeGateways"]
        return dict(found)

    def public_ips(self) -> list[str]:
        return [ip["address"] for ip in self.gateway()["publicIps"]]

    def forwards_of(self, address: str) -> set[tuple[str, int, str, int]]:
        ips = {ip["address"]: ip for ip in self.gateway()["publicIps"]}
        if address not in ips:
            return set()
        return {(f["protocol"], f["port"], f["toAddress"], f["toPort"]) for f in ips[address]["portForwards"]}

    def rules_of(self, name: str) -> list[tuple[str, str, str, str, int | None]]:
        wanted = owner(CLUSTER, "default", name)
        return [
            (r["action"], r["protocol"], r["source"], r["destination"], r["portFrom"])
            for r in self.gateway()["firewallRules"]
            if r["description"] == wanted
        ]


@pytest.fixture
def cloud(
    api: InProcessApi,
    vdc: str,
    tenant: TenantCluster,
    controller: CloudController,
    vm: Callable[[str], Worker],
) -> Cloud:
    return Cloud(api, vdc, tenant, controller, vm)


def events_of(tenant: TenantCluster, name: str) -> list[Any]:
    """The Events of ``default`` about the object named ``name``."""
    return [e for e in tenant.core.list_namespaced_event("default").items if e.involved_object.name == name]


def test_a_node_gets_its_vms_provider_id_addresses_and_labels_and_loses_the_taint(cloud: Cloud) -> None:
    tenant = cloud.tenant
    worker = cloud.vm("init")
    register(tenant, worker.name)
    tenant.core.patch_node(
        worker.name,
        {
            "spec": {
                "taints": [
                    {
                        "key": "node.cloudprovider.kubernetes.io/uninitialized",
                        "value": "true",
                        "effect": "NoSchedule",
                    },
                    {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
                ]
            }
        },
        _content_type="application/merge-patch+json",
    )

    cloud.controller.reconcile()

    node = node_of(tenant, worker.name)
    assert node is not None
    uuid = cloud.api(SMBIOS, user="admin", vdc=cloud.vdc, variables={"id": worker.id}).data["virtualMachine"][
        "smbiosUuid"
    ]
    assert uuid
    assert node["spec"]["providerID"] == f"proxmox://{uuid}"
    assert node["spec"]["taints"] == [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    assert node["status"]["addresses"] == [
        {"type": "InternalIP", "address": worker.address},
        {"type": "Hostname", "address": worker.name},
    ]
    host = cloud.api(
        "query($id: ID!) { virtualMachine(id: $id) { host } }",
        user="admin",
        vdc=cloud.vdc,
        variables={"id": worker.id},
    )
    assert node["metadata"]["labels"] == {
        "topology.kubernetes.io/region": "zone-a",
        "topology.kubernetes.io/zone": host.data["virtualMachine"]["host"],
        "node.kubernetes.io/instance-type": "small",
    }
    # A second pass finds nothing to change.
    version = node["metadata"]["resourceVersion"]
    cloud.controller.reconcile()
    assert node_of(tenant, worker.name)["metadata"]["resourceVersion"] == version  # type: ignore[index]


def test_the_node_of_a_vm_that_is_gone_is_removed(cloud: Cloud) -> None:
    kept = cloud.initialized("kept")
    gone = cloud.initialized("gone")
    deleted = cloud.api(
        "mutation($id: ID!) { deleteVirtualMachine(id: $id) { errors { code message } } }",
        user="admin",
        vdc=cloud.vdc,
        variables={"id": gone.id},
    )
    assert deleted.data["deleteVirtualMachine"]["errors"] == [], deleted.body

    cloud.controller.reconcile()

    assert node_of(cloud.tenant, gone.name) is None
    assert node_of(cloud.tenant, kept.name) is not None


def test_a_load_balancer_gets_a_public_address_forwarded_to_its_node_ports_and_its_ingress_set(
    cloud: Cloud,
) -> None:
    worker = cloud.initialized("lb")

    address = cloud.addressed("shop", (80, 30080), (443, 30443))

    assert cloud.forwards_of(address) == {
        ("tcp", 80, worker.address, 30080),
        ("tcp", 443, worker.address, 30443),
    }
    assert cloud.rules_of("shop") == [
        ("allow", "tcp", "0.0.0.0/0", f"{address}/32", 80),
        ("allow", "tcp", "0.0.0.0/0", f"{address}/32", 443),
    ]
    # Level-based: another pass allocates nothing more and changes nothing.
    before = cloud.gateway()
    cloud.controller.reconcile()
    assert cloud.gateway() == before


def test_deleting_the_service_releases_its_address_forwards_and_rules(cloud: Cloud) -> None:
    cloud.initialized("del")
    address = cloud.addressed("gone", (80, 30081))

    delete_service(cloud.tenant, "gone")
    cloud.controller.reconcile()

    assert address not in cloud.public_ips()
    assert cloud.rules_of("gone") == []


def test_source_ranges_become_gateway_firewall_rules_and_follow_the_service(cloud: Cloud) -> None:
    cloud.initialized("fw")
    address = cloud.addressed("admin", (22, 30022), loadBalancerSourceRanges=["198.51.100.0/24"])

    assert cloud.rules_of("admin") == [
        ("allow", "tcp", "198.51.100.0/24", f"{address}/32", 22),
        ("deny", "any", "0.0.0.0/0", f"{address}/32", None),
    ]

    cloud.tenant.core.patch_namespaced_service(
        "admin", "default", {"spec": {"loadBalancerSourceRanges": ["192.0.2.0/28", "198.51.100.0/24"]}}
    )
    cloud.controller.reconcile()

    assert ingress(cloud.tenant, "admin") == address
    assert cloud.rules_of("admin") == [
        ("allow", "tcp", "192.0.2.0/28", f"{address}/32", 22),
        ("allow", "tcp", "198.51.100.0/24", f"{address}/32", 22),
        ("deny", "any", "0.0.0.0/0", f"{address}/32", None),
    ]


def test_a_service_beyond_the_public_ips_quota_gets_an_event_and_its_address_once_one_is_free(
    cloud: Cloud,
) -> None:
    tenant = cloud.tenant
    cloud.initialized("quota")
    for name, node_port in (("one", 30101), ("two", 30102), ("three", 30103)):
        load_balancer(tenant, name, (80, node_port))

    cloud.controller.reconcile()

    addressed = {name: ingress(tenant, name) for name in ("one", "three", "two")}
    # The passes take Services by name: one and three get the two addresses the quota leaves.
    assert addressed["one"] is not None
    assert addressed["three"] is not None
    assert addressed["two"] is None
    [event] = events_of(tenant, "two")
    assert (event.type, event.reason) == ("Warning", QUOTA_REASON)
    assert "publicIps" in (event.message or "")
    cloud.controller.reconcile()
    [again] = events_of(tenant, "two")
    assert again.count == 2  # the same Event counted again, not another one

    delete_service(tenant, "one")
    cloud.controller.reconcile()

    assert ingress(tenant, "two") is not None


def test_the_forwards_follow_the_ready_nodes(cloud: Cloud) -> None:
    first = cloud.initialized("r1")
    address = cloud.addressed("moving", (80, 30090))
    assert cloud.forwards_of(address) == {("tcp", 80, first.address, 30090)}

    second = cloud.initialized("r2")
    cloud.tenant.patch_node_status(
        first.name, {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    )
    cloud.controller.reconcile()

    assert cloud.forwards_of(address) == {("tcp", 80, second.address, 30090)}


def test_the_running_controller_acts_on_a_watch_event_and_says_it_is_ready(
    tenant: TenantCluster, controller: CloudController, flexplane: FlexPlane, vm: Callable[[str], Worker]
) -> None:
    from providers.cloud.__main__ import Health

    health = Health(controller)
    assert health.ready() is not None
    controller.interval = 60.0  # only a watch event wakes it within the test
    controller.start()
    deadline = time.monotonic() + 20
    while controller.passes == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert health.live() is None

    worker = vm("watched")
    register(tenant, worker.name)
    while time.monotonic() < deadline:
        node = node_of(tenant, worker.name)
        if node and node["spec"].get("providerID"):
            break
        time.sleep(0.1)

    assert node_of(tenant, worker.name)["spec"]["providerID"].startswith("proxmox://")  # type: ignore[index]
    assert health.ready() is None


def test_a_service_gets_its_address_while_the_gateways_host_does_not_answer(
    cloud: Cloud, light: LightWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API answers UNAVAILABLE but records the change (the gateway reconciler sends it on): the
    address it took is found and marked, not taken again each pass nor lost."""
    worker = cloud.initialized("down")

    def down(target: AgentTarget, spec: GatewaySpec, *, timeout: float) -> GatewayState:
        raise AgentUnavailable(target, "the host is down")

    monkeypatch.setattr(light.agents, "apply_gateway", down)
    load_balancer(cloud.tenant, "offline", (80, 30070))

    cloud.controller.reconcile()
    cloud.controller.reconcile()

    address = ingress(cloud.tenant, "offline")
    assert address is not None
    assert cloud.public_ips() == [address]
    assert cloud.forwards_of(address) == {("tcp", 80, worker.address, 30070)}
    assert cloud.rules_of("offline") == [("allow", "tcp", "0.0.0.0/0", f"{address}/32", 80)]


def test_a_service_that_is_no_longer_a_load_balancer_gives_its_address_back(cloud: Cloud) -> None:
    cloud.initialized("type")
    address = cloud.addressed("changing", (80, 30060))

    cloud.tenant.core.patch_namespaced_service("changing", "default", {"spec": {"type": "NodePort"}})
    cloud.controller.reconcile()

    assert address not in cloud.public_ips()
    assert cloud.rules_of("changing") == []
    assert ingress(cloud.tenant, "changing") is None
