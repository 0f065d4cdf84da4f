"""The isolation matrix's rows for the mutations: each field's document, what each caller gets, and
the clean-up of what a cell made."""

from __future__ import annotations

from tests.security.isolation_matrix import (
    ADMIN,
    CATALOG_ERRORS,
    DEMO,
    MEMBER,
    NOTHING,
    PROBE_VERSION,
    SNAPSHOT_PAYLOAD,
    VM_PAYLOAD,
    VOLUME_PAYLOAD,
    ZONE,
    Answered,
    Forbidden,
    Refused,
    Row,
    access_managers,
    admin_only,
    alices_cluster,
    fresh_volume,
    fresh_volume_snapshot,
    members,
    nothing_to_do,
    own_vdc,
    removed,
    removed_group,
    removed_network,
    removed_snapshot,
    removed_version,
    removed_volume,
    removed_volume_snapshot,
    running,
    stopped,
    vm_action,
    volume_as_it_was,
    volume_name,
)
from tests.vmkit import DEBIAN, SMALL, STANDARD

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
    # ------------------------------------------------------------------ volumes of VDC demo
    "createVolume": Row(
        'mutation($name: String!) { createVolume(name: $name, storageProfile: "standard", sizeGb: 10, '
        f'zone: "{ZONE}") {VOLUME_PAYLOAD} }}',
        members(Answered(lambda made: made["volume"]["vdc"] == DEMO), Forbidden()),
        lambda stage, who: {"name": volume_name(stage, who)},
        vdc=DEMO,
        cleanup=removed_volume,
    ),
    # Each cell has a volume of VDC demo of its own (made by alice): bob and olivia find none.
    "attachVolume": Row(
        f"mutation($id: ID!, $vm: ID!) {{ attachVolume(id: $id, vm: $vm) {VOLUME_PAYLOAD} }}",
        members(Answered(lambda done: done["volume"]["status"] == "in-use"), Refused("NOT_FOUND")),
        lambda stage, who: {**fresh_volume(stage, who), "vm": stage.vms.stopped},
        cleanup=removed_volume,
    ),
    "detachVolume": Row(
        f"mutation($id: ID!) {{ detachVolume(id: $id) {VOLUME_PAYLOAD} }}",
        members(Answered(volume_as_it_was), Refused("NOT_FOUND")),
        fresh_volume,
        cleanup=removed_volume,
    ),
    "resizeVolume": Row(
        f"mutation($id: ID!) {{ resizeVolume(id: $id, sizeGb: 10) {VOLUME_PAYLOAD} }}",
        members(Answered(volume_as_it_was), Refused("NOT_FOUND")),
        fresh_volume,
        cleanup=removed_volume,
    ),
    "deleteVolume": Row(
        f"mutation($id: ID!) {{ deleteVolume(id: $id) {VOLUME_PAYLOAD} }}",
        members(Answered(lambda gone: gone["volume"]["vdc"] == DEMO), Refused("NOT_FOUND")),
        fresh_volume,
        cleanup=removed_volume,
    ),
    # Each cell has a snapshot of a volume of its own (made by alice): bob and olivia find neither.
    "createVolumeSnapshot": Row(
        "mutation($id: ID!, $name: String!) { createVolumeSnapshot(volume: $id, name: $name) "
        f"{SNAPSHOT_PAYLOAD} }}",
        members(Answered(lambda made: made["snapshot"]["vdc"] == DEMO), Refused("NOT_FOUND")),
        lambda stage, who: {**fresh_volume(stage, who), "name": volume_name(stage, who)},
        cleanup=removed_volume_snapshot,
    ),
    "deleteVolumeSnapshot": Row(
        f"mutation($id: ID!) {{ deleteVolumeSnapshot(id: $id) {SNAPSHOT_PAYLOAD} }}",
        members(Answered(lambda gone: gone["snapshot"]["vdc"] == DEMO), Refused("NOT_FOUND")),
        fresh_volume_snapshot,
        cleanup=removed_volume_snapshot,
    ),
    "createVolumeFromSnapshot": Row(
        "mutation($id: ID!, $name: String!) { createVolumeFromSnapshot(snapshot: $id, name: $name) "
        f"{VOLUME_PAYLOAD} }}",
        members(Answered(lambda made: made["volume"]["vdc"] == DEMO), Refused("NOT_FOUND")),
        lambda stage, who: {**fresh_volume_snapshot(stage, who), "name": volume_name(stage, f"{who}-copy")},
        cleanup=removed_volume_snapshot,
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
    # Alice's staged cluster has no etcd snapshot: a member is told the snapshot is INVALID.
    "restoreKubernetesCluster": Row(
        "mutation($cluster: String!) { restoreKubernetesCluster(cluster: $cluster) "
        "{ errors { code field } } }",
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
    # ------------------------------------------------------------------ service accounts: a VDC's members
    # A name that is no label: INVALID past authorization; another VDC's members: NOT_FOUND (the VDC).
    "createServiceAccount": Row(
        'mutation { createServiceAccount(vdc: "demo", name: "Not A Label", '
        'expiresAt: "2099-01-01T00:00:00Z") '
        f"{CATALOG_ERRORS} }}",
        members(Refused("INVALID"), Refused("NOT_FOUND")),
    ),
    "revokeServiceAccount": Row(
        f'mutation {{ revokeServiceAccount(id: "404404404") {CATALOG_ERRORS} }}',
        members(Refused("NOT_FOUND"), Refused("NOT_FOUND")),
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
    "startAgentRollout": Row(
        'mutation { startAgentRollout(version: "0.0.0", canaryPercent: 10) '
        "{ rollout { version } errors { code } } }",
        admin_only(Refused("INVALID")),  # a version the channel has not published: nothing starts
    ),
    "haltAgentRollout": Row(
        'mutation { haltAgentRollout(reason: "isolation") { rollout { version } errors { code } } }',
        admin_only(Refused("CONFLICT")),  # no rollout was started: nothing to halt
    ),
    "resumeAgentRollout": Row(
        "mutation { resumeAgentRollout { rollout { version } errors { code } } }",
        admin_only(Refused("CONFLICT")),  # nor to resume
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
