"""Rehearsing the loss of the management cluster and of the identity provider's database (issue 34).

A world of its own (one zone, two nodes whose agents enrolled over mTLS, on the WireGuard mesh: each node in
a network namespace of its own, the second behind NAT, its agent serving on its mesh address only, which
the orchestrator reaches through the hub) is given what a platform holds: the catalog, VDCs (an admin's,
and one an organization's owner made within the allowance an admin gave it), a second network, a tenant's
VM, an edge gateway with a public IP, a port forward to the VM and a firewall rule, and memberships given
through the API (by the admin, and by the organization's owner). Everything is recorded through the API,
as the admin and as each tenant; the mesh's records (a ConfigMap per peer, the hub's key in a Secret)
through the cluster, as an operator's kubectl reads them, and the key the hub's interface answers with.

It is backed up as the operator's procedure does: ``manage.py backup --file`` with the orchestrator's
settings (which name the hub's key's Secret), and the identity provider's database copied while it serves,
with SQLite's online backup (Zitadel's PostgreSQL is dumped with ``pg_dump`` instead:
tests/orchestrator/test_identity_backup.py). Then a change the backup does not hold (a second port forward,
applied on the node), and the loss: the mesh's hub stops and its interface goes (its pod goes with the
cluster), a new, empty Kubernetes emulator serves where the old one did, and the provider's database is
deleted and the provider started on an empty one (the stand-in seeds its USERS.json at each start, unlike
Zitadel: the devstack's users come back bare, what the API gave them is gone). The API shows the loss, the
cluster holds no peer and no hub key, and no agent is reachable at its mesh address; the gateway's rules
on its node stay. Then both are restored: the platform namespace made (step 1 of the procedure in
docs/operating.md), ``manage.py restore --file``, the provider stopped, its database copied back, started,
and the hub started again (step 4, the chart's Deployment). Everything recorded is back and equal, the
mesh's peers and the hub's key as the restore left them too, and the hub answers with the key it had; the
agents, never enrolled again (their files on the nodes unchanged), handshake with it again with the keys
they had, answer at their mesh addresses (the tenant's listing is read through them), serve the
certificates they had and accept a client certificate issued now from the restored platform CA (as
cert-manager issues the rebuilt orchestrator's); the node runs the change made after the backup until a
pass of the gateway reconciler applies the restored desired state there (the recovery point). The time to
recover (the restore's start to the tenant's first full listing, the hub's start included) and the
backups' sizes are printed and recorded as the suite's figures.

Not rehearsed here: Kubernetes clusters, which need Cluster API's world (the providers and core's stand-in):
tests/recovery/test_cluster_rehearsal.py rehearses losing the management cluster with one on it.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import ipaddress
import json
import os
import re
import secrets
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
import trustme
from cryptography.hazmat.primitives.serialization import Encoding
from kubernetes import client, config

from agentclient import AgentPool, AgentTarget, ClientTLS
from agentclient.wireguard import Interface
from devstack import seed
from devstack.fakesdn import NODE_BRIDGE
from devstack.meshnet import DevMesh, in_ns, mesh_possible, run
from devstack.pki import CertificateAuthority
from devstack.world import World
from devstack.world.config import AGENT_CA_SECRET, ORCHESTRATOR_CLIENT_CN
from tests import addresses
from tests.apikit import Answer, GraphQL, eventually
from tests.conftest import world_config
from tests.enrollkit import peer_certificate
from tests.gatewaykit import UPDATE_ZONE, external_settings, vnets_of
from tests.promises import RecordFigure
from tests.vmkit import LIST, create, ok, payload

pytestmark = pytest.mark.promise("recovery")
T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
ZONE = "zone-a"
SUITE = "recovery"
RESTORED_WITHIN = 60.0
ERRORS = "errors { field code message }"
RESOURCES = "vcpus memoryMib diskGb vms networks publicIps"
FORWARD_FIELDS = "publicIp protocol port toAddress toPort"
# What the admin sees of the platform: the catalog, the VDCs, the hosts and their join tokens, the
# organizations' allowances, the users with their roles and memberships.
PLATFORM = f"""{{
  zones {{ id name description network {{ type bridge idFirst idLast mtu ranges dns }}
    externalNetwork {{ bridge vlan cidr gateway pool nodes }} }}
  computeProfiles {{ name vcpus memoryMib cpuType description }}
  storageProfiles {{ name defaultGb minGb maxGb bus format description }}
  images {{ name osFamily sourceUrl checksum defaultUser minDiskGb description }}
  vdcs {{ id name description zones computeProfiles storageProfiles images organization snapshotsPerVm
    quota {{ {RESOURCES} }} }}
  hosts {{ id zone name endpoint cordoned }}
  hostJoinTokens {{ id zone host createdBy expiresAt usedAt usedBy }}
  organizations {{ organization name zones computeProfiles storageProfiles images vdcs
    quota {{ {RESOURCES} }} allotted {{ {RESOURCES} }} }}
  users(search: "example") {{ id username name email organization roles vdcs }}
}}"""
# What a VDC's member sees of its networks and gateways.
VDC_STATE = f"""{{
  networks {{ id name zone vdc cidr gateway dns vnet isDefault pending }}
  edgeGateways {{ id vdc zone node generation appliedGeneration applied uplinkAddress networks
    publicIps {{ address zone vdc natTo portForwards {{ {FORWARD_FIELDS} }} }}
    portForwards {{ {FORWARD_FIELDS} }}
    firewallRules {{ position direction action protocol source destination portFrom portTo description }} }}
  publicIps {{ address zone vdc natTo }}
}}"""
GATEWAY_STATUS = (
    "query($z: String) { edgeGateway(zone: $z) { generation status { answered healthy generation } } }"
)
LOST = "{ vdcs { id } hosts { id } zones { id } computeProfiles { name } organizations { organization } }"
PLATFORM_USERS = '{ users(search: "example") { username vdcs } }'
NICS = "query($id: ID!) { virtualMachine(id: $id) { nics { ipAddress } } }"
HOSTS = "{ hosts { id endpoint online agentVersion } }"
MEMBERS = "query($v: ID!) { vdcMembers(vdc: $v) { id username vdcs } }"
MESH_PEERS = "flexplane.io/kind=meshpeer"


class FreshTokens(GraphQL):
    """The world's API with a token issued at each call: after the identity provider's database was lost
    and restored, what a user may do is what a token issued now says (``GraphQL`` keeps the first)."""

    def token(self, user: str) -> str:
        return self.world.token(user)


@dataclasses.dataclass(frozen=True)
class Names:
    """This world's own names: its gateway's namespace is this machine's, so they carry the subnet, as a
    parallel worker's rehearsal has another."""

    vdc: str
    org_vdc: str

    @classmethod
    def of(cls, world: World) -> Names:
        subnet = world.cfg.subnet
        return cls(vdc=f"dr{subnet}", org_vdc=f"acme{subnet}")

    @property
    def gateway_namespace(self) -> str:
        return f"fpgw-{self.vdc}.{ZONE}"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One zone of two nodes on the mesh (each in a namespace of its own, the second behind NAT), on the
    worker's second subnet (the mesh's world uses it too, in a module of its own), for this module alone:
    its management cluster, its mesh hub and its identity database are lost on purpose. The world removes
    the gateway's namespace and legs when it stops, as it removes every gateway its agents made."""
    if (why := mesh_possible()) is not None:
        pytest.fail(f"the rehearsal's world runs the mesh, which needs root and WireGuard's tools: {why}")
    cfg = dataclasses.replace(
        world_config(Path(tmp_path_factory.mktemp("recovery-world")), addresses.FRAGILE),
        zones=(ZONE,),
        nodes_per_zone=2,
        mesh=True,
    )
    with World(cfg) as running:
        yield running


