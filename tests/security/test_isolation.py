"""Tenant isolation, the matrix (OWASP API Security Top 10: API1 BOLA, API5 BFLA).

Every query and mutation field of ``schema.graphql`` is asked by four callers, against the world's
orchestrator over HTTP with the identity provider's own tokens:

- anonymous: no token at all;
- bob: USER of VDC other, which is not the VDC of the objects asked about;
- alice: USER of VDC demo, the VDC of the objects asked about;
- admin: ADMIN, member of no VDC;
- olivia: ORG_OWNER (and USER) of organization acme, which holds neither VDC: to her, demo and other
  are another organization's, and the users of the default organization are not hers.

``ROWS`` holds each field's document and the outcome expected in each cell. The cells are made from
the committed schema file when the suite is collected, so a field added to the API without a row
fails here, with the row to add. The arguments are harmless: objects that do not exist, VMs made for
the module and asked to become what they are (start a running one, stop a stopped one), or objects a
cell creates and removes again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest
from graphql import GraphQLSchema, OperationDefinitionNode, build_schema, parse

from devstack.world import World
from orchestrator.graphql.schema import schema
from tests.orchestrator.clusterkit import staged_cluster
from tests.promises import RecordFigure
from tests.security.conftest import AlicesVms
from tests.support import Answer, GraphQL
from tests.vmkit import DEBIAN, SMALL, STANDARD, create

pytestmark = pytest.mark.promise("isolation")

SUITE = "isolation"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema.graphql"
ANONYMOUS, OUTSIDER, MEMBER, ADMIN, OWNER = "anonymous", "bob", "alice", "admin", "olivia"
CALLERS = (ANONYMOUS, OUTSIDER, MEMBER, ADMIN, OWNER)
# What the world holds (devstack/seed.py): alice's VDC, a zone and a host of it, and names nothing has.
DEMO, OTHER, ZONE, NOTHING = "demo", "other", "zone-a", "no-such-thing"


# ------------------------------------------------------------------------------------------ outcomes


def _value(answer: Answer, name: str) -> Any:
    return (answer.data or {}).get(name)


class Outcome(Protocol):
    def check(self, answer: Answer, name: str) -> None: ...


@dataclass(frozen=True)
class Unauthenticated:
    """401 before anything runs: no token."""

    def check(self, answer: Answer, name: str) -> None:
        assert answer.status == 401, answer.body
        assert answer.codes == ["UNAUTHENTICATED"], answer.body
        assert answer.data is None, answer.body


@dataclass(frozen=True)
class Forbidden:
    """403 with FORBIDDEN at the field: the caller lacks the role (BFLA) or the VDC the header names."""

    def check(self, answer: Answer, name: str) -> None:
        assert answer.status == 403, answer.body
        assert answer.codes == ["FORBIDDEN"], answer.body
        assert _value(answer, name) is None, answer.body


@dataclass(frozen=True)
class Missing:
    """NOT_FOUND at the field, as for an object that does not exist (BOLA)."""

    def check(self, answer: Answer, name: str) -> None:
        assert answer.status == 200, answer.body
        assert answer.codes == ["NOT_FOUND"], answer.body
        assert answer.errors[0]["path"] == [name], answer.body
        assert _value(answer, name) is None, answer.body


@dataclass(frozen=True)
class Refused:
    """A mutation past authorization whose payload says why it did not happen, with this code."""

    code: str

    def check(self, answer: Answer, name: str) -> None:
        assert answer.status == 200, answer.body
        assert answer.errors == [], answer.body
        assert [e["code"] for e in _value(answer, name)["errors"]] == [self.code], answer.body


@dataclass(frozen=True)
class Answered:
    """Data, no error (for a mutation: an empty ``errors``), and what the row expects of it."""

    holds: Callable[[Any], bool] = field(default=lambda value: value is not None)

    def check(self, answer: Answer, name: str) -> None:
        assert answer.status == 200, answer.body
        assert answer.errors == [], answer.body
        value = _value(answer, name)
        if isinstance(value, dict) and "errors" in value:
            assert value["errors"] == [], answer.body
        assert self.holds(value), answer.body


def everyone(outcome: Outcome) -> dict[str, Outcome]:
    """Any caller with a token gets ``outcome`` (USER or ADMIN suffices, the VDC does not matter)."""
    return {ANONYMOUS: Unauthenticated(), OUTSIDER: outcome, MEMBER: outcome, ADMIN: outcome, OWNER: outcome}


def admin_only(outcome: Outcome) -> dict[str, Outcome]:
    return {
        ANONYMOUS: Unauthenticated(),
        OUTSIDER: Forbidden(),
        MEMBER: Forbidden(),
        ADMIN: outcome,
        OWNER: Forbidden(),
    }


def access_managers(admin: Outcome, owner: Outcome) -> dict[str, Outcome]:
    """ADMIN, and an ORG_OWNER within their organization; USERs are refused."""
    return {**admin_only(admin), OWNER: owner}


def members(member: Outcome, outsider: Outcome) -> dict[str, Outcome]:
    """Alice's objects: she and ADMIN get ``member``, bob and olivia (another organization's) ``outsider``."""
    return {ANONYMOUS: Unauthenticated(), OUTSIDER: outsider, MEMBER: member, ADMIN: member, OWNER: outsider}


# ------------------------------------------------------------------------------------------ the rows


@dataclass(frozen=True)
class Stage:
    """What the cells act on: the module's VMs of VDC demo, and names of its own for what cells make."""

    api: GraphQL
    world: World
    vms: AlicesVms

    def name(self, who: str, what: str) -> str:
        """A name of the module's own (a lowercase slug, valid for every kind of object)."""
        return self.vms.names(f"{who}-{what}")

    def doomed_vm(self, who: str) -> str:
        """A VM of VDC demo made for one cell to delete."""
        made = create(self.api, MEMBER, DEMO, name=self.name(who, "doomed"))
        ident: str = made["virtualMachine"]["id"]
        return ident

    def image_source(self) -> dict[str, str]:
        """A source the world's images server serves (allowlisted), with its checksum."""
        return {
            "sourceUrl": self.world.images.url("debian-12.qcow2"),
            "checksum": self.world.images.checksum("debian-12.qcow2"),
        }


