"""What the agent may do on Proxmox, as the bootstrap leaves it: the roles of each Proxmox VE version hold
only privileges that version knows (checked against Proxmox's published lists, below), and the ACLs
the bootstrap writes to a fake zone, evaluated as Proxmox evaluates them (:func:`privileges`, a small
copy of pve-access-control's inheritance rules), give every call the agent makes what it needs, and a
stolen token no more than the README's node section argues.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakepve import schema

from agent.proxy import ALLOWED_ROWS, PLACEHOLDERS
from agent.pveadmin import (
    AGENT_ROLE,
    AGENT_USER,
    GUEST_AGENT_PRIVILEGE,
    SUPPORTED_MAJORS,
    ApiAdmin,
    Change,
    Grant,
    ProxmoxAdminError,
    UnsupportedVersion,
    agent_roles,
    proxmox_major,
    token_id,
)
from devstack.fakezones import FakeZones
from tests import addresses
from tests.agent.test_pveadmin import IMPORT_ROWS
from tests.agent.test_pveadmin import VALUES as PVEADMIN_VALUES


def listed(names: str) -> frozenset[str]:
    return frozenset(names.split())


# Every privilege of Proxmox VE 9.0: what `pveum user permissions` lists for an Administrator on 9.0
# (github.com/Telmate/terraform-provider-proxmox/issues/1365), which is pve-access-control's privgroups
# after "replace ambiguously named VM.Monitor privilege" (pve-devel, 2025-07-17: VM.GuestAgent.Audit,
# .FileRead, .FileWrite, .FileSystemMgmt and .Unrestricted added; VM.Monitor dropped).
PVE_9_PRIVILEGES = listed(
    "Datastore.Allocate Datastore.AllocateSpace Datastore.AllocateTemplate Datastore.Audit Group.Allocate "
    "Mapping.Audit Mapping.Modify Mapping.Use Permissions.Modify Pool.Allocate Pool.Audit Realm.Allocate "
    "Realm.AllocateUser SDN.Allocate SDN.Audit SDN.Use Sys.AccessNetwork Sys.Audit Sys.Console "
    "Sys.Incoming Sys.Modify Sys.PowerMgmt Sys.Syslog User.Modify VM.Allocate VM.Audit VM.Backup VM.Clone "
    "VM.Config.CDROM VM.Config.CPU VM.Config.Cloudinit VM.Config.Disk VM.Config.HWType VM.Config.Memory "
    "VM.Config.Network VM.Config.Options VM.Console VM.GuestAgent.Audit VM.GuestAgent.FileRead "
    "VM.GuestAgent.FileSystemMgmt VM.GuestAgent.FileWrite VM.GuestAgent.Unrestricted VM.Migrate "
    "VM.PowerMgmt VM.Snapshot VM.Snapshot.Rollback"
)
# Every privilege of Proxmox VE 8.4: pve-access-control's privgroups of the 8 series (src/PVE/
# AccessControl.pm: VM.Monitor among the VM admin privileges, Mapping.*, Sys.Incoming), with
# Sys.AccessNetwork, which 8.2 added (pve-access-control commit 36c18144, 2024-02, "add
# Sys.AccessNetwork privilege").
PVE_8_PRIVILEGES = listed(
    "Datastore.Allocate Datastore.AllocateSpace Datastore.AllocateTemplate Datastore.Audit Group.Allocate "
    "Mapping.Audit Mapping.Modify Mapping.Use Permissions.Modify Pool.Allocate Pool.Audit Realm.Allocate "
    "Realm.AllocateUser SDN.Allocate SDN.Audit SDN.Use Sys.AccessNetwork Sys.Audit Sys.Console "
    "Sys.Incoming Sys.Modify Sys.PowerMgmt Sys.Syslog User.Modify VM.Allocate VM.Audit VM.Backup VM.Clone "
    "VM.Config.CDROM VM.Config.CPU VM.Config.Cloudinit VM.Config.Disk VM.Config.HWType VM.Config.Memory "
    "VM.Config.Network VM.Config.Options VM.Console VM.Migrate VM.Monitor VM.PowerMgmt VM.Snapshot "
    "VM.Snapshot.Rollback"
)
PUBLISHED = {8: PVE_8_PRIVILEGES, 9: PVE_9_PRIVILEGES}
VERSIONS = {8: "8.4.1", 9: "9.0.10"}

ZONE = "zone-n"
NODES = {"pve1": addresses.address(addresses.AGENT_SUITE, 90)}
UPGRADED = {"pve1": addresses.address(addresses.AGENT_SUITE, 93)}  # a second zone, beside NODES
OPERATORS_POOL = "backups"  # a pool the operator made before flex.plane came: not the platform's

# The image import's calls and the placeholders' values are test_pveadmin's; here VM 100 is a tenant's VM
# in its VDC's pool, where the clone's target goes too.
VALUES = {**PVEADMIN_VALUES, "pool": "fp-demo"}
POOL_MEMBERS = {"fp-demo": {"/vms/100"}}
# What handlers check themselves, beyond the schema's rules (user => 'all'): qemu-server's create
# (PVE/API2/Qemu.pm: VM.Allocate on the VM or its pool, space on the storage), pve-network's SDN
# handlers (API2/Network/SDN/*.pm) and qemu-server's NIC check (SDN.Use on the VNet).
HANDLER_NEEDS = (
    ("create the image's VM", "/vms/9000", "VM.Allocate"),
    ("allocate the image's disk", "/storage/local-lvm", "Datastore.AllocateSpace"),
    ("list the node's storages", "/storage/local", "Datastore.Audit"),
    ("list the cluster's guests", "/vms/100", "VM.Audit"),
    ("apply pending SDN changes", "/sdn", "SDN.Allocate"),
    ("create a VNet's subnet", "/sdn/zones/fpnet/fpab12cd", "SDN.Allocate"),
    ("list VNets and subnets", "/sdn/zones/fpnet/fpab12cd", "SDN.Audit"),
    ("plug a VM's NIC into a VNet", "/sdn/zones/fpnet/fpab12cd", "SDN.Use"),
)
# Proxmox VE 8's qemu-server checks VM.Monitor for GET .../agent/network-get-interfaces (API2/Qemu/Agent.pm
# before the 2025-07 series); fakepve's schema is 9's.
GUEST_AGENT_NEEDS = {
    8: ("/vms/{vmid}", ("VM.Monitor",)),
    9: ("/vms/{vmid}", ("VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted")),
}

Acl = dict[tuple[str, str, str], bool]


# --------------------------------------------------------------------------- Proxmox's evaluation


def roles_on(acl: Acl, ugid: str, path: str) -> set[str]:
    """pve-access-control's roles(): from ``/`` down to ``path``, the roles granted on a deeper path
    replace those inherited; a grant that does not propagate counts on its own path only; NoAccess among
    them leaves nothing."""
    parts = [part for part in path.split("/") if part]
    roles: set[str] = set()
    for depth in range(len(parts) + 1):
        here = "/" + "/".join(parts[:depth])
        final = depth == len(parts)
        found = {
            role
            for (p, who, role), propagate in acl.items()
            if p == here and who == ugid and (propagate or final)
        }
        if found:
            roles = found
    return set() if "NoAccess" in roles else roles


def privileges(state: dict[str, Any], ugid: str, path: str) -> set[str]:
    """RPCEnvironment::permissions(): the roles on the path, with those of the pool a VM or storage is a
    member of (never over a NoAccess); a token without privilege separation holds its user's."""
    user, _, _ = ugid.partition("!")
    if "!" in ugid and not state["privsep"].get(ugid, 1):
        ugid = user
    acl: Acl = {key: bool(value) for key, value in state["acl"].items()}
    roles = roles_on(acl, ugid, path)
    direct = {role for (p, who, role) in acl if who == ugid and p == path}
    if "NoAccess" not in direct:
        for pool, members in state.get("pools", {}).items():
            if path in members:
                roles |= roles_on(acl, ugid, f"/pool/{pool}")
    return {privilege for role in roles for privilege in state["roles"].get(role, ())}