@pytest.fixture(scope="module")
def api(platform: World) -> FreshTokens:
    """This module's API: its own world's (not the session's)."""
    return FreshTokens(platform)


@pytest.fixture(scope="module")
def names(platform: World) -> Names:
    return Names.of(platform)


# ------------------------------------------------------------------------------------------ the platform


def answered(answer: Answer) -> dict[str, Any]:
    assert answer.status == 200, answer.body
    assert answer.errors == [], answer.errors
    data: dict[str, Any] = answer.data
    return data


def build(api: FreshTokens, names: Names) -> str:
    """What a platform holds, made through the API; the address of the tenant's VM. The zone's external
    network is on each node's ``vmbr0``, the bridge the mesh's world keeps in every node's namespace beside
    one per applied VNet, where the gateway's legs go."""
    settings = external_settings(NODE_BRIDGE)
    zoned = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": settings})
    assert answered(zoned)["updateZone"]["errors"] == []
    vdc_input = {
        "id": names.vdc,
        "name": "Rehearsal",
        "description": "lost and restored",
        "zones": [ZONE],
        "computeProfiles": ["small"],
        "storageProfiles": ["standard"],
        "images": ["debian-12"],
        "quota": {"vcpus": 8, "memoryMib": 8192, "diskGb": 100, "vms": 4, "networks": 3, "publicIps": 2},
    }
    made = api(
        f"mutation($i: VdcInput!) {{ createVdc(input: $i) {{ {ERRORS} }} }}",
        user="admin",
        variables={"i": vdc_input},
    )
    assert payload(made, "createVdc")["errors"] == []
    network = {"name": "backend", "zone": ZONE, "cidr": "10.77.0.0/24"}
    made = api(
        f"mutation($i: CreateNetworkInput!) {{ createNetwork(input: $i) {{ {ERRORS} }} }}",
        user="admin",
        vdc=names.vdc,
        variables={"i": network},
    )
    assert payload(made, "createNetwork")["errors"] == []
    bridges_ready(api.world, vnets_of(api, names.vdc))

    # Bob joins the VDC through the API (Zitadel's state) and makes a VM there.
    grant(api, "admin", "bob", names.vdc)
    vm = ok(create(api, "bob", names.vdc, name="survivor", zone=ZONE))["virtualMachine"]
    nics = answered(api(NICS, user="bob", vdc=names.vdc, variables={"id": vm["id"]}))["virtualMachine"][
        "nics"
    ]
    vm_address = str(nics[0]["ipAddress"])  # its NIC on the VDC's default network

    # Its gateway: a public IP, a port forward to the VM, a firewall rule; applied on its node.
    allocated = api(
        f"mutation($z: String) {{ allocatePublicIp(zone: $z) {{ publicIp {{ address }} {ERRORS} }} }}",
        user="bob",
        vdc=names.vdc,
        variables={"z": ZONE},
    )
    public = ok(payload(allocated, "allocatePublicIp"))["publicIp"]["address"]
    forward(api, names, public, 8080, vm_address)
    rule = {
        "direction": "in",
        "action": "allow",
        "protocol": "tcp",
        "destination": f"{vm_address}/32",
        "portFrom": 80,
    }
    ruled = api(
        f"mutation($z: String, $i: GatewayFirewallRuleInput!) {{ addGatewayFirewallRule(zone: $z, input: $i) "
        f"{{ {ERRORS} }} }}",
        user="bob",
        vdc=names.vdc,
        variables={"z": ZONE, "i": rule},
    )
    assert payload(ruled, "addGatewayFirewallRule")["errors"] == []

    # An organization's allowance (a ConfigMap, and Zitadel's project grant), and a VDC its owner makes in it.
    acme = next(
        u["organization"] for u in answered(api(PLATFORM, user="admin"))["users"] if u["username"] == "olivia"
    )
    allowance = {
        "zones": [ZONE],
        "computeProfiles": ["small"],
        "storageProfiles": ["standard"],
        "images": ["debian-12"],
        "quota": {"vcpus": 4, "memoryMib": 4096, "diskGb": 40, "vms": 2},
    }
    given = api(
        "mutation($o: ID!, $i: OrganizationAllowanceInput!) { setOrganizationAllowance(organization: $o, "
        f"input: $i) {{ {ERRORS} }} }}",
        user="admin",
        variables={"o": acme, "i": allowance},
    )
    assert payload(given, "setOrganizationAllowance")["errors"] == []
    org_vdc = {
        **vdc_input,
        "id": names.org_vdc,
        "name": "Acme",
        "quota": {"vcpus": 2, "memoryMib": 2048, "diskGb": 20, "vms": 1},
    }
    made = api(
        f"mutation($i: VdcInput!) {{ createVdc(input: $i) {{ {ERRORS} }} }}",
        user="olivia",
        variables={"i": org_vdc},
    )
    assert payload(made, "createVdc")["errors"] == []
    grant(api, "olivia", "oscar", names.org_vdc)  # the organization's owner gives its member the VDC
    return vm_address


