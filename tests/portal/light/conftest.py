"""The portal's pages from this process, served over HTTP on loopback (``tests/portal/served.py``) on the
light world (``tests/orchestrator/lightworld.py``), with Zitadel in memory
(``tests/orchestrator/fakezitadel.py``): alice (VDC demo), bob (VDC other), olivia (owner of organization
acme) and admin signed in as the portal's login records them. A module's tests share one light world, as a
session's share the devstack's. What some tests need made first: organization acme's allowance (``acme``),
bob a member of demo (``bob_in_demo``), demo's edge gateway with a rule and a port forward (``gateway``).
These fixtures serve the browser tests on this portal too (``tests/browser/light/conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from agentclient import AgentTarget
from agentclient.gateways import GatewaySpec, GatewayState
from orchestrator.models.clusters import namespace_of
from orchestrator.services.clusters import objects
from tests.gatewaykit import NO_EXTERNAL, UPDATE_ZONE, ZONE, external_settings
from tests.orchestrator.api.light.test_organizations import (
    ALLOWANCE,
    DELETE,
    DELETE_ALLOWANCE,
    ORGANIZATIONS,
    payload,
    user,
)
from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer, in_process
from tests.orchestrator.lightworld import LightWorld
from tests.orchestrator.sources.test_zitadel import restore_seeded_organization
from tests.portal.light.test_cluster_pages import cleaned, made_ready
from tests.portal.served import LightPortal, served
from tests.vmkit import create, vm_names


@pytest.fixture(scope="module")
def zitadel() -> FakeZitadel:
    """Zitadel as the devstack's identity provider is seeded: its users, organizations and their roles."""
    return FakeZitadel.seeded()


@pytest.fixture(scope="module")
def issuer(zitadel: FakeZitadel) -> Iterator[LocalIssuer]:
    """Tokens with the roles ``zitadel`` holds when each is minted."""
    running = LocalIssuer(roles=zitadel)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def tenant_clusters() -> FakeClusterApi:
    return FakeClusterApi()


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightWorld]:
    with LightWorld(tmp_path_factory.mktemp("light")) as running:
        yield running


@pytest.fixture(scope="module")
def api(
    issuer: LocalIssuer, light: LightWorld, tenant_clusters: FakeClusterApi, zitadel: FakeZitadel
) -> Iterator[InProcessApi]:
    with in_process(issuer, light.kube, light.proxmox, tenant_clusters, zitadel) as running:
        yield running


@pytest.fixture(scope="module")
def site(api: InProcessApi, light: LightWorld) -> Iterator[LightPortal]:
    with served(light) as portal:
        yield portal


@pytest.fixture(scope="module")
def alice(site: LightPortal) -> requests.Session:
    return site.session("alice")


@pytest.fixture(scope="module")
def bob(site: LightPortal) -> requests.Session:
    return site.session("bob")


@pytest.fixture(scope="module")
def admin(site: LightPortal) -> requests.Session:
    return site.session("admin")


@pytest.fixture(scope="module")
def olivia(site: LightPortal) -> requests.Session:
    return site.session("olivia")


# The API's calls of the fixtures below.
GRANT = "mutation($u: ID!, $v: ID!) { grantVdcMembership(user: $u, vdc: $v) { errors { code message } } }"
REVOKE = "mutation($u: ID!, $v: ID!) { revokeVdcMembership(user: $u, vdc: $v) { errors { code message } } }"
NICS = "query($id: ID!) { virtualMachine(id: $id) { nics { ipAddress } } }"
ALLOCATE = (
    "mutation($zone: String) { allocatePublicIp(zone: $zone) "
    "{ publicIp { address } errors { code message } } }"
)
FORWARD = "mutation($input: PortForwardInput!) { addPortForward(input: $input) { errors { code message } } }"
RELEASE = "mutation($a: String!) { releasePublicIp(address: $a) { errors { code } } }"
DELETE_GATEWAY = "mutation($zone: String) { deleteEdgeGateway(zone: $zone) { errors { code } } }"
ADD_RULE = (
    "mutation($input: GatewayFirewallRuleInput!, $zone: String) { "
    "addGatewayFirewallRule(input: $input, zone: $zone) { errors { code message } } }"
)

# Organization acme's allowance while a test of its pages runs: 4 vCPUs and 2 VMs in zone-a.
ACME_ALLOWANCE = {
    "zones": ["zone-a"],
    "computeProfiles": ["small"],
    "storageProfiles": ["standard"],
    "images": ["debian-12"],
    "quota": {"vcpus": 4, "memoryMib": 4096, "diskGb": 40, "vms": 2},
}


@pytest.fixture
def acme(api: InProcessApi, zitadel: FakeZitadel) -> Iterator[str]:
    """Organization acme's id, with an allowance; its VDCs and allowance removed after, and acme then as
    seeding left it (taking the allowance away takes its users' roles)."""
    org = str(user(api, "olivia")["organization"])
    given = api(ALLOWANCE, user="admin", variables={"o": org, "input": ACME_ALLOWANCE})
    assert payload(given, "setOrganizationAllowance")["errors"] == []
    yield org
    for listed in api(ORGANIZATIONS, user="admin").data["organizations"]:
        for ident in listed["vdcs"] if listed["organization"] == org else []:
            api(DELETE, user="admin", variables={"id": ident})
    api(DELETE_ALLOWANCE, user="admin", variables={"o": org})
    restore_seeded_organization(zitadel, "acme")


