"""The isolation matrix's rows for the queries: each field's document and what each caller gets."""

from __future__ import annotations

from tests.security.isolation_matrix import (
    ADMIN,
    ALICES_CLUSTER,
    ANONYMOUS,
    DEMO,
    MEMBER,
    OTHER,
    OUTSIDER,
    OWNER,
    ZONE,
    Answered,
    Forbidden,
    Missing,
    Row,
    Unauthenticated,
    access_managers,
    admin_only,
    alices_cluster,
    alices_network,
    everyone,
    fresh_volume,
    fresh_volume_snapshot,
    ids,
    members,
    removed_volume,
    removed_volume_snapshot,
    running,
    seen_by_a_user,
    with_alices_cluster,
)

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
    "serviceAccounts": Row(
        '{ serviceAccounts(vdc: "demo") { id vdc } }',
        members(Answered(lambda found: all(a["vdc"] == DEMO for a in found)), Missing()),
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
    "volumes": Row(
        "{ volumes { id vdc } }",
        members(Answered(lambda found: all(v["vdc"] == DEMO for v in found)), Forbidden()),
        vdc=DEMO,
    ),
    "volume": Row(
        "query($id: ID!) { volume(id: $id) { id vdc } }",
        members(Answered(lambda volume: volume["vdc"] == DEMO), Missing()),
        fresh_volume,
        cleanup=removed_volume,
    ),
    "volumeSnapshots": Row(
        "{ volumeSnapshots { id vdc } }",
        members(Answered(lambda found: all(v["vdc"] == DEMO for v in found)), Forbidden()),
        vdc=DEMO,
    ),
    "volumeSnapshot": Row(
        "query($id: ID!) { volumeSnapshot(id: $id) { id vdc } }",
        members(Answered(lambda snapshot: snapshot["vdc"] == DEMO), Missing()),
        fresh_volume_snapshot,
        cleanup=removed_volume_snapshot,
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
    "agentRollout": Row(
        "{ agentRollout { version phase } }",
        admin_only(Answered(lambda _rollout: True)),  # none started in the world: null, without an error
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
