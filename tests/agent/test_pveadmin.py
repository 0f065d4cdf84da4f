"""The agent's Proxmox access: its role holds what every forwarded path needs by Proxmox's own permission
rules (fakepve's copy of the PVE 9 schema) and nothing an operator would not hand out; and the API
implementation makes, keeps and replaces a node's token against the world's fake Proxmox.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakepve import FakePve, PveError, schema, shapes

from agent.proxy import ALLOWED_ROWS, PLACEHOLDERS
from agent.pveadmin import AGENT_PRIVILEGES, AGENT_USER, ApiAdmin, Change, ProxmoxAdminError, token_name
from devstack.world import World

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
    "SDN.Allocate",
}


def test_the_agent_role_grants_what_every_forwarded_path_needs() -> None:
    pve = FakePve()
    pve.grant(AGENT_USER, "/", *AGENT_PRIVILEGES)
    token = f"{AGENT_USER}!{token_name('pve1')}"
    for method, pattern in (*ALLOWED_ROWS, *IMPORT_ROWS):
        template = pattern.replace("{action}", "start")
        rules = schema.load().paths[template][method].get("permissions")
        values = {name: VALUES[name] for name in (*PLACEHOLDERS, "newid", "storage", "volume")}
        try:
            pve.check_permissions(token, rules, values)
        except PveError as exc:
            pytest.fail(f"{method} {pattern}: {exc}")


def test_the_agent_role_holds_only_real_privileges_and_none_of_the_dangerous_ones() -> None:
    assert set(AGENT_PRIVILEGES) <= set(shapes.PRIVILEGES)
    assert not set(AGENT_PRIVILEGES) & FORBIDDEN
    assert len(set(AGENT_PRIVILEGES)) == len(AGENT_PRIVILEGES)


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