def bridges_ready(world: World, vnets: list[str]) -> None:
    """Each node's namespace has a bridge for each VNet, as a node's SDN apply makes them before its task
    ends (the mesh's world keeps its nodes' bridges in step with the fake SDN every second)."""

    def bridges(namespace: str) -> set[str]:
        listed = run(["ip", "-n", namespace, "-j", "link", "show", "type", "bridge"]).stdout
        return {link["ifname"] for link in json.loads(listed or "[]")}

    namespaces = [meshed(world).namespace(zone, node) for zone, node in world.agents]
    eventually(lambda: all(set(vnets) <= bridges(ns) for ns in namespaces), 10, f"the nodes' bridges {vnets}")


def forward(api: FreshTokens, names: Names, public: str, port: int, to: str) -> None:
    """Bob forwards ``port`` of the public IP to port 80 of ``to``."""
    given = {"publicIp": public, "protocol": "tcp", "port": port, "toAddress": to, "toPort": 80}
    forwarded = api(
        f"mutation($i: PortForwardInput!) {{ addPortForward(input: $i) {{ {ERRORS} }} }}",
        user="bob",
        vdc=names.vdc,
        variables={"i": given},
    )
    assert payload(forwarded, "addPortForward")["errors"] == []


def grant(api: FreshTokens, by: str, username: str, vdc: str) -> None:
    """``username`` made a member of ``vdc`` by ``by`` through the API: a grant Zitadel holds."""
    found = answered(api(PLATFORM, user="admin"))["users"]
    user = next(u["id"] for u in found if u["username"] == username)
    granted = api(
        f"mutation($u: ID!, $v: ID!) {{ grantVdcMembership(user: $u, vdc: $v) {{ {ERRORS} }} }}",
        user=by,
        variables={"u": user, "v": vdc},
    )
    assert payload(granted, "grantVdcMembership")["errors"] == []


