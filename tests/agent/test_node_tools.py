"""The bootstrap's two node-side implementations against stand-ins of the node's own tools: ``pveum``
(keeping users, roles, permissions and tokens in a JSON file, answering as ``--output-format json``
does) and ``systemctl`` (recording what it is asked, answering ``is-active`` from a file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.pveadmin import AGENT_ROLE, AGENT_USER, Change, ProxmoxAdminError, PveumAdmin, agent_roles
from agent.service import UNIT_NAME, Systemd

PVEUM = r"""
import json, sys, uuid
from pathlib import Path
state_file = Path(__file__).with_suffix(".json")
state = json.loads(state_file.read_text()) if state_file.exists() else {
    "roles": {"PVEAdmin": "Sys.Audit,Sys.Modify", "NoAccess": ""}, "users": ["root@pam"], "acl": [],
    "tokens": {}, "pools": ["fp-demo", "backups"]}
args = [a for a in sys.argv[1:] if a not in ("--output-format", "json")]
option = lambda name: args[args.index(name) + 1]
answer = None
match args[:2]:
    case ["role", "list"]:
        answer = [{"roleid": r, "privs": p} for r, p in state["roles"].items()]
    case ["role", "add"] if args[2] in state["roles"]:
        sys.exit(f"role '{args[2]}' already exists")
    case ["role", "add" | "modify"]:
        state["roles"][args[2]] = option("--privs")
    case ["user", "list"]:
        answer = [{"userid": u} for u in state["users"]]
    case ["user", "add"]:
        state["users"].append(args[2])
    case ["acl", "list"]:
        answer = state["acl"]
    case ["pool", "list"]:
        answer = [{"poolid": p} for p in state["pools"]]
    case ["acl", "delete"]:
        gone = (args[2], option("--users"), option("--roles"))
        state["acl"] = [a for a in state["acl"] if (a["path"], a["ugid"], a["roleid"]) != gone]
    case ["acl", "modify"]:
        grant = {"path": args[2], "ugid": option("--users"), "roleid": option("--roles")}
        if "--propagate" in args:
            grant["propagate"] = int(option("--propagate"))
        state["acl"].append({**grant, "type": "user"})
    case ["user", "token"]:
        tokens = state["tokens"].setdefault(args[3], {})
        if args[2] == "list":
            answer = [{"tokenid": t} for t in tokens]
        elif args[2] == "add":
            if args[4] in tokens:
                sys.exit("Token already exists.")
            assert option("--privsep") == "0"
            tokens[args[4]] = str(uuid.uuid4())
            answer = {"full-tokenid": f"{args[3]}!{args[4]}", "info": {}, "value": tokens[args[4]]}
        elif args[2] == "remove":
            del tokens[args[4]]
    case _:
        sys.exit(f"pveum: unknown command {args}")
state_file.write_text(json.dumps(state))
if answer is not None:
    print(json.dumps(answer))
"""

SYSTEMCTL = r"""
import sys
from pathlib import Path
here = Path(__file__).parent
with (here / "systemctl.log").open("a") as log:
    log.write(" ".join(sys.argv[1:]) + "\n")
if sys.argv[1] == "is-active":
    sys.exit(0 if (here / "active").exists() else 3)
if sys.argv[1:3] == ["enable", "--now"]:
    (here / "active").touch()
"""


PVEVERSION = "print('pve-manager/8.4.1/2a5fa54a8503f96d (running kernel: 6.8.12-9-pve)')"


def tool(folder: Path, name: str, source: str) -> str:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{source}")
    path.chmod(0o755)
    return str(path)


def test_pveum_sets_up_the_agent_once_and_then_finds_it_all_in_place(tmp_path: Path) -> None:
    admin = PveumAdmin(tool(tmp_path, "pveum", PVEUM), pveversion=tool(tmp_path, "pveversion", PVEVERSION))
    assert admin.ensure_role() is Change.WRITTEN
    assert admin.ensure_user() is Change.WRITTEN
    assert admin.ensure_grant() is Change.WRITTEN
    change, secret = admin.ensure_token("pve1", None)
    assert change is Change.WRITTEN

    assert admin.ensure_role() is Change.UNCHANGED
    assert admin.ensure_user() is Change.UNCHANGED
    assert admin.ensure_grant() is Change.UNCHANGED
    assert admin.ensure_token("pve1", secret) == (Change.UNCHANGED, secret)
    state = json.loads((tmp_path / "pveum.json").read_text())
    assert set(state["roles"][AGENT_ROLE].split(",")) == set(agent_roles(8)[AGENT_ROLE])  # pveversion's 8
    assert {"path": "/vms", "ugid": AGENT_USER, "roleid": AGENT_ROLE, "type": "user"} in state["acl"]
    assert {"path": "/pool/backups", "ugid": AGENT_USER, "roleid": "NoAccess", "type": "user"} in state["acl"]
    assert state["tokens"][AGENT_USER] == {"agent-pve1": secret}


def test_pveum_replaces_a_role_whose_privileges_drifted(tmp_path: Path) -> None:
    admin = PveumAdmin(tool(tmp_path, "pveum", PVEUM))
    admin.write_role(AGENT_ROLE, ["Sys.Audit"], exists=False)
    assert admin.ensure_role(9) is Change.WRITTEN
    assert admin.roles()[AGENT_ROLE] == frozenset(agent_roles(9)[AGENT_ROLE])


def test_a_failing_pveum_is_a_clear_error(tmp_path: Path) -> None:
    admin = PveumAdmin(
        tool(tmp_path, "pveum", "import sys; sys.exit('ipcc_send_rec[1] failed: Unknown error -1')")
    )
    with pytest.raises(ProxmoxAdminError, match="pveum role list --output-format json failed: ipcc_send_rec"):
        admin.ensure_role(9)
    with pytest.raises(ProxmoxAdminError, match="cannot run"):
        PveumAdmin(str(tmp_path / "missing")).ensure_user()


def test_systemd_enables_and_starts_the_agent_then_restarts_it_when_its_files_change(tmp_path: Path) -> None:
    systemd = Systemd(tool(tmp_path, "systemctl", SYSTEMCTL))
    assert systemd.activate(unit_changed=True, config_changed=True) == "enabled and started"
    assert systemd.activate(unit_changed=False, config_changed=False) == "unchanged (running)"
    assert systemd.activate(unit_changed=False, config_changed=True) == "restarted"
    assert (tmp_path / "systemctl.log").read_text().splitlines() == [
        "daemon-reload",
        f"is-active --quiet {UNIT_NAME}",
        f"enable --now {UNIT_NAME}",
        f"is-active --quiet {UNIT_NAME}",
        f"enable --now {UNIT_NAME}",
        f"is-active --quiet {UNIT_NAME}",
        f"enable --now {UNIT_NAME}",
        f"restart {UNIT_NAME}",
    ]
