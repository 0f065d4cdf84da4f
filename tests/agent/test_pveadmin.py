"""The agent's Proxmox access: its roles hold what every forwarded path needs by Proxmox's own permission
rules (fakepve's copy of the PVE 9 schema, and for the SDN calls whose handlers check themselves, the
paths pve-network checks), SDN privileges only where tenant networks need them (Proxmox's ACL
inheritance, modelled here), nothing an operator would not hand out; and the API implementation makes,
keeps and replaces a node's token against the world's fake Proxmox.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakepve import FakePve, PveError, schema, shapes

from agent.proxy import ALLOWED_ROWS, PLACEHOLDERS
from agent.pveadmin import (
    AGENT_GRANTS,
    AGENT_ROLE,
    AGENT_SDN_PRIVILEGES,
    AGENT_SDN_ROLE,
    AGENT_USER,
    NO_ACCESS,
    ApiAdmin,
    Change,
    ProxmoxAdminError,
    agent_roles,
    token_name,
)
from devstack.world import World

# The roles as the world's fake Proxmox (VE 9) gets them; tests/agent/test_node_access.py checks both
# versions against Proxmox's own privilege lists.
AGENT_ROLES = agent_roles(9)
AGENT_PRIVILEGES = tuple(p for role, privs in AGENT_ROLES.items() if role != AGENT_SDN_ROLE for p in privs)

# What the image import calls besides the allowlist (agent.images).
IMPORT_ROWS = (
    ("POST", "/nodes/{node}/qemu"),
    ("POST", "/nodes/{node}/qemu/{vmid}/template"),
    ("POST", "/nodes/{node}/storage/{storage}/upload"),
    ("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}"),
)
# Values for the path placeholders and the parameters permission rules name.
VALUES = {
    "node": "pve1",
    "vmid": "100",
    "newid": "101",
    "poolid": "fp-demo",
    "storage": "local",
    "volume": "local:import/debian.qcow2",
    "upid": "UPID:pve1:00001234:00005678:65000000:qmstart:100:root@pam:",
    "action": "start",
    "zone": "fpnet",
    "vnet": "fpab12cd",
    "subnet": "fpnet-10.0.0.0-24",
    "pos": "0",
    "name": "fp-sg-web",
    "cidr": "10.0.0.0/24",
    "snapname": "before-upgrade",
}
# Never needed by the agent, and each would widen what a stolen token can do.
FORBIDDEN = {
    "Sys.Modify",
    "Sys.Console",
    "Sys.PowerMgmt",
    "User.Modify",
    "Permissions.Modify",
    "Realm.Allocate",
    "VM.Console",
    "VM.Backup",
    "VM.GuestAgent.Unrestricted",
    "VM.GuestAgent.FileRead",
    "VM.GuestAgent.FileWrite",
    "Datastore.Allocate",
}
SDN_PRIVILEGES = {"SDN.Audit", "SDN.Allocate", "SDN.Use"}
# What tenant networks need where Proxmox checks it (pve-network's API2/Network/SDN/*.pm, and
# qemu-server's NIC check): the SDN calls the proxy forwards whose permissions the schema leaves to the
# handler (user => 'all'), and the NIC on a VNet.
SDN_NEEDS = (
    ("apply pending changes", "/sdn", "SDN.Allocate"),
    ("create the SDN zone", "/sdn/zones", "SDN.Allocate"),
    ("read the SDN zone", "/sdn/zones/fpnet", "SDN.Allocate"),
    ("create a VNet in the zone", "/sdn/zones/fpnet", "SDN.Allocate"),
    ("list and read VNets and subnets", "/sdn/zones/fpnet/fpab12cd", "SDN.Audit"),
    ("delete a VNet, create or delete its subnet", "/sdn/zones/fpnet/fpab12cd", "SDN.Allocate"),
    ("plug a VM's NIC into a VNet", "/sdn/zones/fpnet/fpab12cd", "SDN.Use"),
    ("write a VM's firewall", "/vms/4242", "VM.Config.Network"),
    ("read a VM's firewall", "/vms/4242", "VM.Audit"),
)


def held(path: str) -> set[str]:
    """The agent user's privileges on ``path`` as Proxmox computes them (PVE::AccessControl::roles): from
    ``/`` down to the path, the roles granted on a deeper path replace those inherited; a grant that does
    not propagate counts on its own path only."""
    roles: set[str] = set()
    parts = [part for part in path.split("/") if part]
    for depth in range(len(parts) + 1):
        here = "/" + "/".join(parts[:depth])
        found = {g.role for g in AGENT_GRANTS if g.path == here and (g.propagate or depth == len(parts))}
        if found:
            roles = found
    return {privilege for role in roles for privilege in AGENT_ROLES.get(role, ())}


def test_the_agent_role_grants_what_every_forwarded_path_needs() -> None:
    pve = FakePve()
    for grant in AGENT_GRANTS:  # fakepve's ACL always propagates and knows no NoAccess: a superset
        if grant.role != NO_ACCESS:
            pve.grant(AGENT_USER, grant.path, *AGENT_ROLES[grant.role])
    token = f"{AGENT_USER}!{token_name('pve1')}"
    for method, pattern in (*ALLOWED_ROWS, *IMPORT_ROWS):
        template = pattern.replace("{action}", "start")
        rules = schema.load().paths[template][method].get("permissions")
        values = {name: VALUES[name] for name in (*PLACEHOLDERS, "newid", "storage", "volume")}
        try:
            pve.check_permissions(token, rules, values)
        except PveError as exc:
            pytest.fail(f"{method} {pattern}: {exc}")


def test_the_agent_roles_hold_only_real_privileges_and_none_of_the_dangerous_ones() -> None:
    for privileges in AGENT_ROLES.values():
        assert set(privileges) <= set(shapes.PRIVILEGES)
        assert not set(privileges) & FORBIDDEN
        assert len(set(privileges)) == len(privileges)
    assert not set(AGENT_PRIVILEGES) & SDN_PRIVILEGES
    assert set(AGENT_SDN_PRIVILEGES) == SDN_PRIVILEGES


@pytest.mark.parametrize(("what", "path", "privilege"), SDN_NEEDS, ids=[need[0] for need in SDN_NEEDS])
def test_the_agent_holds_what_tenant_networks_need_where_proxmox_checks_it(
    what: str, path: str, privilege: str
) -> None:
    assert privilege in held(path), what


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/vms/4242",
        "/nodes/pve1",
        "/sdn/controllers",
        "/sdn/controllers/evpn1",
        "/sdn/ipams",
        "/sdn/ipams/pve",
        "/sdn/dns",
        "/sdn/fabrics",
        "/sdn/zones/localnetwork",
        "/sdn/zones/localnetwork/vmbr0",
    ],
)
def test_the_agent_holds_no_sdn_privilege_beyond_the_zones_and_none_on_the_nodes_own_bridges(
    path: str,
) -> None:
    """No controllers, IPAMs, DNS or fabrics; and a NIC on vmbr0 (SDN.Use on /sdn/zones/localnetwork/vmbr0)
    is Proxmox's refusal, whatever the proxy lets through."""
    assert not held(path) & SDN_PRIVILEGES