def applied(api: FreshTokens, names: Names) -> dict[str, Any]:
    """The gateway's status once its node confirmed its generation."""

    def check() -> dict[str, Any] | None:
        found = answered(api(GATEWAY_STATUS, user="bob", vdc=names.vdc, variables={"z": ZONE}))["edgeGateway"]
        status = found["status"]
        done = status["answered"] and status["healthy"] and status["generation"] == found["generation"]
        return found if done else None

    found = eventually(check, 30, "the gateway applied on its node")
    assert found is not None
    return found


def record(api: FreshTokens, names: Names) -> dict[str, Any]:
    """Everything the API shows of the platform: the admin's view, each VDC's networks and gateways, the
    new VDC's members, and the VMs each tenant lists."""
    seen: dict[str, Any] = {"platform": answered(api(PLATFORM, user="admin"))}
    for vdc in ("demo", "other", names.vdc, names.org_vdc):
        seen[f"vdc {vdc}"] = answered(api(VDC_STATE, user="admin", vdc=vdc))
    for vdc in (names.vdc, names.org_vdc):
        seen[f"members of {vdc}"] = answered(api(MEMBERS, user="admin", variables={"v": vdc}))["vdcMembers"]
    for user, vdc in (("alice", "demo"), ("bob", "other"), ("bob", names.vdc), ("oscar", names.org_vdc)):
        seen[f"vms of {user} in {vdc}"] = vms(api, user, vdc)
    seen["bob's gateway"] = answered(api(VDC_STATE, user="bob", vdc=names.vdc))["edgeGateways"]
    return seen