@pytest.fixture
def bob_in_demo(api: InProcessApi) -> Iterator[str]:
    """bob's id, a member of VDC demo for the test (and no more after it)."""
    bob = str(user(api, "bob")["id"])
    assert (
        api(GRANT, user="admin", variables={"u": bob, "v": "demo"}).data["grantVdcMembership"]["errors"] == []
    )
    yield bob
    api(REVOKE, user="admin", variables={"u": bob, "v": "demo"})


# ------------------------------------------------------------------------------------------ the gateway


class RunningGateways:
    """The light world's agents as nodes that run edge gateways: each spec sent is applied at once."""

    def __init__(self, light: LightWorld) -> None:
        self.light = light
        self.applied: dict[str, GatewaySpec] = {}

    def apply_gateway(self, target: AgentTarget, spec: GatewaySpec, *, timeout: float) -> GatewayState:
        self.applied[spec.id] = spec
        return GatewayState(spec.id, spec.generation, self.light.agents.nodes[target.identity][1], True)

    def gateway_state(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> GatewayState | None:
        spec = self.applied.get(gateway_id)
        node = self.light.agents.nodes[target.identity][1]
        return None if spec is None else GatewayState(spec.id, spec.generation, node, True)

    def remove_gateway(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> None:
        self.applied.pop(gateway_id, None)


def without_gateway(api: InProcessApi) -> None:
    """VDC demo's public IPs released and its gateway of zone-a deleted (as ``gatewaykit.clean_gateway``)."""
    for ip in api("{ publicIps { address } }", user="admin", vdc="demo").data["publicIps"]:
        api(RELEASE, user="admin", vdc="demo", variables={"a": ip["address"]})
    api(DELETE_GATEWAY, user="admin", vdc="demo", variables={"zone": ZONE})


@dataclass(frozen=True)
class Gateway:
    """VDC demo's edge gateway of zone-a, with one rule and a port forward: its public IP, its VM."""

    address: str
    vm_name: str
    vm_address: str


@pytest.fixture
def gateway(
    api: InProcessApi, light: LightWorld, site: LightPortal, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Gateway]:
    """zone-a with an external network, and VDC demo's edge gateway there (its nodes' agents applying what
    they are sent) with a rule letting in tcp/443 and port 8080 of a public IP of its own forwarded to port
    80 of a VM of alice's. The gateway, the VM and the network go afterwards."""
    running = RunningGateways(light)
    for name in ("apply_gateway", "gateway_state", "remove_gateway"):
        monkeypatch.setattr(light.agents, name, getattr(running, name))
    # The bridge's name is only stored: the light world's nodes make none.
    answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": external_settings("fplight")})
    assert answer.data["updateZone"]["errors"] == [], answer.body
    try:
        with vm_names(api, site) as names:
            made = create(api, "alice", "demo", name=names("web"))
            assert made["errors"] == [], made["errors"]
            nics = api(NICS, user="alice", vdc="demo", variables={"id": made["virtualMachine"]["id"]})
            vm_address = nics.data["virtualMachine"]["nics"][0]["ipAddress"]
            rule = {
                "direction": "in",
                "action": "allow",
                "protocol": "tcp",
                "portFrom": 443,
                "description": "web",
            }
            added = api(ADD_RULE, user="alice", vdc="demo", variables={"input": rule, "zone": ZONE})
            assert added.data["addGatewayFirewallRule"]["errors"] == [], added.body
            allocated = api(ALLOCATE, user="alice", vdc="demo", variables={"zone": ZONE})
            assert allocated.data["allocatePublicIp"]["errors"] == [], allocated.body
            address = allocated.data["allocatePublicIp"]["publicIp"]["address"]
            forward = {
                "publicIp": address,
                "protocol": "tcp",
                "port": 8080,
                "toAddress": vm_address,
                "toPort": 80,
            }
            forwarded = api(FORWARD, user="alice", vdc="demo", variables={"input": forward})
            assert forwarded.data["addPortForward"]["errors"] == [], forwarded.body
            yield Gateway(address, names("web"), vm_address)
            without_gateway(api)  # before its VM goes
    finally:
        without_gateway(api)
        api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": NO_EXTERNAL})


@pytest.fixture
def cluster(tenant_clusters: FakeClusterApi) -> Iterator[str]:
    """A cluster of VDC demo as a create writes it (the services' own builders: no provider runs here) and
    the providers leave it once up; gone afterwards."""
    with cleaned(tenant_clusters, f"c{uuid.uuid4().hex[:8]}") as name:
        plan = objects.ClusterPlan("demo", name, "v1.34.2", "debian-12", "net-1", 2, ())
        for resource, body in objects.all_objects(plan):
            tenant_clusters.create(resource, namespace_of("demo"), body)
        made_ready(tenant_clusters, name)
        yield name