def allowed(state: dict[str, Any], ugid: str, rule: Any, values: dict[str, str]) -> bool:
    """A permission rule of the API schema (``perm``, ``and``, ``or``; ``user => all`` passes)."""
    if rule is None or "check" not in rule:
        return rule is not None and rule.get("user") in ("all", "world")
    return _check(state, ugid, rule["check"], values)


def _check(state: dict[str, Any], ugid: str, check: list[Any], values: dict[str, str]) -> bool:
    if check[0] == "and":
        return all(_check(state, ugid, sub, values) for sub in check[1:])
    if check[0] == "or":
        return any(_check(state, ugid, sub, values) for sub in check[1:])
    assert check[0] == "perm", check
    path, needed = check[1], check[2]
    options = dict(zip(check[3::2], check[4::2], strict=False))
    if options.get("require_param") and options["require_param"] not in values:
        return False
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    held = privileges(state, ugid, path)
    return bool(held & set(needed)) if options.get("any") else set(needed) <= held


def may_modify_permissions(state: dict[str, Any], ugid: str, path: str) -> bool:
    """RPCEnvironment::check_perm_modify(): Permissions.Modify on the path, or on a VM, storage or pool
    path the privilege to allocate it."""
    held = privileges(state, ugid, path)
    also = {"/vms/": "VM.Allocate", "/storage/": "Datastore.Allocate", "/pool/": "Pool.Allocate"}
    return "Permissions.Modify" in held or any(
        path.startswith(prefix) and privilege in held for prefix, privilege in also.items()
    )