def vms(api: FreshTokens, user: str, vdc: str) -> list[dict[str, Any]]:
    edges = answered(api(LIST, user=user, vdc=vdc))["virtualMachines"]["edges"]
    return sorted((edge["node"] for edge in edges), key=lambda vm: str(vm["id"]))


# ------------------------------------------------------------------------------------------ the node


def ruleset(names: Names) -> str:
    """The gateway's nftables rules on its node (here: its namespace on this machine)."""
    listed = subprocess.run(
        ["ip", "netns", "exec", names.gateway_namespace, "nft", "list", "ruleset"],
        check=True,
        capture_output=True,
        text=True,
    )
    return listed.stdout


def endpoints(api: FreshTokens) -> dict[str, str]:
    """Where the orchestrator dials each host's agent (its mesh address), by host id."""
    return {h["id"]: h["endpoint"] for h in answered(api(HOSTS, user="admin"))["hosts"]}


def served_certificates(world: World, at: dict[str, str]) -> dict[str, bytes]:
    """The certificate each agent serves now at its endpoint ``at``, by host id."""
    return {
        host: peer_certificate(world, endpoint).public_bytes(Encoding.DER) for host, endpoint in at.items()
    }


def node_files(world: World) -> dict[str, bytes]:
    """What enrollment left on each node (``/etc/flexplane``: the agent's key and certificate, its mesh key
    and the hub's key and endpoint in ``mesh.toml``), by path: what another enrollment would replace."""
    return {
        str(path.relative_to(world.cfg.scratch)): path.read_bytes()
        for agent in world.agents.values()
        for path in sorted((agent.root / "etc" / "flexplane").rglob("*"))
        if path.is_file()
    }


# ------------------------------------------------------------------------------------------ the mesh


@dataclasses.dataclass(frozen=True)
class MeshRecords:
    """The mesh as the management cluster holds it: each peer's ConfigMap (its data, by name) and the hub's
    key, a Secret (its data; None when there is none)."""

    peers: dict[str, dict[str, str]]
    hub_key: dict[str, str] | None


def meshed(world: World) -> DevMesh:
    assert world.mesh is not None
    return world.mesh


def mesh_records(world: World) -> MeshRecords:
    name = meshed(world).env()["FLEXPLANE_MESH_HUB_SECRET"]
    with core(world) as kube:
        listed = kube.list_namespaced_config_map(seed.NAMESPACE, label_selector=MESH_PEERS)
        try:
            secret: client.V1Secret | None = kube.read_namespaced_secret(name, seed.NAMESPACE)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            secret = None
    peers = {str(item.metadata.name if item.metadata else ""): strings(item.data) for item in listed.items}
    return MeshRecords(peers, strings(secret.data) if secret is not None else None)


def strings(data: dict[str, Any] | None) -> dict[str, str]:
    return {key: str(value) for key, value in (data or {}).items()}


def hub_interface(world: World) -> Interface:
    mesh = meshed(world)
    return Interface(mesh.hub_interface, mesh.topology.hub)


def hub_public_key(world: World) -> str:
    """The public key the hub's WireGuard interface answers handshakes with (``wg show``)."""
    hub = hub_interface(world)
    return run(in_ns(str(hub.netns), "wg", "show", hub.name, "public-key")).stdout.strip()


def dial(world: World, at: dict[str, str]) -> dict[str, str]:
    """What a TCP connection from the orchestrator's side to each agent's mesh endpoint met, by host id."""
    topology = meshed(world).topology
    return {
        host: topology.connect(None, address, int(port))
        for host, (address, _, port) in ((h, e.rpartition(":")) for h, e in at.items())
    }