Variables = Callable[[Stage, str], dict[str, Any]]


def no_variables(stage: Stage, who: str) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Row:
    document: str
    cells: Mapping[str, Outcome]
    variables: Variables = no_variables
    # The FlexPlane-VDC-ID header, if the row sends one.
    vdc: str | None = None
    # Run as admin after each cell, whatever it answered: removes what the cell made.
    cleanup: Callable[[Stage, str], None] | None = None


def removed(mutation: str, key: str, what: str) -> Callable[[Stage, str], None]:
    """Cleanup: the object the cell named ``what`` deleted (as admin), if it was made."""
    kind = "ID" if key == "id" else "String"
    document = f"mutation($key: {kind}!) {{ {mutation}({key}: $key) {{ errors {{ code }} }} }}"

    def cleanup(stage: Stage, who: str) -> None:
        stage.api(document, user=ADMIN, variables={"key": stage.name(who, what)})

    return cleanup


def alices_network(stage: Stage) -> str:
    """The id of VDC demo's default network in zone-a (made with the module's VMs)."""
    answer = stage.api("{ networks { id zone isDefault } }", user=MEMBER, vdc=DEMO)
    [ident] = [n["id"] for n in answer.data["networks"] if n["zone"] == ZONE and n["isDefault"]]
    return str(ident)


def removed_network(stage: Stage, who: str) -> None:
    """Cleanup: the network of VDC demo a cell made, deleted (as admin), if it was made."""
    document = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { code } } }"
    stage.api(document, user=ADMIN, vdc=DEMO, variables={"id": f"{ZONE}/{stage.name(who, 'net')}"})


def removed_group(stage: Stage, name: str) -> None:
    """Cleanup: the security group of VDC demo a cell made, deleted (as admin), if it was made."""
    document = "mutation($name: String!) { deleteSecurityGroup(name: $name) { errors { code } } }"
    stage.api(document, user=ADMIN, vdc=DEMO, variables={"name": name})


def removed_snapshot(stage: Stage, who: str) -> None:
    """Cleanup: the snapshot of the module's stopped VM a cell took, deleted (as admin), if it was taken."""
    document = (
        "mutation($vm: ID!, $name: String!) { deleteSnapshot(vm: $vm, name: $name) { errors { code } } }"
    )
    stage.api(document, user=ADMIN, variables={"vm": stage.vms.stopped, "name": f"iso-{who}"})


# A cluster of VDC demo, staged as its create and the providers would have left it (no node pools).
ALICES_CLUSTER = "iso-k8s"
# A Kubernetes version only ADMIN's cell makes (and its cleanup removes).
PROBE_VERSION = "v0.99.0"


def alices_cluster(stage: Stage) -> str:
    return staged_cluster(stage.world, DEMO, ALICES_CLUSTER)


def removed_version(stage: Stage, who: str) -> None:
    """Cleanup: the probe's Kubernetes version deleted (as admin), if it was made."""
    document = f'mutation {{ deleteKubernetesVersion(version: "{PROBE_VERSION}") {{ errors {{ code }} }} }}'
    stage.api(document, user=ADMIN)


def with_alices_cluster(stage: Stage, who: str) -> dict[str, Any]:
    """No variables: alice's cluster staged for a listing to find."""
    alices_cluster(stage)
    return {}


VM_PAYLOAD = "{ virtualMachine { id vdc status } task { id } errors { code message } }"
CATALOG_ERRORS = "{ errors { code message field } }"


def vm_action(mutation: str, extra: str = "") -> str:
    return f"mutation($id: ID!) {{ {mutation}(id: $id{extra}) {VM_PAYLOAD} }}"


def running(stage: Stage, who: str) -> dict[str, Any]:
    return {"id": stage.vms.running}


def stopped(stage: Stage, who: str) -> dict[str, Any]:
    return {"id": stage.vms.stopped}


def nothing_to_do(payload: dict[str, Any]) -> bool:
    """The VM is as asked already: no Proxmox task was started."""
    return payload["task"] is None and payload["virtualMachine"]["vdc"] == DEMO


def ids(items: list[dict[str, Any]]) -> list[str]:
    return sorted(item["id"] for item in items)


def seen_by_a_user(hosts: list[dict[str, Any]]) -> bool:
    """What only ADMIN may read of a host (its agent's address and version, its usage) is null."""
    hidden = ("endpoint", "agentVersion", "usage")
    return bool(hosts) and all(host[name] is None for host in hosts for name in hidden)