# --------------------------------------------------------------------------------- the fake zone


@dataclass
class Enrolled:
    """A fake zone set up as the bootstrap does: the version it plays, its access state (roles, ACL,
    tokens' privilege separation, and the VDC pool's members) and root's admin."""

    major: int
    state: dict[str, Any]
    admin: ApiAdmin


@pytest.fixture(scope="module", params=SUPPORTED_MAJORS, ids=[f"pve{major}" for major in SUPPORTED_MAJORS])
def enrolled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Enrolled]:
    """A fake zone playing Proxmox VE 8 or 9, with an operator's pool, set up as the bootstrap does (read
    only by the tests: nothing they do changes it)."""
    major: int = request.param
    fakes = FakeZones({ZONE: NODES}, {ZONE: "s3cret"}, tmp_path_factory.mktemp("pki"))
    pve = fakes[ZONE].pve
    pve.version = VERSIONS[major]
    pve.pools[OPERATORS_POOL] = set()
    fakes.start()
    try:
        admin = ApiAdmin(fakes[ZONE].url("pve1"), "root@pam", pve.password, ca_file=Path(fakes.certfile))
        assert admin.ensure_role() is Change.WRITTEN
        admin.ensure_user()
        admin.ensure_grant()
        admin.ensure_token("pve1", None)
        state = fakes.on_loop(lambda: {**pve.access, "pools": POOL_MEMBERS})
        yield Enrolled(major, state, admin)
    finally:
        fakes.stop()


# ------------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("major", SUPPORTED_MAJORS)
def test_each_versions_roles_hold_only_privileges_that_version_knows(major: int) -> None:
    for role, privileges in agent_roles(major).items():
        unknown = set(privileges) - PUBLISHED[major]
        assert not unknown, f"Proxmox VE {major} would refuse role {role}: {sorted(unknown)}"
        assert len(set(privileges)) == len(privileges)


def test_the_guest_agent_privilege_is_each_versions_own() -> None:
    assert GUEST_AGENT_PRIVILEGE[8] in agent_roles(8)[AGENT_ROLE]
    assert GUEST_AGENT_PRIVILEGE[9] in agent_roles(9)[AGENT_ROLE]
    assert GUEST_AGENT_PRIVILEGE[8] not in PVE_9_PRIVILEGES
    assert GUEST_AGENT_PRIVILEGE[9] not in PVE_8_PRIVILEGES


@pytest.mark.parametrize(
    ("said", "major"),
    [
        ("pve-manager/8.4.1/2a5fa54a8503f96d (running kernel: 6.8.12-9-pve)", 8),
        ("pve-manager/9.0.10/deadbeefcafe0000 (running kernel: 6.14.8-2-pve)", 9),
        ("9.0.10", 9),
        ("8.2.4\n", 8),
    ],
)
def test_the_version_is_read_from_pveversion_or_the_api(said: str, major: int) -> None:
    assert proxmox_major(said) == major


@pytest.mark.parametrize("said", ["pve-manager/7.4.17/513c62be", "10.0.1", "not proxmox"])
def test_a_version_the_agent_knows_no_privileges_for_is_refused_by_name(said: str) -> None:
    with pytest.raises(UnsupportedVersion, match=r"Proxmox VE \d+ is not supported|cannot tell"):
        proxmox_major(said)


def test_the_bootstrap_writes_the_versions_roles_which_refuses_the_other_versions_privilege(
    enrolled: Enrolled,
) -> None:
    other = GUEST_AGENT_PRIVILEGE[9 if enrolled.major == 8 else 8]
    assert enrolled.state["roles"][AGENT_ROLE] == set(agent_roles(enrolled.major)[AGENT_ROLE])
    with pytest.raises(ProxmoxAdminError, match=f"invalid privilege '{other}'"):
        enrolled.admin.write_role("FlexPlaneAgentOther", [other], exists=False)