def rebuilt_orchestrators_tls(world: World, folder: Path) -> ClientTLS:
    """A client certificate issued now from the platform CA the management cluster holds, as cert-manager
    issues the orchestrator's on a rebuilt cluster; trusting that CA alone."""
    with core(world) as kube:
        secret = kube.read_namespaced_secret(AGENT_CA_SECRET, seed.NAMESPACE)
    data = secret.data or {}
    certificate, key = (base64.b64decode(data[name]) for name in ("tls.crt", "tls.key"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ca.crt").write_bytes(certificate)
    authority = CertificateAuthority(trustme.CA.from_pem(certificate, key), folder / "ca.crt")
    cert, key_path = authority.issue_client(ORCHESTRATOR_CLIENT_CN, folder, "orchestrator")
    return ClientTLS.from_files(folder / "ca.crt", cert, key_path)


@contextlib.contextmanager
def core(world: World) -> Iterator[client.CoreV1Api]:
    """The management cluster as an operator's kubectl reaches it."""
    with contextlib.closing(config.new_client_from_config(config_file=str(world.kubeconfig))) as api_client:
        yield client.CoreV1Api(api_client)


# ------------------------------------------------------------------------------------------ backups


def manage(world: World, key_file: Path, *args: str) -> str:
    """``manage.py`` with the orchestrator's settings and the backup key, as the chart's CronJob (whose env
    is the orchestrator's) and the operator run it; its output. The settings name what a backup holds
    besides the labelled objects: the namespace, the platform CA's Secret and the mesh hub's key's."""
    env = {**os.environ, **world.orchestrator_env(), "FLEXPLANE_BACKUP_KEY_FILE": str(key_file)}
    return run_manage(env, *args)


def reconcile_gateways(world: World) -> str:
    """One pass of the gateway reconciler, with the orchestrator's settings, as its sidecar runs them."""
    return run_manage({**os.environ, **world.orchestrator_env()}, "reconcile_gateways")


def run_manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def identity_database(world: World) -> Path:
    return world.cfg.scratch / "identity" / "identity.sqlite3"


def copy_database(source: Path, target: Path) -> None:
    """SQLite's online backup: a consistent copy of a database in use (the provider keeps serving and
    writing), as ``pg_dump`` makes Zitadel's."""
    with (
        contextlib.closing(sqlite3.connect(source)) as reading,
        contextlib.closing(sqlite3.connect(target)) as writing,
    ):
        reading.backup(writing)


def identity_port(world: World) -> int:
    port = urlsplit(world.identity.issuer).port
    assert port is not None
    return port


def lose_identity(world: World) -> None:
    """The provider's database gone: stopped, its files deleted, started on a new one (seeded again)."""
    port = identity_port(world)
    world.stop_identity()
    remove_database(world)
    world.start_identity(port)


def restore_identity(world: World, dump: Path) -> None:
    """The provider stopped (nothing may hold its database), the copy put back, the provider started on it:
    as Zitadel is scaled to 0 for ``pg_restore`` and back."""
    port = identity_port(world)
    world.stop_identity()
    remove_database(world)
    copy_database(dump, identity_database(world))
    world.start_identity(port)


def remove_database(world: World) -> None:
    database = identity_database(world)
    for path in (
        database,
        database.with_name(database.name + "-wal"),
        database.with_name(database.name + "-shm"),
    ):
        path.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------ the rehearsal


@dataclasses.dataclass(frozen=True)
class Backups:
    """The platform's backup, the identity database's copy, and the key that opens the first."""

    key_file: Path
    platform: Path
    identity: Path
    objects: int


def back_up(world: World, folder: Path) -> Backups:
    """Both backups, as their schedules make them."""
    key_file = folder / "backup.key"
    key_file.write_text(base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
    made = Backups(key_file, folder / "platform.fpbackup", folder / "identity.sqlite3", 0)
    said = manage(world, key_file, "backup", "--file", str(made.platform))
    backed_up = re.search(r"backed up (\d+) objects", said)
    assert backed_up is not None, said
    copy_database(identity_database(world), made.identity)
    return dataclasses.replace(made, objects=int(backed_up.group(1)))


def lose(world: World, api: FreshTokens, names: Names, at: dict[str, str]) -> None:
    """The management cluster lost with what ran in it, the mesh's hub too (its pod, and its interface with
    it), and a new, empty one; the identity provider on an empty database; what the API, the cluster and
    the mesh say: no peer, no hub key, no agent reachable at its mesh address."""
    meshed(world).stop_hub()
    world.replace_kube()
    lose_identity(world)
    assert mesh_records(world) == MeshRecords(peers={}, hub_key=None)
    assert "connected" not in dial(world, at).values()
    lost = answered(api(LOST, user="admin"))
    assert lost == {"vdcs": [], "hosts": [], "zones": [], "computeProfiles": [], "organizations": []}
    members = {u["username"]: u["vdcs"] for u in answered(api(PLATFORM_USERS, user="admin"))["users"]}
    assert (members["bob"], members["oscar"]) == (["other"], [])  # the seeded users, bare again
    assert vms(api, "alice", "demo") == []
    assert api(LIST, user="bob", vdc=names.vdc).codes == ["FORBIDDEN"]


@dataclasses.dataclass(frozen=True)
class Recovery:
    """The recovery's figures; the mesh's records as the restore left them (before the hub, started
    again, writes its new handshakes back); when the hub started (Unix seconds, as WireGuard's handshakes)."""

    figures: dict[str, float]
    mesh: MeshRecords
    hub_started_at: int


def recover(world: World, api: FreshTokens, names: Names, backups: Backups, wanted: Any) -> Recovery:
    """The procedure's platform part: the platform namespace, the restore, Zitadel's database, then the
    mesh's hub started (step 4: the chart's Deployment, on the restored key and peers); timed from its start
    to the tenant's first listing of the VMs ``wanted``, which the orchestrator reads through the agents over
    the mesh."""
    started = time.monotonic()
    with core(world) as kube:
        kube.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=seed.NAMESPACE)))
    said = manage(world, backups.key_file, "restore", "--file", str(backups.platform))
    assert f"restored {backups.objects} objects: " in said, said
    restored_kube = time.monotonic()
    restored_mesh = mesh_records(world)
    identity_started = time.monotonic()
    restore_identity(world, backups.identity)
    restored_identity = time.monotonic()
    hub_started_at = int(time.time())
    world.start_mesh_hub()
    hub_started = time.monotonic()
    eventually(
        lambda: safely(lambda: vms(api, "bob", names.vdc)) == wanted,
        RESTORED_WITHIN,
        lambda: f"bob's VMs listed (the last answer: {api(LIST, user='bob', vdc=names.vdc).body})",
    )
    figures = {
        "time to recover (s)": round(time.monotonic() - started, 2),
        "management cluster restored in (s)": round(restored_kube - started, 2),
        "identity database restored in (s)": round(restored_identity - identity_started, 2),
        "mesh hub started in (s)": round(hub_started - restored_identity, 2),
    }
    return Recovery(figures, restored_mesh, hub_started_at)


