"""Proxmox's access control as the agent's bootstrap meets it, for the fake Proxmox zones.

fakepve answers ``/access/roles``, ``/access/users`` and ``/access/acl`` from the schema alone and
stores nothing, and knows only the privileges of Proxmox VE 9. :class:`AccessApi` keeps roles, users,
permissions and API tokens made through the API, and refuses what pve-access-control refuses for the
version the fake plays (``pve.version``, ``9.0.10`` unless a test sets ``8.4.1``):

- a role naming a privilege that version does not know, in its words (``privs: invalid format -
  invalid privilege 'VM.Monitor'``, the answer of ``pveum role add`` on 9; PVE 8 refuses
  VM.GuestAgent.Audit alike);
- a permission for a role or user that does not exist, or on a path Proxmox does not know;
- deleting a token also deletes the token's own permissions (PVE::API2::User's token delete).

The permissions are kept, not enforced: fakepve enforces its own ACL (``pve.grant``) once a test
sets one, and the world's fakes leave it open. ``tests/agent/test_node_*`` evaluate what is kept.
"""

from __future__ import annotations

import uuid
from typing import Any

from fakepve import PveError, shapes

# What PVE 9 has that PVE 8 has not, and the other way round (pve-devel, "replace ambiguously named
# VM.Monitor privilege", 2025-07: VM.GuestAgent.* added, VM.Monitor dropped; VM.Replicate is 9's).
ONLY_IN_9 = frozenset(
    {
        "VM.GuestAgent.Audit",
        "VM.GuestAgent.FileRead",
        "VM.GuestAgent.FileSystemMgmt",
        "VM.GuestAgent.FileWrite",
        "VM.GuestAgent.Unrestricted",
        "VM.Replicate",
    }
)
ONLY_IN_8 = frozenset({"VM.Monitor"})


def valid_privileges(version: str) -> frozenset[str]:
    """The privileges Proxmox VE ``version`` knows: fakepve's list is 9's."""
    nine = frozenset(shapes.PRIVILEGES)
    return nine if int(version.split(".")[0]) >= 9 else (nine - ONLY_IN_9) | ONLY_IN_8


def _split(value: Any) -> list[str]:
    return [part for part in str(value or "").replace(";", ",").replace(" ", ",").split(",") if part]