def test_every_call_the_agent_makes_is_allowed_where_proxmox_checks_it(
    enrolled: Enrolled,
) -> None:
    major, state = enrolled.major, enrolled.state
    token = token_id("pve1")
    refused = []
    guest_agent = "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"
    for method, pattern in (*ALLOWED_ROWS, *IMPORT_ROWS):
        template = pattern.replace("{action}", "start")
        rule = schema.load().paths[template][method].get("permissions")
        if pattern == guest_agent:
            where, which = GUEST_AGENT_NEEDS[major]
            rule = {"check": ["perm", where, list(which), "any", 1]}
        values = {name: VALUES[name] for name in (*PLACEHOLDERS, "newid", "storage", "volume", "pool")}
        if not allowed(state, token, rule, values):
            refused.append(f"{method} {pattern}")
    for what, path, needed in HANDLER_NEEDS:
        if not privileges(state, token, path) & set(needed.split("|")):
            refused.append(f"{what} ({needed} on {path})")
    assert refused == []


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/access",
        "/access/groups",
        "/access/realm/pve",
        "/nodes/pve1",
        "/storage/local",
        "/sdn/zones/fpnet",
    ],
)
def test_a_stolen_token_cannot_change_any_permission_outside_the_platforms_vms_and_pools(
    enrolled: Enrolled, path: str
) -> None:
    state = enrolled.state
    assert not may_modify_permissions(state, token_id("pve1"), path)


def test_a_stolen_token_cannot_touch_the_operators_own_pool(enrolled: Enrolled) -> None:
    state = enrolled.state
    path = f"/pool/{OPERATORS_POOL}"
    assert privileges(state, token_id("pve1"), path) == set()
    assert not may_modify_permissions(state, token_id("pve1"), path)


@pytest.mark.parametrize(
    ("path", "dangerous"),
    [
        ("/access", {"Sys.Audit", "User.Modify", "Permissions.Modify", "Group.Allocate", "Realm.Allocate"}),
        ("/nodes/pve1", {"Sys.Modify", "Sys.Console", "Sys.PowerMgmt", "Sys.Syslog", "Sys.Incoming"}),
        ("/vms/100", {"VM.Console", "VM.Backup", "VM.GuestAgent.Unrestricted", "VM.GuestAgent.FileRead"}),
        ("/storage/local", {"Datastore.Allocate"}),
        ("/mapping/pci/gpu0", {"Mapping.Use", "Mapping.Modify", "Mapping.Audit"}),
        ("/sdn/zones/localnetwork/vmbr0", {"SDN.Use", "SDN.Allocate"}),
        ("/sdn/controllers/evpn1", {"SDN.Allocate", "SDN.Audit"}),
    ],
)
def test_a_stolen_token_holds_none_of_the_dangerous_privileges(
    enrolled: Enrolled, path: str, dangerous: set[str]
) -> None:
    """No console or command in a guest, no node settings, no users or permissions (not even reading
    them), no resource mappings, no NIC on the node's own bridges."""
    state = enrolled.state
    assert privileges(state, token_id("pve1"), path) & dangerous == set()


def test_sys_audit_reaches_the_cluster_status_and_the_nodes_and_no_further(
    enrolled: Enrolled,
) -> None:
    state = enrolled.state
    token = token_id("pve1")
    assert "Sys.Audit" in privileges(state, token, "/")
    assert "Sys.Audit" in privileges(state, token, "/nodes/pve2")
    assert "Sys.Audit" not in privileges(state, token, "/storage/local")
    assert "Sys.Audit" not in privileges(state, token, "/access/groups")


def test_an_older_bootstraps_role_on_the_root_is_revoked_when_the_bootstrap_runs_again(
    tmp_path: Path,
) -> None:
    fakes = FakeZones({ZONE: UPGRADED}, {ZONE: "s3cret"}, tmp_path / "pki")
    fakes.start()
    try:
        pve = fakes[ZONE].pve
        admin = ApiAdmin(fakes[ZONE].url("pve1"), "root@pam", pve.password, ca_file=Path(fakes.certfile))
        admin.ensure_role()
        admin.ensure_user()
        admin.ensure_grant(grants=[Grant("/", AGENT_ROLE)])  # as releases before this one granted it
        assert admin.ensure_grant() is Change.WRITTEN
        assert not {entry for entry in admin.acl() if entry[0] == "/" and entry[2] == AGENT_ROLE}
        assert admin.ensure_grant() is Change.UNCHANGED
    finally:
        fakes.stop()


def test_the_grants_name_the_agent_user_only(enrolled: Enrolled) -> None:
    """The token has privilege separation off and no ACL of its own: deleting it leaves the others'."""
    state = enrolled.state
    assert {who for (_, who, _) in state["acl"]} == {AGENT_USER}
    assert state["privsep"][token_id("pve1")] == 0