def own_vdc(who: str) -> str:
    """USERs aim the VDC mutations at VDC demo (alice's own); ADMIN, who may, at one that does not exist."""
    return NOTHING if who == ADMIN else DEMO


QUERY_ROWS: dict[str, Row] = {
    "me": Row(
        "{ me { subject roles vdcs } }",
        {
            ANONYMOUS: Unauthenticated(),
            OUTSIDER: Answered(lambda me: me["roles"] == ["USER"] and me["vdcs"] == [OTHER]),
            MEMBER: Answered(lambda me: me["roles"] == ["USER"] and me["vdcs"] == [DEMO]),
            ADMIN: Answered(lambda me: me["roles"] == ["ADMIN"] and me["vdcs"] == []),
            OWNER: Answered(lambda me: me["roles"] == ["ORG_OWNER", "USER"] and me["vdcs"] == []),
        },
    ),
    "vdcs": Row(
        "{ vdcs { id quota { vms } usage { vms } } }",
        {
            ANONYMOUS: Unauthenticated(),
            OUTSIDER: Answered(lambda vdcs: ids(vdcs) == [OTHER]),
            MEMBER: Answered(lambda vdcs: ids(vdcs) == [DEMO]),
            ADMIN: Answered(lambda vdcs: {DEMO, OTHER} <= set(ids(vdcs))),
            OWNER: Answered(lambda vdcs: not {DEMO, OTHER} & set(ids(vdcs))),
        },
    ),
    "vdc": Row(
        '{ vdc(id: "demo") { id usage { vms } } }',
        members(Answered(lambda vdc: vdc["id"] == DEMO), Missing()),
    ),
    "virtualMachines": Row(
        "{ virtualMachines(first: 500) { edges { node { id vdc } } } }",
        members(
            Answered(lambda page: page["edges"] and all(e["node"]["vdc"] == DEMO for e in page["edges"])),
            Forbidden(),  # bob names a VDC he is not a member of in the header
        ),
        vdc=DEMO,
    ),
    "virtualMachine": Row(
        "query($id: ID!) { virtualMachine(id: $id) { id vdc } }",
        members(Answered(lambda vm: vm["vdc"] == DEMO), Missing()),
        running,
    ),
    "virtualMachineUsage": Row(
        "query($id: ID!) { virtualMachineUsage(id: $id) { timeframe samples { time cpu } } }",
        members(
            Answered(lambda usage: usage["timeframe"] == "HOUR" and len(usage["samples"]) > 0), Missing()
        ),
        running,
    ),
    "task": Row(
        "query($id: ID!) { task(id: $id) { id status type } }",
        members(Answered(lambda task: task["type"] == "qmstart"), Missing()),
        lambda stage, who: {"id": stage.vms.task},
    ),
    "tasks": Row(
        "query($vm: ID) { tasks(first: 20, vm: $vm) { id type virtualMachineId } }",
        members(Answered(lambda found: len({task["virtualMachineId"] for task in found}) == 1), Missing()),
        lambda stage, who: {"vm": stage.vms.running},
    ),
    "snapshots": Row(
        "query($vm: ID!) { snapshots(vm: $vm) { name } }",
        members(Answered(lambda listed: isinstance(listed, list)), Missing()),
        lambda stage, who: {"vm": stage.vms.running},
    ),
    "securityGroups": Row(
        "{ securityGroups { name vdc } }",
        members(Answered(lambda groups: groups and all(g["vdc"] == DEMO for g in groups)), Forbidden()),
        vdc=DEMO,
    ),
    "networks": Row(
        "{ networks { id vdc } }",
        members(Answered(lambda found: found and all(n["vdc"] == DEMO for n in found)), Forbidden()),
        vdc=DEMO,
    ),
    "network": Row(
        "query($id: ID!) { network(id: $id) { id vdc } }",
        members(Answered(lambda network: network["vdc"] == DEMO), Missing()),
        lambda stage, who: {"id": alices_network(stage)},
    ),
    # ------------------------------------------------------------------ edge gateways of VDC demo
    # (zone-a has no external network here: demo has no gateway, and none can be made)
    "edgeGateways": Row(
        "{ edgeGateways { id vdc } }",
        members(Answered(lambda found: all(g["vdc"] == DEMO for g in found)), Forbidden()),
        vdc=DEMO,
    ),
    "edgeGateway": Row(
        f'{{ edgeGateway(zone: "{ZONE}") {{ id vdc }} }}', members(Missing(), Forbidden()), vdc=DEMO
    ),
    "publicIps": Row(
        "{ publicIps { address vdc } }",
        members(Answered(lambda found: all(p["vdc"] == DEMO for p in found)), Forbidden()),
        vdc=DEMO,
    ),
    "auditRecords": Row(
        "query($vdc: ID!) { auditRecords(vdc: $vdc, first: 5) { vdc operation } }",
        members(Answered(lambda found: all(r["vdc"] == DEMO for r in found)), Missing()),
        lambda stage, who: {"vdc": DEMO},
    ),
    # ------------------------------------------------------------------ Kubernetes clusters of VDC demo
    "kubernetesClusters": Row(
        "{ kubernetesClusters { name vdc } }",
        members(
            Answered(
                lambda found: (
                    ALICES_CLUSTER in [c["name"] for c in found] and all(c["vdc"] == DEMO for c in found)
                )
            ),
            Forbidden(),
        ),
        with_alices_cluster,
        vdc=DEMO,
    ),
    "kubernetesCluster": Row(
        "query($name: String!) { kubernetesCluster(name: $name) { name vdc } }",
        members(Answered(lambda cluster: cluster["vdc"] == DEMO), Forbidden()),
        lambda stage, who: {"name": alices_cluster(stage)},
        vdc=DEMO,
    ),
    "kubeconfig": Row(
        "query($cluster: String!) { kubeconfig(cluster: $cluster) { cluster kubeconfig } }",
        members(Answered(lambda issued: "client-certificate-data" in issued["kubeconfig"]), Forbidden()),
        lambda stage, who: {"cluster": alices_cluster(stage)},
        vdc=DEMO,
    ),
    "kubernetesVersions": Row(
        "{ kubernetesVersions { version image } }", everyone(Answered(lambda v: v is not None))
    ),
    "zones": Row("{ zones { id hosts { id } } }", everyone(Answered(bool))),
    "hosts": Row(
        "{ hosts { id endpoint agentVersion usage { cpu { cores } } } }",
        {
            ANONYMOUS: Unauthenticated(),
            OUTSIDER: Answered(seen_by_a_user),
            MEMBER: Answered(seen_by_a_user),
            ADMIN: Answered(lambda hosts: hosts and all(h["endpoint"] and h["usage"] for h in hosts)),
            OWNER: Answered(seen_by_a_user),
        },
    ),
    "computeProfiles": Row("{ computeProfiles { name } }", everyone(Answered(bool))),
    "storageProfiles": Row("{ storageProfiles { name } }", everyone(Answered(bool))),
    "images": Row("{ images { name } }", everyone(Answered(bool))),
    "hostDrain": Row(
        '{ hostDrain(zone: "zone-a", host: "pve1") { state } }',
        admin_only(Answered(lambda drain: drain is None)),  # pve1 is not being drained
    ),
    "hostJoinTokens": Row("{ hostJoinTokens { id zone } }", admin_only(Answered(lambda t: t is not None))),
    "agentReleaseChannel": Row(
        "{ agentReleaseChannel { versions servedVersion } }",
        admin_only(Answered(lambda channel: bool(channel["versions"]))),
    ),
    # ------------------------------------------------------------------ access (Zitadel)
    "users": Row(
        '{ users(search: "o") { username organization } }',
        access_managers(
            Answered(lambda found: {"bob", "olivia"} <= {u["username"] for u in found}),
            Answered(lambda found: found and all(u["username"] in ("olivia", "oscar") for u in found)),
        ),
    ),
    "vdcMembers": Row(
        f'{{ vdcMembers(vdc: "{DEMO}") {{ username }} }}',
        access_managers(Answered(lambda found: "alice" in {u["username"] for u in found}), Missing()),
    ),
    "organizations": Row(
        "{ organizations { organization vdcs } }",
        access_managers(Answered(lambda found: isinstance(found, list)), Answered(lambda found: not found)),
    ),
}

