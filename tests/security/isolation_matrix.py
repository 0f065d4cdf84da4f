"""The isolation matrix's parts (``tests/security/test_isolation.py``): the callers, the outcome a cell
expects (``Outcome``), the stage the cells play on (``Stage``: the world and alice's VMs), a field's row
(``Row``: its document, the outcome for each caller, its variables and clean-up), and the helpers the
rows (``isolation_queries``, ``isolation_mutations``) share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from devstack.world import World
from tests.apikit import Answer, GraphQL
from tests.orchestrator.clusterkit import staged_cluster
from tests.security.conftest import AlicesVms
from tests.vmkit import create

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


# ------------------------------------------------------------------------------------------ volumes

VOLUME_PAYLOAD = "{ volume { id vdc status attachedTo } task { id } errors { code message } }"
_CREATE_VOLUME = (
    'mutation($name: String!, $near: ID!) { createVolume(name: $name, storageProfile: "standard", '
    "sizeGb: 10, near: $near) { volume { id } errors { code message } } }"
)


def volume_name(stage: Stage, who: str) -> str:
    return stage.name(who, "vol")


def fresh_volume(stage: Stage, who: str) -> dict[str, Any]:
    """``{"id": ...}`` of a volume of VDC demo made for the cell (by alice, beside the module's stopped VM,
    so that it may be attached to it); ``removed_volume`` takes it away."""
    answer = stage.api(
        _CREATE_VOLUME,
        user=MEMBER,
        vdc=DEMO,
        variables={"name": volume_name(stage, who), "near": stage.vms.stopped},
    )
    made = answer.data["createVolume"]
    assert made["errors"] == [], made["errors"]
    return {"id": made["volume"]["id"]}


def removed_volume(stage: Stage, who: str) -> None:
    """Cleanup: the cell's volume detached and deleted (as admin), if there is one."""
    listed = stage.api("{ volumes { id name vdc } }", user=ADMIN).data["volumes"]
    for volume in listed:
        if volume["vdc"] == DEMO and volume["name"] == volume_name(stage, who):
            for mutation in ("detachVolume", "deleteVolume"):
                document = f"mutation($id: ID!) {{ {mutation}(id: $id) {{ errors {{ code }} }} }}"
                stage.api(document, user=ADMIN, variables={"id": volume["id"]})


SNAPSHOT_PAYLOAD = "{ snapshot { id vdc status } task { id } errors { code message } }"
_TAKE = (
    "mutation($id: ID!, $name: String!) { createVolumeSnapshot(volume: $id, name: $name) "
    "{ snapshot { id } errors { code message } } }"
)


def fresh_volume_snapshot(stage: Stage, who: str) -> dict[str, Any]:
    """``{"id": ...}`` of a snapshot of VDC demo made for the cell (by alice, of the cell's fresh volume,
    under the volume's name); ``removed_volume_snapshot`` takes both away."""
    volume = fresh_volume(stage, who)
    variables = {"id": volume["id"], "name": volume_name(stage, who)}
    made = stage.api(_TAKE, user=MEMBER, vdc=DEMO, variables=variables).data["createVolumeSnapshot"]
    assert made["errors"] == [], made["errors"]
    return {"id": made["snapshot"]["id"]}


def removed_volume_snapshot(stage: Stage, who: str) -> None:
    """Cleanup: the cell's snapshot and volumes (the snapshot's, one made from it) deleted (as admin)."""
    listed = stage.api("{ volumeSnapshots { id name vdc } }", user=ADMIN).data["volumeSnapshots"]
    for snapshot in listed:
        if snapshot["vdc"] == DEMO and snapshot["name"] == volume_name(stage, who):
            document = "mutation($id: ID!) { deleteVolumeSnapshot(id: $id) { errors { code } } }"
            stage.api(document, user=ADMIN, variables={"id": snapshot["id"]})
    removed_volume(stage, who)
    removed_volume(stage, f"{who}-copy")


def volume_as_it_was(payload: dict[str, Any]) -> bool:
    """The volume is as asked already: no Proxmox task was started."""
    return payload["task"] is None and payload["volume"]["vdc"] == DEMO


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