def agents_answer(
    world: World, api: FreshTokens, certificates: dict[str, bytes], at: dict[str, str], folder: Path
) -> None:
    """The agents serve the certificates they had (none enrolled again), answer the orchestrator at their
    mesh addresses ``at``, and accept a client certificate issued now from the restored platform CA."""
    assert served_certificates(world, at) == certificates
    hosts = answered(api(HOSTS, user="admin"))["hosts"]
    assert sorted(
        (h["id"], h["endpoint"], h["online"], h["agentVersion"] is not None) for h in hosts
    ) == sorted((host, endpoint, True, True) for host, endpoint in at.items())
    with AgentPool(rebuilt_orchestrators_tls(world, folder), timeout=10) as pool:
        for agent in world.agents.values():
            info = pool.info(AgentTarget(identity=agent.identity, address=at[f"{agent.zone}/{agent.node}"]))
            assert (info.zone, info.node) == (agent.zone, agent.node)


def mesh_rejoined(world: World, records: MeshRecords, since: int) -> None:
    """The hub, started again, has each recorded peer's key, allowed its mesh address only, and a handshake
    with each since it started: every node dialled back in with the key it had."""
    specs = [json.loads(data["spec"]) for data in records.peers.values()]
    configured = hub_interface(world).peers()
    assert {key: state.allowed_ips for key, state in configured.items()} == {
        spec["publicKey"]: (f"{spec['address']}/32",) for spec in specs
    }
    assert all(state.latest_handshake >= since for state in configured.values()), configured