class AccessApi:
    """Mixin of fakepve's FakePve (routes as its ``_routes_<area>`` tables): roles, users, permissions and
    API tokens made through the API."""

    # From FakePve.
    version: str
    apitokens: dict[str, str]

    @property
    def access(self) -> dict[str, Any]:
        """``roles`` (id -> privileges), ``users`` (ids), ``acl`` ({(path, ugid, role): propagate}) and
        ``privsep`` (token id -> 0/1): read and seed them on the fakes' loop."""
        state: dict[str, Any] | None = self.__dict__.get("_access_state")
        if state is None:
            roles = {name: set(privs) for name, privs in shapes.ROLES.items()}
            state = {"roles": roles, "users": {"root@pam"}, "acl": {}, "privsep": {}}
            self.__dict__["_access_state"] = state
        return state

    def _routes_access_control(self) -> list[tuple[str, str, Any]]:
        tokens = "/access/users/{userid}/token"
        return [
            ("GET", "/access/roles", self._roles),
            ("POST", "/access/roles", self._role_add),
            ("PUT", "/access/roles/{roleid}", self._role_modify),
            ("GET", "/access/users", self._users),
            ("POST", "/access/users", self._user_add),
            ("GET", "/access/acl", self._acl),
            ("PUT", "/access/acl", self._acl_modify),
            ("GET", tokens, self._api_tokens),
            ("POST", f"{tokens}/{{tokenid}}", self._api_token_add),
            ("DELETE", f"{tokens}/{{tokenid}}", self._api_token_remove),
        ]

    # --- roles

    def _checked_privileges(self, value: Any) -> set[str]:
        privileges = set(_split(value))
        known = valid_privileges(self.version)
        for privilege in sorted(privileges):
            if privilege not in known:
                raise PveError(
                    400,
                    "Parameter verification failed.",
                    {"privs": f"invalid format - invalid privilege '{privilege}'"},
                )
        return privileges

    async def _roles(self, values: dict[str, Any], user: str) -> Any:
        special = set(shapes.ROLES)
        return [
            {"roleid": name, "privs": ",".join(sorted(privs)), "special": int(name in special)}
            for name, privs in sorted(self.access["roles"].items())
        ]

    async def _role_add(self, values: dict[str, Any], user: str) -> Any:
        name = str(values["roleid"])
        privileges = self._checked_privileges(values.get("privs"))
        if name in self.access["roles"]:
            raise PveError(500, f"create role failed: role '{name}' already exists")
        self.access["roles"][name] = privileges
        return None

    async def _role_modify(self, values: dict[str, Any], user: str) -> Any:
        name = str(values["roleid"])
        if name not in self.access["roles"]:
            raise PveError(500, f"update role failed: role '{name}' does not exist")
        if name in shapes.ROLES:
            raise PveError(500, f"update role failed: cannot modify special role '{name}'")
        privileges = self._checked_privileges(values.get("privs"))
        if str(values.get("append", "0")) in ("1", "true"):
            privileges |= self.access["roles"][name]
        self.access["roles"][name] = privileges
        return None

    # --- users

    async def _users(self, values: dict[str, Any], user: str) -> Any:
        return [{"userid": userid, "enable": 1} for userid in sorted(self.access["users"])]

    async def _user_add(self, values: dict[str, Any], user: str) -> Any:
        userid = str(values["userid"])
        if userid in self.access["users"]:
            raise PveError(500, f"create user failed: user '{userid}' already exists")
        self.access["users"].add(userid)
        return None

    # --- permissions

    async def _acl(self, values: dict[str, Any], user: str) -> Any:
        return [
            {
                "path": path,
                "ugid": ugid,
                "roleid": role,
                "propagate": propagate,
                "type": "token" if "!" in ugid else "user",
            }
            for (path, ugid, role), propagate in sorted(self.access["acl"].items())
        ]

    async def _acl_modify(self, values: dict[str, Any], user: str) -> Any:
        path = "/" + "/".join(part for part in str(values["path"]).split("/") if part)
        delete = str(values.get("delete", "0")) in ("1", "true")
        if not delete and not _known_path(path):
            raise PveError(400, "Parameter verification failed.", {"path": f"invalid ACL path '{path}'"})
        propagate = 0 if str(values.get("propagate", "1")) in ("0", "false") else 1
        members = [*_split(values.get("users")), *_split(values.get("tokens"))]
        for role in _split(values.get("roles")):
            if role not in self.access["roles"]:
                raise PveError(500, f"ACL update failed: role '{role}' does not exist")
            for ugid in members:
                if "!" in ugid and ugid not in self.apitokens:
                    raise PveError(500, f"ACL update failed: no such token '{ugid}'")
                if "!" not in ugid and ugid not in self.access["users"]:
                    raise PveError(500, f"ACL update failed: user '{ugid}' does not exist")
                if delete:
                    self.access["acl"].pop((path, ugid, role), None)
                else:
                    self.access["acl"][(path, ugid, role)] = propagate
        return None

    # --- API tokens: kept in ``apitokens`` (``user@realm!name`` -> secret), their secret answered once.

    async def _api_tokens(self, values: dict[str, Any], user: str) -> Any:
        prefix = f"{values['userid']}!"
        return [
            {"tokenid": t[len(prefix) :], "privsep": self.access["privsep"].get(t, 1)}
            for t in sorted(self.apitokens)
            if t.startswith(prefix)
        ]

    async def _api_token_add(self, values: dict[str, Any], user: str) -> Any:
        full = f"{values['userid']}!{values['tokenid']}"
        if full in self.apitokens:
            raise PveError(500, "Token already exists.")
        self.apitokens[full] = str(uuid.uuid4())
        privsep = int(values.get("privsep", 1))
        self.access["privsep"][full] = privsep
        info = {"privsep": privsep, "comment": values.get("comment", "")}
        return {"full-tokenid": full, "info": info, "value": self.apitokens[full]}

    async def _api_token_remove(self, values: dict[str, Any], user: str) -> Any:
        full = f"{values['userid']}!{values['tokenid']}"
        if self.apitokens.pop(full, None) is None:
            raise PveError(500, f"no such token '{values['tokenid']}' for user '{values['userid']}'")
        self.access["privsep"].pop(full, None)
        for key in [key for key in self.access["acl"] if key[1] == full]:
            del self.access["acl"][key]
        return None


def _known_path(path: str) -> bool:
    """A path pve-access-control's check_path accepts (the parts the agent's grants use, and their
    neighbours)."""
    parts = path.strip("/").split("/") if path != "/" else []
    tops = {"access", "nodes", "pool", "sdn", "storage", "vms", "mapping"}
    if not parts:
        return True
    if parts[0] not in tops:
        return False
    if parts[0] == "vms":
        return len(parts) == 1 or (len(parts) == 2 and parts[1].isdigit() and int(parts[1]) >= 100)
    if parts[0] == "sdn":
        return len(parts) == 1 or (parts[1] == "zones" and len(parts) <= 5)
    return len(parts) <= (3 if parts[0] == "mapping" else 2)
