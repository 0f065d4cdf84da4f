"""Tenant isolation: another VDC's id tells nothing (OWASP API Security Top 10: API1 BOLA).

For each object a VDC owns (a VM, a task, the VDC itself), bob, USER of VDC other, sends the id of
one of alice's (VDC demo) and an id that does not exist, in every query and mutation that takes such
an id (an argument, or the FlexPlane-VDC-ID header), in alias batches and in filters. Both answers
are the same: HTTP status, error codes, messages and data, once the id itself is blanked out; their
times are of the same order of magnitude (the ratios are in the summary); Proxmox sees no write, and
alice's VMs stay as they were. The times are taken in one round by default, in ROUNDS under
``make test-full`` or when one round is out of bounds (``tests.security.conftest.Timings``).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from graphql import FieldNode, GraphQLInputObjectType, OperationDefinitionNode, get_named_type, parse

from devstack.world import World
from orchestrator.graphql.schema import schema
from orchestrator.services.tasks import decode_task_id, encode_task_id
from tests.apikit import Answer, GraphQL
from tests.orchestrator.clusterkit import staged_cluster
from tests.promises import RecordFigure
from tests.security.conftest import AlicesVms, ProxmoxCalls, Timings
from tests.vmkit import DEBIAN, SMALL, STANDARD, create, fake_vm

pytestmark = pytest.mark.promise("isolation")

SUITE = "isolation"
OUTSIDER = "bob"
# Rounds of (another VDC's id, an id that does not exist), in alternating order, for the timing: all of
# them under make test-full, or when one round's ratio is out of bounds.
ROUNDS = 5
# "The same order of magnitude": neither answer takes ten times as long as the other.
MAGNITUDE = 10.0
VM_PAYLOAD = "{ virtualMachine { id status } task { id } errors { code message field } }"
# A Kubernetes cluster of VDC demo's, staged for the module (no node pools: it holds no quota).
ALICES_CLUSTER = "iso-k8s"


@dataclass(frozen=True)
class Probe:
    """One way of using an id: a document taking it as ``$id`` (or the header, ``in_header``)."""

    kind: str  # what the id names: "VM", "task", "VDC"
    document: str
    in_header: bool = False
    # Which of alice's objects is the foreign id (for VMs: the one an action would leave as it is).
    foreign: Callable[[AlicesVms], str] = field(default=lambda vms: vms.stopped)
    variables: Callable[[str], dict[str, Any]] = field(default=lambda ident: {"id": ident})

    @property
    def fields(self) -> set[str]:
        """The fields the document asks for at its top (an alias batch's, once each)."""
        (operation,) = parse(self.document).definitions
        assert isinstance(operation, OperationDefinitionNode)
        return {s.name.value for s in operation.selection_set.selections if isinstance(s, FieldNode)}


def running(vms: AlicesVms) -> str:
    return vms.running


def vm_action(mutation: str, extra: str = "") -> str:
    return f"mutation($id: ID!) {{ {mutation}(id: $id{extra}) {VM_PAYLOAD} }}"


def create_input(name: str) -> dict[str, Any]:
    return {
        "input": {
            "name": name,
            "computeProfile": SMALL,
            "storageProfile": STANDARD,
            "image": DEBIAN,
            "zone": "zone-a",
        }
    }


def header_probe(document: str, variables: Callable[[str], dict[str, Any]] = lambda ident: {}) -> Probe:
    """A probe naming VDC demo, alice's, in the header; the document takes no id (or ``variables``)."""
    return vdc_probe(document, in_header=True, variables=variables)


def network_probe(document: str, **options: Any) -> Probe:
    """A probe whose foreign id is VDC demo's default network of zone-a."""
    return Probe("network", document, foreign=lambda vms: vms.network, **options)


def group_probe(document: str, **options: Any) -> Probe:
    """A probe whose foreign id is the name of a security group of VDC demo's."""
    return Probe("security group", document, foreign=lambda vms: vms.security_group, **options)


def cluster_probe(document: str, **options: Any) -> Probe:
    """A probe whose foreign id is the name of a Kubernetes cluster of VDC demo's (staged for the module)."""
    return Probe("Kubernetes cluster", document, foreign=lambda vms: ALICES_CLUSTER, **options)


def volume_probe(document: str, **options: Any) -> Probe:
    """A probe whose foreign id is a volume of VDC demo's (available, made for the module)."""
    return Probe("volume", document, foreign=lambda vms: vms.volume, **options)


def snapshot_probe(document: str, **options: Any) -> Probe:
    """A probe whose foreign id is a snapshot of a volume of VDC demo's (made for the module)."""
    return Probe("volume snapshot", document, foreign=lambda vms: vms.volume_snapshot, **options)


def vdc_probe(document: str, **options: Any) -> Probe:
    """A probe whose foreign id is VDC demo, alice's."""
    return Probe("VDC", document, foreign=lambda vms: "demo", **options)


PROBES: dict[str, Probe] = {
    # ------------------------------------------------------------------ a VM's id
    "virtualMachine": Probe("VM", "query($id: ID!) { virtualMachine(id: $id) { id name } }"),
    "virtualMachine, bob's VDC in the header": Probe(
        "VM", "query($id: ID!) { virtualMachine(id: $id) { id name } }"
    ),
    "virtualMachine in an alias batch": Probe(
        "VM",
        "query($id: ID!) { mine: vdcs { id } a: virtualMachine(id: $id) { id } "
        "b: virtualMachine(id: $id) { name status } }",
    ),
    "startVirtualMachine": Probe("VM", vm_action("startVirtualMachine"), foreign=running),
    "virtualMachineUsage": Probe(
        "VM", "query($id: ID!) { virtualMachineUsage(id: $id) { samples { time } } }", foreign=running
    ),
    "attachNetwork": Probe(
        "VM",
        'mutation($id: ID!) { attachNetwork(vm: $id, network: "default") { nic { key } errors { code } } }',
    ),
    "detachNetwork": Probe(
        "VM",
        'mutation($id: ID!) { detachNetwork(vm: $id, network: "default") { nic { key } errors { code } } }',
    ),
    "snapshots": Probe("VM", "query($id: ID!) { snapshots(vm: $id) { name } }"),
    "createSnapshot": Probe(
        "VM",
        'mutation($id: ID!) { createSnapshot(vm: $id, name: "probe") { snapshot { name } errors { code } } }',
    ),
    "rollbackSnapshot": Probe(
        "VM",
        'mutation($id: ID!) { rollbackSnapshot(vm: $id, name: "probe") { task { id } errors { code } } }',
    ),
    "deleteSnapshot": Probe(
        "VM", 'mutation($id: ID!) { deleteSnapshot(vm: $id, name: "probe") { task { id } errors { code } } }'
    ),
    "auditRecords": vdc_probe("query($id: ID) { auditRecords(vdc: $id) { operation } }"),
    "assignSecurityGroups": Probe(
        "VM",
        'mutation($id: ID!) { assignSecurityGroups(vm: $id, groups: ["default"]) '
        "{ securityGroups errors { code message } } }",
    ),
    # ------------------------------------------------------------------ a volume's id
    "volume": volume_probe("query($id: ID!) { volume(id: $id) { id name } }"),
    "attachVolume to bob's own VM": volume_probe(
        'mutation($id: ID!) { attachVolume(id: $id, vm: "zone-a/102") { volume { id } errors { code } } }'
    ),
    "detachVolume": volume_probe(
        "mutation($id: ID!) { detachVolume(id: $id) { volume { id } errors { code } } }"
    ),
    "resizeVolume": volume_probe(
        "mutation($id: ID!) { resizeVolume(id: $id, sizeGb: 20) { volume { id } errors { code } } }"
    ),
    "deleteVolume": volume_probe(
        "mutation($id: ID!) { deleteVolume(id: $id) { volume { id } errors { code } } }"
    ),
    "createVolumeSnapshot": volume_probe(
        'mutation($id: ID!) { createVolumeSnapshot(volume: $id, name: "bob-probe") '
        "{ snapshot { id } errors { code } } }"
    ),
    "volumeSnapshots of alice's volume": volume_probe(
        "query($id: ID!) { volumeSnapshots(volume: $id) { id } }"
    ),
    # ------------------------------------------------------------------ a volume snapshot's id
    "volumeSnapshot": snapshot_probe("query($id: ID!) { volumeSnapshot(id: $id) { id name } }"),
    "deleteVolumeSnapshot": snapshot_probe(
        "mutation($id: ID!) { deleteVolumeSnapshot(id: $id) { snapshot { id } errors { code } } }"
    ),
    "createVolumeFromSnapshot": snapshot_probe(
        'mutation($id: ID!) { createVolumeFromSnapshot(snapshot: $id, name: "bob-probe") '
        "{ volume { id } errors { code } } }"
    ),
    "createVolume beside alice's VM": Probe(
        "VM",
        'mutation($id: ID!) { createVolume(name: "bob-probe", storageProfile: "standard", sizeGb: 10, '
        "near: $id) { volume { id } errors { code message field } } }",
    ),
    # ------------------------------------------------------------------ a security group's name
    "updateSecurityGroup, bob's VDC in the header": group_probe(
        'mutation($id: String!) { updateSecurityGroup(name: $id, input: {description: "x"}) '
        "{ securityGroup { name } errors { code message } } }"
    ),
    "deleteSecurityGroup, bob's VDC in the header": group_probe(
        "mutation($id: String!) { deleteSecurityGroup(name: $id) "
        "{ securityGroup { name } errors { code message } } }"
    ),
    "assignSecurityGroups of bob's own VM to alice's group": group_probe(
        'mutation($id: String!) { assignSecurityGroups(vm: "zone-a/102", groups: [$id]) '
        "{ securityGroups errors { code message } } }"
    ),
    # ------------------------------------------------------------------ a network's id
    "network": network_probe("query($id: ID!) { network(id: $id) { id name cidr } }"),
    "deleteNetwork, bob's VDC in the header": network_probe(
        "mutation($id: ID!) { deleteNetwork(id: $id) { network { id } errors { code } } }"
    ),
    "createVirtualMachine on alice's network": network_probe(
        'mutation($id: String!) { createVirtualMachine(input: {name: "bob-lands", computeProfile: "small", '
        'storageProfile: "standard", image: "debian-12", zone: "zone-a", networks: [{network: $id}]}) '
        "{ virtualMachine { id } errors { code field } } }"
    ),
    "stopVirtualMachine": Probe("VM", vm_action("stopVirtualMachine")),
    "shutdownVirtualMachine": Probe("VM", vm_action("shutdownVirtualMachine", ", timeout: 5")),
    "rebootVirtualMachine": Probe("VM", vm_action("rebootVirtualMachine")),
    "deleteVirtualMachine": Probe("VM", vm_action("deleteVirtualMachine")),
    "resizeVirtualMachine": Probe(
        "VM",
        f"mutation($id: ID!) {{ resizeVirtualMachine(input: {{id: $id, diskGb: 20}}) {VM_PAYLOAD} }}",
    ),
    "VM mutations in an alias batch": Probe(
        "VM",
        f"mutation($id: ID!) {{ a: startVirtualMachine(id: $id) {VM_PAYLOAD} "
        f"b: resizeVirtualMachine(input: {{id: $id, diskGb: 20}}) {VM_PAYLOAD} }}",
        foreign=running,
    ),
    "virtualMachines filtered by a VM's name": Probe(
        "VM",
        "query($filter: VirtualMachineFilter) { virtualMachines(filter: $filter) { edges { node { id } } } }",
        foreign=lambda vms: vms.name,
        variables=lambda name: {"filter": {"nameContains": name}},
    ),
    "tasks of a VM": Probe("VM", "query($id: ID!) { tasks(vm: $id) { id type } }"),
    # ------------------------------------------------------------------ a task's id
    "task": Probe("task", "query($id: ID!) { task(id: $id) { id status log } }", foreign=lambda v: v.task),
    "task in an alias batch": Probe(
        "task",
        "query($id: ID!) { mine: me { vdcs } a: task(id: $id) { id } b: task(id: $id) { status } }",
        foreign=lambda vms: vms.task,
    ),
    # ------------------------------------------------------------------ a VDC's id
    "vdc": vdc_probe("query($id: ID!) { vdc(id: $id) { id name usage { vms } } }"),
    "vdcMembers": vdc_probe("query($id: ID!) { vdcMembers(vdc: $id) { id } }"),
    "serviceAccounts": vdc_probe("query($id: ID!) { serviceAccounts(vdc: $id) { id } }"),
    "createServiceAccount": vdc_probe(
        'mutation($id: ID!) { createServiceAccount(vdc: $id, name: "probe", '
        'expiresAt: "2099-01-01T00:00:00Z") '
        "{ key errors { code message field } } }"
    ),
    "grantVdcMembership": vdc_probe(
        'mutation($id: ID!) { grantVdcMembership(user: "404404404", vdc: $id) { errors { code message } } }'
    ),
    "revokeVdcMembership": vdc_probe(
        'mutation($id: ID!) { revokeVdcMembership(user: "404404404", vdc: $id) { errors { code message } } }'
    ),
    "vdc in an alias batch": vdc_probe(
        'query($id: ID!) { mine: vdc(id: "other") { id } a: vdc(id: $id) { id } '
        "b: vdc(id: $id) { quota { vms } } }"
    ),
    "virtualMachines, the VDC in the header": header_probe("{ virtualMachines { edges { node { id } } } }"),
    "virtualMachine of bob's own, the VDC in the header": header_probe(
        'query { virtualMachine(id: "zone-a/102") { id } }'
    ),
    "tasks, the VDC in the header": header_probe("{ tasks { id } }"),
    "securityGroups, the VDC in the header": header_probe("{ securityGroups { name } }"),
    "createSecurityGroup, the VDC in the header": header_probe(
        'mutation { createSecurityGroup(input: {name: "bob-probe"}) '
        "{ securityGroup { name } errors { code } } }"
    ),
    "createVirtualMachine, the VDC in the header": header_probe(
        "mutation($input: CreateVirtualMachineInput!) "
        f"{{ createVirtualMachine(input: $input) {VM_PAYLOAD} }}",
        variables=lambda ident: create_input("bob-probe"),
    ),
    "updateVdc": vdc_probe(
        "mutation($id: ID!) { updateVdc(id: $id, input: {quota: {vcpus: 16}}) "
        "{ vdc { id } errors { code } } }"
    ),
    "deleteVdc": vdc_probe("mutation($id: ID!) { deleteVdc(id: $id) { vdc { id } errors { code } } }"),
    "createVdc": vdc_probe(
        "mutation($id: ID!) { createVdc(input: "
        "{id: $id, quota: {vcpus: 1, memoryMib: 512, diskGb: 1, vms: 1}}) { vdc { id } errors { code } } }"
    ),
    # A new offering allowed in a VDC as it is created (ADMIN's): bob learns nothing of alice's VDC by it.
    "createComputeProfile": vdc_probe(
        "mutation($id: ID!) { createComputeProfile(input: "
        '{name: "bob-probe", vcpus: 1, memoryMib: 512, allowInVdcs: [$id]}) '
        "{ computeProfile { name } errors { code } } }"
    ),
    "createStorageProfile": vdc_probe(
        "mutation($id: ID!) { createStorageProfile(input: "
        '{name: "bob-probe", storages: [{zone: "zone-a", storage: "local-lvm"}], defaultGb: 8, minGb: 1, '
        "maxGb: 16, allowInVdcs: [$id]}) { storageProfile { name } errors { code } } }"
    ),
    "createImage": vdc_probe(
        "mutation($id: ID!) { createImage(input: "
        '{name: "bob-probe", osFamily: "debian", sourceUrl: "https://images.example.com/b.qcow2", '
        'checksum: "sha256:' + "0" * 64 + '", defaultUser: "debian", minDiskGb: 1, allowInVdcs: [$id]}) '
        "{ image { name } errors { code } } }"
    ),
    # ------------------------------------------------------------------ a Kubernetes cluster's name
    "kubernetesCluster, bob's VDC in the header": cluster_probe(
        "query($id: String!) { kubernetesCluster(name: $id) { name vdc } }"
    ),
    "kubeconfig, bob's VDC in the header": cluster_probe(
        "query($id: String!) { kubeconfig(cluster: $id) { cluster kubeconfig } }"
    ),
    "scaleNodePool, bob's VDC in the header": cluster_probe(
        'mutation($id: String!) { scaleNodePool(cluster: $id, pool: "workers", count: 1) '
        "{ kubernetesCluster { name } errors { code message } } }"
    ),
    "upgradeKubernetesCluster, bob's VDC in the header": cluster_probe(
        'mutation($id: String!) { upgradeKubernetesCluster(cluster: $id, version: "v0.0.0") '
        "{ kubernetesCluster { name } errors { code field } } }"
    ),
    "deleteKubernetesCluster, bob's VDC in the header": cluster_probe(
        "mutation($id: String!) { deleteKubernetesCluster(cluster: $id) "
        "{ kubernetesCluster { name } errors { code message } } }"
    ),
    "restoreKubernetesCluster, bob's VDC in the header": cluster_probe(
        "mutation($id: String!) { restoreKubernetesCluster(cluster: $id) "
        "{ kubernetesCluster { name } errors { code message } } }"
    ),
    "kubernetesClusters, the VDC in the header": header_probe("{ kubernetesClusters { name } }"),
    "createKubernetesCluster, the VDC in the header": header_probe(
        "mutation($input: CreateKubernetesClusterInput!) { createKubernetesCluster(input: $input) "
        "{ kubernetesCluster { name } errors { code } } }",
        variables=lambda ident: {
            "input": {
                "name": "bob-probe",
                "version": "v0.0.0",
                "network": "zone-a/default",
                "nodePools": [{"name": "w", "computeProfile": SMALL, "storageProfile": STANDARD, "count": 1}],
            }
        },
    ),
}
# The header variant above sends bob's own VDC in the header: not an id of the probe.
HEADER_OF_ITS_OWN = {
    "virtualMachine, bob's VDC in the header": "other",
    "kubernetesCluster, bob's VDC in the header": "other",
    "kubeconfig, bob's VDC in the header": "other",
    "scaleNodePool, bob's VDC in the header": "other",
    "upgradeKubernetesCluster, bob's VDC in the header": "other",
    "deleteKubernetesCluster, bob's VDC in the header": "other",
    "restoreKubernetesCluster, bob's VDC in the header": "other",
    "deleteNetwork, bob's VDC in the header": "other",
    "createVirtualMachine on alice's network": "other",
    "createVolume beside alice's VM": "other",
    "updateSecurityGroup, bob's VDC in the header": "other",
    "deleteSecurityGroup, bob's VDC in the header": "other",
}

# Fields taking an id of something no VDC owns: zones are the platform's.
# Ids of what no VDC owns: zones; users and organizations (Zitadel's; tests/security/test_isolation.py).
NOT_OWNED_BY_A_VDC = {
    "createZone",
    "updateZone",
    "deleteZone",
    "setPlatformRoles",
    "setOrganizationAllowance",
    "deleteOrganizationAllowance",
}
# A VDC's objects whose ids are probed in process, with an object of alice's made there
# (tests/orchestrator/api/light/test_service_accounts.py): the world has no service account of hers.
PROBED_IN_PROCESS = {"revokeServiceAccount"}
# Fields scoped by the FlexPlane-VDC-ID header rather than an id argument.
SCOPED_BY_THE_HEADER = {
    "virtualMachines",
    "tasks",
    "createVirtualMachine",
    "securityGroups",
    "createSecurityGroup",
}


@dataclass(frozen=True)
class Ids:
    """For one probe: alice's id, and the ids that do not exist to compare it with."""

    foreign: str
    missing: list[str]


def missing_ids(probe: Probe, vms: AlicesVms) -> list[str]:
    """Ids that do not exist, as bob could make them up."""
    if probe.kind == "VM":
        return ["no-such-vm"] if probe.foreign(vms) == vms.name else ["zone-a/99999"]
    if probe.kind == "task":
        return ["no-such-task", a_task_of_bobs_that_does_not_exist(vms.task)]
    if probe.kind == "network":
        return ["zone-a/fpnosuch"]
    if probe.kind == "security group":
        return ["no-such-group"]
    if probe.kind == "Kubernetes cluster":
        return ["no-such-cluster"]
    return ["nowhere"]


def signed_for_bob(vms: AlicesVms) -> set[str]:
    """The ids of ``missing_ids`` that carry the API's signature for bob's VDC (bob cannot forge them)."""
    return {a_task_of_bobs_that_does_not_exist(vms.task)}


def a_task_of_bobs_that_does_not_exist(task_id: str) -> str:
    """A well-formed task id of VDC other (signed as the API signs them) naming no Proxmox task."""
    zone, upid, _ = decode_task_id(task_id)
    parts = upid.raw.split(":")
    parts[2] = "7FFFFFF0"  # a process id Proxmox never gave this task
    return encode_task_id(zone, ":".join(parts), "other")


# ------------------------------------------------------------------------------------------ asking


def ask(api: GraphQL, probe: Probe, ident: str, name: str) -> tuple[Answer, float]:
    headers = {"Authorization": f"Bearer {api.token(OUTSIDER)}"}
    if probe.in_header:
        headers["FlexPlane-VDC-ID"] = ident
    elif name in HEADER_OF_ITS_OWN:
        headers["FlexPlane-VDC-ID"] = HEADER_OF_ITS_OWN[name]
    started = time.monotonic()
    answer = api.raw(probe.document, headers=headers, variables=probe.variables(ident))
    return answer, time.monotonic() - started


def blanked(answer: Answer, ident: str) -> tuple[int, Any]:
    """The answer as bob sees it, with the id he sent blanked out."""
    return answer.status, json.loads(json.dumps(answer.body, sort_keys=True).replace(ident, "<id>"))


@pytest.fixture(scope="module")
def ratios(record_figure: RecordFigure) -> Iterator[dict[str, dict[str, float]]]:
    """Median time of alice's id over that of an id that does not exist, per kind and probe."""
    found: dict[str, dict[str, float]] = {}
    yield found
    for kind, by_probe in found.items():
        values = list(by_probe.values())
        record_figure(
            SUITE,
            f"{kind} ids: time of another VDC's / of none",
            f"median {statistics.median(values):.2f}, from {min(values):.2f} to {max(values):.2f} "
            f"({len(values)} probes)",
        )


def alices_vms_as_they_were(world: World, vms: AlicesVms) -> None:
    for ident, status in ((vms.running, "running"), (vms.stopped, "stopped")):
        vm = fake_vm(world, ident)
        assert vm is not None, ident
        assert (vm["status"], vm["lock"]) == (status, None), (ident, vm)


@pytest.fixture(scope="module")
def alices_cluster(world: World) -> str:
    return staged_cluster(world, "demo", ALICES_CLUSTER)


@pytest.mark.parametrize("name", list(PROBES))
def test_another_vdcs_id_answers_as_one_that_does_not_exist(
    alices_cluster: str,
    api: GraphQL,
    world: World,
    alices_vms: AlicesVms,
    proxmox_calls: ProxmoxCalls,
    ratios: dict[str, dict[str, float]],
    timing_full: bool,
    name: str,
) -> None:
    probe = PROBES[name]
    foreign = probe.foreign(alices_vms)
    for missing in missing_ids(probe, alices_vms):
        timings = Timings(lambda ident: ask(api, probe, ident, name), foreign, missing)
        answers = timings.take(ROUNDS if timing_full else 1).answers

        assert answers[foreign].status < 500, answers[foreign].body
        assert blanked(answers[foreign], foreign) == blanked(answers[missing], missing)
        if missing in signed_for_bob(alices_vms):
            # Only the API can sign an id: bob's answer for this one costs a Proxmox call that alice's id
            # never gets (it is refused on its signature), whether her task exists or not, so its timing
            # tells him nothing about her. The ids bob can make up are timed against hers.
            continue
        ratio = timings.ratio_within(MAGNITUDE, ROUNDS)
        assert 1 / MAGNITUDE < ratio < MAGNITUDE, f"{name}: {ratio:.2f} ({timings.times})"
        ratios.setdefault(probe.kind, {})[f"{name} vs {missing[:20]}"] = ratio

    assert proxmox_calls.writes_since_mark() == []
    alices_vms_as_they_were(world, alices_vms)


def _takes_an_id(args: Mapping[str, Any]) -> bool:
    """Whether an argument, or a field of an input argument, is an ``ID``."""
    for arg in args.values():
        named = get_named_type(arg.type)
        if named.name == "ID":
            return True
        if isinstance(named, GraphQLInputObjectType) and _takes_an_id(named.fields):
            return True
    return False


def test_every_field_that_takes_an_id_of_a_vdcs_object_is_probed() -> None:
    """A new query or mutation taking an id (or the VDC header) gets its probe, or is said not to be a
    VDC's; it fails here otherwise."""
    served = schema.graphql_schema
    taking = {
        name
        for root in (served.query_type, served.mutation_type)
        if root is not None
        for name, spec in root.fields.items()
        if _takes_an_id(spec.args)
    }
    probed = {asked for probe in PROBES.values() for asked in probe.fields}
    unprobed = (taking | SCOPED_BY_THE_HEADER) - probed - NOT_OWNED_BY_A_VDC - PROBED_IN_PROCESS
    assert unprobed == set(), f"add a probe to PROBES in {__name__} for: {sorted(unprobed)}"


def test_bobs_listing_holds_none_of_alices_vms_whatever_he_filters_on(
    api: GraphQL, alices_vms: AlicesVms
) -> None:
    filters: list[dict[str, Any]] = [
        {},
        {"zone": "zone-a"},
        {"status": "running"},
        {"status": "stopped"},
        {"nameContains": alices_vms.name},
        {"nameContains": ""},
    ]
    for where in filters:
        for vdc in (None, "other"):
            answer = api(
                "query($f: VirtualMachineFilter) { virtualMachines(first: 500, filter: $f) "
                "{ edges { node { id vdc } } } }",
                user=OUTSIDER,
                vdc=vdc,
                variables={"f": where},
            )
            assert answer.errors == [], answer.body
            nodes = [edge["node"] for edge in answer.data["virtualMachines"]["edges"]]
            assert {node["vdc"] for node in nodes} <= {"other"}, (where, nodes)


def test_bobs_create_with_the_name_and_key_of_alices_vm_makes_his_own(
    api: GraphQL, alices_vms: AlicesVms
) -> None:
    """An earlier create is found by its idempotency key or name within the VDC only: bob never gets
    alice's VM back by guessing her key and its name."""
    key = alices_vms.names("key")
    name = alices_vms.names("twin")
    alices = create(api, "alice", "demo", name=name, idempotencyKey=key)["virtualMachine"]

    bobs = create(api, OUTSIDER, "other", name=name, idempotencyKey=key)

    assert bobs["errors"] == []
    assert bobs["virtualMachine"]["vdc"] == "other"
    assert bobs["virtualMachine"]["id"] != alices["id"]
    assert bobs["task"] is not None  # made now, not an earlier create's VM returned


def test_bobs_task_listing_holds_no_task_of_alices_vms(api: GraphQL, alices_vms: AlicesVms) -> None:
    listing = "{ virtualMachines(first: 500) { edges { node { id } } } }"
    bobs_vms = {edge["node"]["id"] for edge in api(listing, user=OUTSIDER).data["virtualMachines"]["edges"]}
    recent = "{ tasks(first: 100) { virtualMachineId } }"

    for vdc in (None, "other"):
        answer = api(recent, user=OUTSIDER, vdc=vdc)
        assert answer.errors == [], answer.body
        assert {task["virtualMachineId"] for task in answer.data["tasks"]} <= bobs_vms
    # The control: alice's own listing has her VMs' tasks.
    alices = api(recent, user="alice").data["tasks"]
    assert alices_vms.running in {task["virtualMachineId"] for task in alices}