def test_the_platform_is_lost_and_restored_from_its_backups(
    platform: World, api: FreshTokens, names: Names, tmp_path: Path, record_figure: RecordFigure
) -> None:
    vm_address = build(api, names)
    gateway = applied(api, names)
    before = record(api, names)
    (made,) = before["bob's gateway"]
    assert [(f["port"], f["toAddress"]) for f in made["portForwards"]] == [(8080, vm_address)]
    assert [member["username"] for member in before[f"members of {names.vdc}"]] == ["bob"]
    assert [member["username"] for member in before[f"members of {names.org_vdc}"]] == ["oscar"]
    assert [vm["name"] for vm in before[f"vms of bob in {names.vdc}"]] == ["survivor"]
    rules = ruleset(names)
    # The orchestrator dials each agent at its mesh address, through the hub only.
    at = endpoints(api)
    mesh_range = ipaddress.ip_network(meshed(platform).topology.mesh_range)
    assert all(ipaddress.ip_address(endpoint.rpartition(":")[0]) in mesh_range for endpoint in at.values())
    hub_key = hub_public_key(platform)
    mesh_before = mesh_records(platform)
    assert len(mesh_before.peers) == len(platform.agents)
    assert mesh_before.hub_key is not None
    assert base64.b64decode(mesh_before.hub_key["public-key"]).decode() == hub_key
    certificates = served_certificates(platform, at)
    files = node_files(platform)
    backups = back_up(platform, tmp_path)
    mesh_backed_up = mesh_records(platform)

    # After the backups, before the loss: a change the backups do not hold, applied on the node.
    forward(api, names, made["publicIps"][0]["address"], 8443, vm_address)
    assert applied(api, names)["generation"] > gateway["generation"]
    rules_changed = ruleset(names)
    assert rules_changed != rules

    lose(platform, api, names, at)
    assert ruleset(names) == rules_changed  # the node's gateway runs on, untouched
    recovery = recover(platform, api, names, backups, before[f"vms of bob in {names.vdc}"])

    after = record(api, names)
    for what, value in before.items():
        assert after[what] == value, what
    # The mesh's records as they were: the hub writes a peer's handshake back now and then, so the backup
    # holds each peer as it was just before it or just after.
    assert recovery.mesh.peers.keys() == mesh_before.peers.keys()
    for name, data in recovery.mesh.peers.items():
        assert data in (mesh_before.peers[name], mesh_backed_up.peers[name]), name
    assert recovery.mesh.hub_key == mesh_before.hub_key
    assert hub_public_key(platform) == hub_key
    agents_answer(platform, api, certificates, at, tmp_path / "rebuilt")
    mesh_rejoined(platform, recovery.mesh, recovery.hub_started_at)
    assert node_files(platform) == files  # no node enrolled again
    # The recovery point: the node runs what changed after the backup until a pass of the reconciler
    # applies the restored desired state there.
    assert ruleset(names) == rules_changed
    reconcile_gateways(platform)
    assert applied(api, names)["generation"] == gateway["generation"]
    assert ruleset(names) == rules

    figures = recovery.figures | {
        "objects restored": backups.objects,
        "platform backup (bytes)": backups.platform.stat().st_size,
        "identity backup (bytes)": backups.identity.stat().st_size,
    }
    for name, value in figures.items():
        record_figure(SUITE, name, value)
    print("\nrecovery rehearsal: " + ", ".join(f"{name} {value}" for name, value in figures.items()))


def safely(read: Callable[[], T]) -> T | None:
    """What ``read`` returns, or None while the API still fails (the identity provider starting)."""
    try:
        return read()
    except AssertionError:
        return None