MUTATION_ROWS: dict[str, Row] = {
    # ------------------------------------------------------------------ VMs of VDC demo
    "createVirtualMachine": Row(
        "mutation($input: CreateVirtualMachineInput!) "
        f"{{ createVirtualMachine(input: $input) {VM_PAYLOAD} }}",
        members(Answered(lambda made: made["virtualMachine"]["vdc"] == DEMO), Forbidden()),
        lambda stage, who: {
            "input": {
                "name": stage.name(who, "made"),
                "computeProfile": SMALL,
                "storageProfile": STANDARD,
                "image": DEBIAN,
                "zone": ZONE,
            }
        },
        vdc=DEMO,  # the module's VM names are deleted after it (vm_names)
    ),
    "startVirtualMachine": Row(
        vm_action("startVirtualMachine"), members(Answered(nothing_to_do), Refused("NOT_FOUND")), running
    ),
    "stopVirtualMachine": Row(
        vm_action("stopVirtualMachine"), members(Answered(nothing_to_do), Refused("NOT_FOUND")), stopped
    ),
    "shutdownVirtualMachine": Row(
        vm_action("shutdownVirtualMachine"), members(Answered(nothing_to_do), Refused("NOT_FOUND")), stopped
    ),
    "rebootVirtualMachine": Row(
        vm_action("rebootVirtualMachine"), members(Refused("CONFLICT"), Refused("NOT_FOUND")), stopped
    ),
    "deleteVirtualMachine": Row(
        vm_action("deleteVirtualMachine"),
        members(Answered(lambda gone: gone["virtualMachine"]["status"] == "deleted"), Refused("NOT_FOUND")),
        # alice and admin delete a VM made for the cell; bob tries the module's running VM.
        lambda stage, who: {"id": stage.doomed_vm(who) if who in (MEMBER, ADMIN) else stage.vms.running},
    ),
    "resizeVirtualMachine": Row(
        "mutation($input: ResizeVirtualMachineInput!) "
        f"{{ resizeVirtualMachine(input: $input) {VM_PAYLOAD} }}",
        members(Answered(nothing_to_do), Refused("NOT_FOUND")),
        lambda stage, who: {"input": {"id": stage.vms.stopped, "diskGb": 20}},  # its size: nothing to do
    ),
    # ------------------------------------------------------------------ snapshots of VMs of VDC demo
    # ------------------------------------------------------------------ networks of VDC demo
    "createNetwork": Row(
        "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) "
        "{ network { id vdc } errors { code message } } }",
        members(Answered(lambda made: made["network"]["vdc"] == DEMO), Forbidden()),
        lambda stage, who: {"input": {"name": stage.name(who, "net"), "zone": ZONE, "cidr": "10.99.0.0/24"}},
        vdc=DEMO,
        cleanup=removed_network,
    ),
    "deleteNetwork": Row(
        "mutation($id: ID!) { deleteNetwork(id: $id) { errors { code } } }",
        members(Refused("NOT_FOUND"), Forbidden()),
        lambda stage, who: {"id": f"{ZONE}/{NOTHING}"},
        vdc=DEMO,
    ),
    "attachNetwork": Row(
        'mutation($vm: ID!) { attachNetwork(vm: $vm, network: "no-such-thing") { errors { code } } }',
        members(Refused("INVALID"), Refused("NOT_FOUND")),
        lambda stage, who: {"vm": stage.vms.running},
    ),
    "detachNetwork": Row(
        'mutation($vm: ID!) { detachNetwork(vm: $vm, network: "no-such-thing") { errors { code } } }',
        members(Refused("INVALID"), Refused("NOT_FOUND")),
        lambda stage, who: {"vm": stage.vms.running},
    ),
    # ------------------------------------------------------------------ Kubernetes clusters of VDC demo
    # A version not offered, a pool the cluster lacks: refused before anything is written.
    "createKubernetesCluster": Row(
        "mutation($input: CreateKubernetesClusterInput!) { createKubernetesCluster(input: $input) "
        "{ kubernetesCluster { name } errors { code } } }",
        members(Refused("INVALID"), Forbidden()),
        lambda stage, who: {
            "input": {
                "name": stage.name(who, "k8s"),
                "version": "v0.0.0",
                "network": f"{ZONE}/default",
                "nodePools": [{"name": "w", "computeProfile": SMALL, "storageProfile": STANDARD, "count": 1}],
            }
        },
        vdc=DEMO,
    ),
    "scaleNodePool": Row(
        'mutation($cluster: String!) { scaleNodePool(cluster: $cluster, pool: "nopool", count: 1) '
        "{ errors { code } } }",
        members(Refused("INVALID"), Forbidden()),
        lambda stage, who: {"cluster": alices_cluster(stage)},
        vdc=DEMO,
    ),
    "upgradeKubernetesCluster": Row(
        'mutation($cluster: String!) { upgradeKubernetesCluster(cluster: $cluster, version: "v0.0.0") '
        "{ errors { code } } }",
        members(Refused("INVALID"), Forbidden()),
        lambda stage, who: {"cluster": alices_cluster(stage)},
        vdc=DEMO,
    ),
    "deleteKubernetesCluster": Row(
        f'mutation {{ deleteKubernetesCluster(cluster: "{NOTHING}") {{ errors {{ code }} }} }}',
        members(Refused("NOT_FOUND"), Forbidden()),
        vdc=DEMO,
    ),
    # ------------------------------------------------------------------ edge gateways of VDC demo
    # zone-a has no external network here (INVALID naming the zone), and nobody's address is anybody's.
    "createEdgeGateway": Row(
        f'mutation {{ createEdgeGateway(zone: "{ZONE}") {{ errors {{ code }} }} }}',
        members(Refused("INVALID"), Forbidden()),
        vdc=DEMO,
    ),
    "deleteEdgeGateway": Row(
        f'mutation {{ deleteEdgeGateway(zone: "{ZONE}") {{ errors {{ code }} }} }}',
        members(Refused("NOT_FOUND"), Forbidden()),
        vdc=DEMO,
    ),
    "allocatePublicIp": Row(
        f'mutation {{ allocatePublicIp(zone: "{ZONE}") {{ publicIp {{ address }} errors {{ code }} }} }}',
        members(Refused("INVALID"), Forbidden()),
        vdc=DEMO,
    ),
    "releasePublicIp": Row(
        'mutation { releasePublicIp(address: "203.0.113.250") { errors { code } } }',
        members(Refused("INVALID"), Forbidden()),
        vdc=DEMO,
    ),
    "attachPublicIp": Row(
        'mutation { attachPublicIp(address: "203.0.113.250", toAddress: "10.0.0.9") { errors { code } } }',
        members(Refused("INVALID"), Forbidden()),
        vdc=DEMO,
    ),
    "detachPublicIp": Row(
        'mutation { detachPublicIp(address: "203.0.113.250") { errors { code } } }',
        members(Refused("INVALID"), Forbidden()),
        vdc=DEMO,
    ),
    "addPortForward": Row(
        "mutation($input: PortForwardInput!) { addPortForward(input: $input) { errors { code } } }",
        members(Refused("INVALID"), Forbidden()),
        lambda stage, who: {
            "input": {"publicIp": "203.0.113.250", "protocol": "tcp", "port": 8080, "toAddress": "10.0.0.9"}
        },
        vdc=DEMO,
    ),
    "removePortForward": Row(
        'mutation { removePortForward(publicIp: "203.0.113.250", protocol: "tcp", port: 8080) '
        "{ errors { code } } }",
        members(Refused("INVALID"), Forbidden()),
        vdc=DEMO,
    ),
    "addGatewayFirewallRule": Row(
        "mutation($input: GatewayFirewallRuleInput!) "
        f'{{ addGatewayFirewallRule(zone: "{ZONE}", input: $input) {{ errors {{ code }} }} }}',
        members(Refused("INVALID"), Forbidden()),
        lambda stage, who: {"input": {"direction": "in", "action": "allow"}},
        vdc=DEMO,
    ),
    "removeGatewayFirewallRule": Row(
        f'mutation {{ removeGatewayFirewallRule(zone: "{ZONE}", position: 0) {{ errors {{ code }} }} }}',
        members(Refused("INVALID"), Forbidden()),
        vdc=DEMO,
    ),
    "createSnapshot": Row(
        "mutation($vm: ID!, $name: String!) { createSnapshot(vm: $vm, name: $name) "
        "{ snapshot { vm name } errors { code message } } }",
        members(Answered(lambda taken: taken["snapshot"]["name"].startswith("iso-")), Refused("NOT_FOUND")),
        lambda stage, who: {"vm": stage.vms.stopped, "name": f"iso-{who}"},
        cleanup=removed_snapshot,
    ),
    # A snapshot the VM does not have: NOT_FOUND for everyone past authorization, nothing rolled back.
    "rollbackSnapshot": Row(
        'mutation($vm: ID!) { rollbackSnapshot(vm: $vm, name: "no-such-snapshot") { errors { code } } }',
        members(Refused("NOT_FOUND"), Refused("NOT_FOUND")),
        lambda stage, who: {"vm": stage.vms.stopped},
    ),
    "deleteSnapshot": Row(
        'mutation($vm: ID!) { deleteSnapshot(vm: $vm, name: "no-such-snapshot") { errors { code } } }',
        members(Refused("NOT_FOUND"), Refused("NOT_FOUND")),
        lambda stage, who: {"vm": stage.vms.stopped},
    ),
    # ------------------------------------------------------------------ security groups of VDC demo
    "createSecurityGroup": Row(
        "mutation($input: CreateSecurityGroupInput!) { createSecurityGroup(input: $input) "
        "{ securityGroup { name vdc } errors { code } } }",
        members(Answered(lambda made: made["securityGroup"]["vdc"] == DEMO), Forbidden()),
        lambda stage, who: {"input": {"name": stage.name(who, "sg")}},
        vdc=DEMO,
        cleanup=lambda stage, who: removed_group(stage, stage.name(who, "sg")),
    ),
    "updateSecurityGroup": Row(
        f'mutation {{ updateSecurityGroup(name: "{NOTHING}", input: {{description: "x"}}) '
        f"{CATALOG_ERRORS} }}",
        members(Refused("NOT_FOUND"), Forbidden()),
        vdc=DEMO,
    ),
    "deleteSecurityGroup": Row(
        f'mutation {{ deleteSecurityGroup(name: "{NOTHING}") {CATALOG_ERRORS} }}',
        members(Refused("NOT_FOUND"), Forbidden()),
        vdc=DEMO,
    ),
    # The running VM is put in default (where it is): harmless; bob's answer is the missing VM's.
    "assignSecurityGroups": Row(
        'mutation($vm: ID!) { assignSecurityGroups(vm: $vm, groups: ["default"]) '
        "{ securityGroups virtualMachine { vdc } errors { code message } } }",
        members(Answered(lambda done: done["securityGroups"] == ["default"]), Refused("NOT_FOUND")),
        lambda stage, who: {"vm": stage.vms.running},
    ),
    # ------------------------------------------------------------------ VDCs: ADMIN, ORG_OWNER within theirs
    "createVdc": Row(
        "mutation($input: VdcInput!) { createVdc(input: $input) { vdc { id } errors { code } } }",
        # olivia's organization has no allowance here: nothing may be made in it.
        access_managers(Answered(lambda made: made["vdc"] is not None), Refused("QUOTA_EXCEEDED")),
        lambda stage, who: {
            "input": {
                "id": stage.name(who, "vdc"),
                "zones": [ZONE],
                "quota": {"vcpus": 1, "memoryMib": 1024, "diskGb": 10, "vms": 1},
            }
        },
        cleanup=removed("deleteVdc", "id", "vdc"),
    ),
    "updateVdc": Row(
        # alice asks for the quota her VDC has already: harmless, were it allowed.
        "mutation($id: ID!) { updateVdc(id: $id, input: {quota: {vcpus: 16}}) "
        "{ vdc { id } errors { code } } }",
        access_managers(Refused("NOT_FOUND"), Refused("NOT_FOUND")),  # olivia: demo is not acme's
        lambda stage, who: {"id": own_vdc(who)},
    ),
    "deleteVdc": Row(
        "mutation($id: ID!) { deleteVdc(id: $id) { vdc { id } errors { code } } }",
        access_managers(Refused("NOT_FOUND"), Refused("NOT_FOUND")),
        lambda stage, who: {"id": own_vdc(who)},  # demo holds VMs: refused even were alice allowed
    ),
    # ------------------------------------------------------------------ access: ADMIN, ORG_OWNER in theirs
    # A user that does not exist, in VDC demo: NOT_FOUND for ADMIN (the user), for olivia (the VDC).
    "grantVdcMembership": Row(
        f'mutation {{ grantVdcMembership(user: "404404404", vdc: "{DEMO}") {CATALOG_ERRORS} }}',
        access_managers(Refused("NOT_FOUND"), Refused("NOT_FOUND")),
    ),
    "revokeVdcMembership": Row(
        f'mutation {{ revokeVdcMembership(user: "404404404", vdc: "{DEMO}") {CATALOG_ERRORS} }}',
        access_managers(Refused("NOT_FOUND"), Refused("NOT_FOUND")),
    ),
    "setPlatformRoles": Row(
        f'mutation {{ setPlatformRoles(user: "404404404", roles: ["USER"]) {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "setOrganizationAllowance": Row(
        'mutation { setOrganizationAllowance(organization: "404404404", '
        f"input: {{quota: {{vcpus: 1, memoryMib: 1, diskGb: 1, vms: 1}}}}) {CATALOG_ERRORS} }}",
        admin_only(Refused("NOT_FOUND")),
    ),
    "deleteOrganizationAllowance": Row(
        f'mutation {{ deleteOrganizationAllowance(organization: "404404404") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    # ------------------------------------------------------------------ hosts and enrollment: ADMIN only
    "createHostJoinToken": Row(
        f'mutation {{ createHostJoinToken(host: "isoprobe", zone: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("INVALID")),  # a token for a zone that does not exist: none is kept
    ),
    "cordonHost": Row(
        f'mutation {{ cordonHost(zone: "{ZONE}", host: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "uncordonHost": Row(
        f'mutation {{ uncordonHost(zone: "{ZONE}", host: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "drainHost": Row(
        f'mutation {{ drainHost(zone: "{ZONE}", host: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "removeHost": Row(
        f'mutation {{ removeHost(zone: "{ZONE}", host: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "createHost": Row(
        f'mutation {{ createHost(input: {{zone: "{NOTHING}", host: "isoprobe", endpoint: "127.0.0.1:9"}}) '
        f"{CATALOG_ERRORS} }}",
        admin_only(Refused("INVALID")),
    ),
    "updateHost": Row(
        f'mutation {{ updateHost(zone: "{ZONE}", host: "{NOTHING}", input: {{cordoned: true}}) '
        f"{CATALOG_ERRORS} }}",
        admin_only(Refused("NOT_FOUND")),
    ),
    # ------------------------------------------------------------------ agent releases: ADMIN only
    "pinAgentVersion": Row(
        f'mutation {{ pinAgentVersion(version: "0.0.0") {CATALOG_ERRORS} }}',
        admin_only(Refused("INVALID")),  # a version the channel has not published: nothing is pinned
    ),
    "unpinAgentVersion": Row(
        "mutation { unpinAgentVersion { pin { version } errors { code } } }",
        admin_only(Answered(lambda unpinned: unpinned["pin"] is None)),  # nothing was pinned
    ),
    "updateHostNow": Row(
        'mutation { updateHostNow(zone: "zone-a", host: "pve99") { update { outcome } errors { code } } }',
        admin_only(Refused("NOT_FOUND")),  # no such host: no agent is asked
    ),
    # ------------------------------------------------------------------ the catalog: ADMIN only
    "createComputeProfile": Row(
        "mutation($input: ComputeProfileInput!) { createComputeProfile(input: $input) "
        "{ computeProfile { name } errors { code } } }",
        admin_only(Answered(lambda made: made["computeProfile"] is not None)),
        lambda stage, who: {"input": {"name": stage.name(who, "cp"), "vcpus": 1, "memoryMib": 512}},
        cleanup=removed("deleteComputeProfile", "name", "cp"),
    ),
    "updateComputeProfile": Row(
        f'mutation {{ updateComputeProfile(name: "{NOTHING}", input: {{vcpus: 2}}) {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "deleteComputeProfile": Row(
        f'mutation {{ deleteComputeProfile(name: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "createStorageProfile": Row(
        "mutation($input: StorageProfileInput!) { createStorageProfile(input: $input) "
        "{ storageProfile { name } errors { code } } }",
        admin_only(Answered(lambda made: made["storageProfile"] is not None)),
        lambda stage, who: {
            "input": {
                "name": stage.name(who, "sp"),
                "storages": [{"zone": ZONE, "storage": "local-lvm"}],
                "defaultGb": 20,
                "minGb": 10,
                "maxGb": 100,
            }
        },
        cleanup=removed("deleteStorageProfile", "name", "sp"),
    ),
    "updateStorageProfile": Row(
        f'mutation {{ updateStorageProfile(name: "{NOTHING}", input: {{maxGb: 50}}) {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "deleteStorageProfile": Row(
        f'mutation {{ deleteStorageProfile(name: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "createImage": Row(
        "mutation($input: ImageInput!) { createImage(input: $input) { image { name } errors { code } } }",
        admin_only(Answered(lambda made: made["image"] is not None)),
        lambda stage, who: {
            "input": {
                "name": stage.name(who, "img"),
                "osFamily": "debian",
                "defaultUser": "debian",
                "minDiskGb": 3,
                **stage.image_source(),
            }
        },
        cleanup=removed("deleteImage", "name", "img"),
    ),
    "updateImage": Row(
        f'mutation {{ updateImage(name: "{NOTHING}", input: {{minDiskGb: 5}}) {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "deleteImage": Row(
        f'mutation {{ deleteImage(name: "{NOTHING}") {CATALOG_ERRORS} }}', admin_only(Refused("NOT_FOUND"))
    ),
    "createKubernetesVersion": Row(
        "mutation($input: KubernetesVersionInput!) { createKubernetesVersion(input: $input) "
        "{ kubernetesVersion { version } errors { code } } }",
        admin_only(Answered(lambda made: made["kubernetesVersion"] is not None)),
        lambda stage, who: {"input": {"version": PROBE_VERSION, "image": DEBIAN}},
        cleanup=removed_version,
    ),
    "updateKubernetesVersion": Row(
        f'mutation {{ updateKubernetesVersion(version: "{NOTHING}", input: {{image: "{DEBIAN}"}}) '
        f"{CATALOG_ERRORS} }}",
        admin_only(Refused("NOT_FOUND")),
    ),
    "deleteKubernetesVersion": Row(
        f'mutation {{ deleteKubernetesVersion(version: "{NOTHING}") {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "createZone": Row(
        "mutation($input: ZoneInput!) { createZone(input: $input) { zone { id } errors { code } } }",
        admin_only(Answered(lambda made: made["zone"] is not None)),
        lambda stage, who: {"input": {"id": stage.name(who, "zone")}},
        cleanup=removed("deleteZone", "id", "zone"),
    ),
    "updateZone": Row(
        f'mutation {{ updateZone(id: "{NOTHING}", input: {{name: "Nowhere"}}) {CATALOG_ERRORS} }}',
        admin_only(Refused("NOT_FOUND")),
    ),
    "deleteZone": Row(
        f'mutation {{ deleteZone(id: "{NOTHING}") {CATALOG_ERRORS} }}', admin_only(Refused("NOT_FOUND"))
    ),
}

ROWS: dict[str, dict[str, Row]] = {"Query": QUERY_ROWS, "Mutation": MUTATION_ROWS}


# ------------------------------------------------------------------------------------------ the cells


@functools.cache
def committed_schema() -> GraphQLSchema:
    return build_schema(SCHEMA_FILE.read_text())


def schema_fields() -> list[tuple[str, str]]:
    """(type, field) of every query and mutation of the committed schema."""
    schema = committed_schema()
    roots = [("Query", schema.query_type), ("Mutation", schema.mutation_type)]
    return [(kind, name) for kind, root in roots if root is not None for name in root.fields]


CELLS = [(kind, name, who) for kind, name in schema_fields() for who in CALLERS]


def ask(api: GraphQL, who: str, row: Row, variables: dict[str, Any]) -> Answer:
    headers = {} if who == ANONYMOUS else {"Authorization": f"Bearer {api.token(who)}"}
    if row.vdc is not None:
        headers["FlexPlane-VDC-ID"] = row.vdc
    return api.raw(row.document, headers=headers, variables=variables, timeout=120)


def asked_field(document: str) -> str:
    (operation,) = parse(document).definitions
    assert isinstance(operation, OperationDefinitionNode)
    (selection,) = operation.selection_set.selections
    name: str = selection.name.value  # type: ignore[attr-defined]  # a field, checked by the caller
    return name


@pytest.fixture(scope="module")
def stage(api: GraphQL, world: World, alices_vms: AlicesVms) -> Stage:
    return Stage(api, world, alices_vms)


@pytest.fixture(scope="module")
def tally(record_figure: RecordFigure) -> Iterator[list[str]]:
    """The cells that held, for the summary."""
    held: list[str] = []
    yield held
    fields = len(schema_fields())
    record_figure(SUITE, "GraphQL matrix: fields x callers", f"{fields} x {len(CALLERS)}")
    record_figure(SUITE, "GraphQL matrix: cells that held", f"{len(held)} of {len(CELLS)}")


@pytest.mark.parametrize(("kind", "name", "who"), CELLS, ids=[f"{k}.{n}-{w}" for k, n, w in CELLS])
def test_each_caller_gets_what_the_matrix_says(
    stage: Stage, tally: list[str], kind: str, name: str, who: str
) -> None:
    row = ROWS[kind].get(name)
    if row is None:
        pytest.fail(
            f"schema.graphql has {kind}.{name}, which the isolation matrix has no row for: add "
            f"{kind.upper()}_ROWS[{name!r}] to {Path(__file__).name}, with its document and the outcome "
            f"for each of {', '.join(CALLERS)}"
        )
    assert asked_field(row.document) == name, f"the row of {kind}.{name} asks for another field"
    try:
        answer = ask(stage.api, who, row, row.variables(stage, who))
        row.cells[who].check(answer, name)
    finally:
        if row.cleanup is not None:
            row.cleanup(stage, who)
    tally.append(f"{kind}.{name}-{who}")


def test_the_matrix_has_no_row_for_a_field_the_schema_does_not_have() -> None:
    in_schema = set(schema_fields())
    rows = {(kind, name) for kind, named in ROWS.items() for name in named}
    stale = sorted(rows - in_schema)
    assert stale == [], f"rows for fields schema.graphql does not have (remove them): {stale}"


def test_every_row_says_what_each_caller_gets() -> None:
    for kind, rows in ROWS.items():
        for name, row in rows.items():
            assert set(row.cells) == set(CALLERS), f"{kind}.{name}: an outcome for each of {CALLERS}"
            assert isinstance(row.cells[ANONYMOUS], Unauthenticated), f"{kind}.{name}: anonymous gets 401"


def test_the_committed_schema_is_the_one_the_orchestrator_serves() -> None:
    """The matrix is made from the file; the file must be what runs (tests/orchestrator/test_schema.py
    keeps it in sync; this says so here, where a drift would leave fields out of the matrix)."""
    served = schema.graphql_schema
    for kind, root in (("Query", served.query_type), ("Mutation", served.mutation_type)):
        assert root is not None
        assert {name for k, name in schema_fields() if k == kind} == set(root.fields), kind