def test_below_the_sdn_the_agent_holds_nothing_of_its_vm_role() -> None:
    assert held("/sdn/zones/fpnet/fpab12cd") == SDN_PRIVILEGES
    assert held("/sdn") == SDN_PRIVILEGES
    assert held("/vms/4242") == set(AGENT_ROLES[AGENT_ROLE])


@pytest.fixture
def admin(world: World) -> Iterator[ApiAdmin]:
    fake = world.fakes["zone-b"]
    yield ApiAdmin(
        fake.url("pve1"), "root@pam", fake.pve.password, ca_file=world.pki / "fakepve" / "fakepve.crt"
    )
    world.fakes.on_loop(fake.pve.apitokens.pop, f"{AGENT_USER}!{token_name('pve8')}", None)


def test_a_nodes_token_is_made_then_kept_then_replaced_once_its_secret_is_lost(
    admin: ApiAdmin, world: World
) -> None:
    tokens = world.fakes["zone-b"].pve.apitokens
    full = f"{AGENT_USER}!{token_name('pve8')}"

    made, secret = admin.ensure_token("pve8", None)
    assert made is Change.WRITTEN
    assert world.fakes.on_loop(tokens.get, full) == secret

    kept, same = admin.ensure_token("pve8", secret)
    assert (kept, same) == (Change.UNCHANGED, secret)

    replaced, fresh = admin.ensure_token("pve8", None)
    assert replaced is Change.RENEWED
    assert fresh != secret
    assert world.fakes.on_loop(tokens.get, full) == fresh


def test_a_wrong_root_password_is_a_clear_error(world: World) -> None:
    fake = world.fakes["zone-b"]
    with pytest.raises(ProxmoxAdminError, match="logging in to Proxmox: Proxmox answered 401"):
        ApiAdmin(fake.url("pve1"), "root@pam", "wrong", ca_file=world.pki / "fakepve" / "fakepve.crt")
