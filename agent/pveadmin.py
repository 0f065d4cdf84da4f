"""The agent's own Proxmox API token, with the least privilege for what the agent does.

The agent calls Proxmox as ``flexplane@pve`` through a token of its node,
``flexplane@pve!agent-<node>``, with privilege separation off (the token has the user's
privileges, no more). The user holds the role ``FlexPlaneAgent`` on ``/``: exactly
:data:`AGENT_PRIVILEGES`, which cover what ``agent.proxy`` forwards and what the agent's
image import does, and nothing else (no Sys.Modify, no User.Modify, no console).

Tenant networks are SDN zones, VNets and subnets, which Proxmox checks under ``/sdn``. The role
``FlexPlaneAgentSDN`` (:data:`AGENT_SDN_PRIVILEGES`) is granted only there (:data:`AGENT_GRANTS`):

- on ``/sdn`` without propagation: applying pending changes (``PUT /cluster/sdn`` checks
  SDN.Allocate on ``/sdn`` itself), and nothing below it (``/sdn/controllers``, ``/sdn/ipams``,
  ``/sdn/dns``, ``/sdn/fabrics`` keep what ``/`` gives: no SDN privilege);
- on ``/sdn/zones``, propagated: creating zones (``/sdn/zones``), VNets in a zone
  (``/sdn/zones/<zone>``), their subnets (``/sdn/zones/<zone>/<vnet>``), reading them, and
  plugging a VM's NIC into a VNet (SDN.Use on ``/sdn/zones/<zone>/<vnet>``);
- ``NoAccess`` on ``/sdn/zones/localnetwork``: Proxmox checks a NIC on one of the node's own
  bridges (``vmbr0``) as SDN.Use on ``/sdn/zones/localnetwork/<bridge>``; the agent may not.

Proxmox's more specific ACL replaces what a path inherits, so below ``/sdn/zones`` the user holds
exactly ``FlexPlaneAgentSDN``, and ``FlexPlaneAgent`` holds no SDN privilege at all.

User, role and permission are cluster-wide (``/etc/pve`` is shared), so every node of a zone
shares them; the token is the node's own, so enrolling or re-enrolling one node never breaks
another's agent.

:class:`ProxmoxAdmin` is the small interface the bootstrap needs; :class:`PveumAdmin` runs
``pveum`` on the node (as root, the usual case) and :class:`ApiAdmin` uses the Proxmox HTTP API
with root's password (where ``pveum`` is not at hand, and in the tests against the fake Proxmox).
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import requests

AGENT_USER = "flexplane@pve"
AGENT_ROLE = "FlexPlaneAgent"
AGENT_COMMENT = "flex.plane agent (made by flexplane-agent bootstrap)"
# What each privilege is for: the Proxmox paths of agent.proxy and agent.images that need it.
AGENT_PRIVILEGES = (
    "Sys.Audit",  # GET /cluster/status, /nodes/{node}/status
    "VM.Audit",  # GET .../qemu/{vmid}/config, pending, status/current
    "VM.Allocate",  # clone targets, DELETE .../qemu/{vmid}, the image import's template
    "VM.Clone",  # POST .../qemu/{vmid}/clone
    "VM.Config.Disk",  # resize, disks in config
    "VM.Config.CDROM",  # the cloud-init drive
    "VM.Config.CPU",
    "VM.Config.Memory",
    "VM.Config.Network",
    "VM.Config.HWType",
    "VM.Config.Options",
    "VM.Config.Cloudinit",  # ciuser, sshkeys, ipconfig, cicustom
    "VM.PowerMgmt",  # POST .../status/{start,stop,shutdown,reboot}
    "VM.Snapshot",  # POST .../snapshot, DELETE .../snapshot/{snapname}
    "VM.Snapshot.Rollback",  # POST .../snapshot/{snapname}/rollback
    "VM.Migrate",  # draining a host
    "VM.GuestAgent.Audit",  # GET .../agent/network-get-interfaces
    "Pool.Audit",  # GET /pools/{poolid}
    "Pool.Allocate",  # VDC pools: create, add members, delete
    "Datastore.Audit",  # the node's storages
    "Datastore.AllocateSpace",  # disks of clones and imports
    "Datastore.AllocateTemplate",  # the image import's upload
)
AGENT_SDN_ROLE = "FlexPlaneAgentSDN"
AGENT_SDN_PRIVILEGES = (
    "SDN.Audit",  # GET /cluster/sdn/vnets, .../subnets (the listing shows only what one may audit)
    "SDN.Allocate",  # zones, VNets, subnets: create and delete; PUT /cluster/sdn (apply)
    "SDN.Use",  # a VM's NIC on a VNet (PVE 8 and later check it on /sdn/zones/<zone>/<vnet>)
)
NO_ACCESS = "NoAccess"  # Proxmox's built-in role without privileges
AGENT_ROLES: dict[str, tuple[str, ...]] = {AGENT_ROLE: AGENT_PRIVILEGES, AGENT_SDN_ROLE: AGENT_SDN_PRIVILEGES}


@dataclass(frozen=True)
class Grant:
    """A role on an ACL path, propagated to the paths below it or not."""

    path: str
    role: str
    propagate: bool = True


AGENT_GRANTS = (
    Grant("/", AGENT_ROLE),
    Grant("/sdn", AGENT_SDN_ROLE, propagate=False),
    Grant("/sdn/zones", AGENT_SDN_ROLE),
    Grant("/sdn/zones/localnetwork", NO_ACCESS),
)
COMMAND_TIMEOUT = 60.0


class ProxmoxAdminError(Exception):
    """Proxmox refused, or could not be reached; the message says what was being done."""


class Change(StrEnum):
    """What a bootstrap step did."""

    UNCHANGED = "unchanged"
    WRITTEN = "written"
    RENEWED = "renewed"


def token_name(node: str) -> str:
    """The node's token name (a Proxmox token name must start with a letter; a node name need not)."""
    return f"agent-{node}"


def token_id(node: str) -> str:
    return f"{AGENT_USER}!{token_name(node)}"


class ProxmoxAdmin(ABC):
    """Users, roles, permissions and API tokens of the node's Proxmox cluster."""

    # --- what an implementation answers and does

    @abstractmethod
    def roles(self) -> dict[str, frozenset[str]]:
        """Every role and its privileges."""

    @abstractmethod
    def write_role(self, role: str, privileges: Sequence[str], *, exists: bool) -> None:
        """Create the role with exactly these privileges, or set them on the existing one."""

    @abstractmethod
    def users(self) -> set[str]:
        """Every user id (``name@realm``)."""

    @abstractmethod
    def add_user(self, userid: str, comment: str) -> None: ...

    @abstractmethod
    def acl(self) -> set[tuple[str, str, str, bool]]:
        """Every (path, user or token id, role, propagated) granted."""

    @abstractmethod
    def grant(self, path: str, userid: str, role: str, *, propagate: bool = True) -> None: ...

    @abstractmethod
    def tokens(self, userid: str) -> set[str]:
        """The names of a user's API tokens."""

    @abstractmethod
    def add_token(self, userid: str, name: str, comment: str) -> str:
        """Create a token without privilege separation; answers its secret (shown once)."""

    @abstractmethod
    def remove_token(self, userid: str, name: str) -> None: ...

    # --- the steps the bootstrap takes, each idempotent

    def ensure_role(self, role: str | None = None, privileges: Sequence[str] = ()) -> Change:
        """The role with exactly these privileges; by default every role of :data:`AGENT_ROLES`."""
        wanted = {role: privileges} if role is not None else AGENT_ROLES
        roles = self.roles()
        change = Change.UNCHANGED
        for name, privs in wanted.items():
            current = roles.get(name)
            if current != frozenset(privs):
                self.write_role(name, privs, exists=current is not None)
                change = Change.WRITTEN
        return change

    def ensure_user(self, userid: str = AGENT_USER) -> Change:
        if userid in self.users():
            return Change.UNCHANGED
        self.add_user(userid, AGENT_COMMENT)
        return Change.WRITTEN

    def ensure_grant(self, userid: str = AGENT_USER, grants: Sequence[Grant] = AGENT_GRANTS) -> Change:
        """The user's grants (by default :data:`AGENT_GRANTS`), each with its propagation."""
        acl = self.acl()
        change = Change.UNCHANGED
        for grant in grants:
            if (grant.path, userid, grant.role, grant.propagate) not in acl:
                self.grant(grant.path, userid, grant.role, propagate=grant.propagate)
                change = Change.WRITTEN
        return change

    def ensure_token(self, node: str, known_secret: str | None) -> tuple[Change, str]:
        """The node's token and its secret: kept when the node still has the secret, else made anew."""
        name = token_name(node)
        exists = name in self.tokens(AGENT_USER)
        if exists and known_secret:
            return Change.UNCHANGED, known_secret
        if exists:  # its secret is lost (it is shown only once): replace the token
            self.remove_token(AGENT_USER, name)
        return (Change.RENEWED if exists else Change.WRITTEN), self.add_token(AGENT_USER, name, AGENT_COMMENT)


class PveumAdmin(ProxmoxAdmin):
    """``pveum`` on the node itself (needs root)."""

    def __init__(self, pveum: str = "pveum") -> None:
        self.pveum = pveum

    def _run(self, *args: str, answer: bool = False) -> Any:
        argv = [self.pveum, *args, *(("--output-format", "json") if answer else ())]
        try:
            done = subprocess.run(  # noqa: S603 - fixed program, arguments from validated names
                argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ProxmoxAdminError(f"cannot run {' '.join(argv)}: {exc}") from None
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
            raise ProxmoxAdminError(f"{' '.join(argv)} failed: {detail}")
        if not answer:
            return None
        try:
            return json.loads(done.stdout or "null")
        except ValueError:
            raise ProxmoxAdminError(f"{' '.join(argv)} did not answer JSON: {done.stdout[:200]!r}") from None

    def roles(self) -> dict[str, frozenset[str]]:
        return {str(r["roleid"]): _privileges(r.get("privs")) for r in self._run("role", "list", answer=True)}

    def write_role(self, role: str, privileges: Sequence[str], *, exists: bool) -> None:
        self._run("role", "modify" if exists else "add", role, "--privs", ",".join(privileges))

    def users(self) -> set[str]:
        return {str(u["userid"]) for u in self._run("user", "list", answer=True)}

    def add_user(self, userid: str, comment: str) -> None:
        self._run("user", "add", userid, "--comment", comment)

    def acl(self) -> set[tuple[str, str, str, bool]]:
        return {_acl_entry(a) for a in self._run("acl", "list", answer=True)}

    def grant(self, path: str, userid: str, role: str, *, propagate: bool = True) -> None:
        self._run(
            "acl",
            "modify",
            path,
            "--users",
            userid,
            "--roles",
            role,
            *(() if propagate else ("--propagate", "0")),
        )

    def tokens(self, userid: str) -> set[str]:
        return {str(t["tokenid"]) for t in self._run("user", "token", "list", userid, answer=True)}

    def add_token(self, userid: str, name: str, comment: str) -> str:
        made = self._run(
            "user", "token", "add", userid, name, "--privsep", "0", "--comment", comment, answer=True
        )
        return _secret_of(made)

    def remove_token(self, userid: str, name: str) -> None:
        self._run("user", "token", "remove", userid, name)


class ApiAdmin(ProxmoxAdmin):
    """The Proxmox HTTP API, logged in with a password (root@pam's: only it may manage these)."""

    def __init__(
        self, url: str, user: str, password: str, *, ca_file: Path | None = None, timeout: float = 30.0
    ) -> None:
        self.base = url.rstrip("/") + "/api2/json"
        self.session = requests.Session()
        # Given with every request: a session's own setting loses to REQUESTS_CA_BUNDLE.
        self.verify: str | bool = str(ca_file) if ca_file else True
        self.timeout = timeout
        ticket = self._call("POST", "/access/ticket", {"username": user, "password": password}, login=True)
        self.session.cookies.set("PVEAuthCookie", str(ticket["ticket"]))
        self.session.headers["CSRFPreventionToken"] = str(ticket["CSRFPreventionToken"])

    def _call(
        self, method: str, path: str, data: dict[str, Any] | None = None, *, login: bool = False
    ) -> Any:
        doing = "logging in to Proxmox" if login else f"{method} {path}"
        try:
            response = self.session.request(
                method, self.base + path, data=data, timeout=self.timeout, verify=self.verify
            )
        except requests.RequestException as exc:
            raise ProxmoxAdminError(f"{doing}: Proxmox at {self.base} did not answer: {exc}") from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code >= 400:
            errors = body.get("errors") if isinstance(body, dict) else None
            detail = f" ({errors})" if errors else ""
            message = (body.get("message") if isinstance(body, dict) else None) or response.reason
            raise ProxmoxAdminError(
                f"{doing}: Proxmox answered {response.status_code} {message}{detail}".strip()
            )
        return body.get("data") if isinstance(body, dict) else None

    @staticmethod
    def _quote(part: str) -> str:
        return urllib.parse.quote(part, safe="@")

    def roles(self) -> dict[str, frozenset[str]]:
        return {
            str(r["roleid"]): _privileges(r.get("privs")) for r in self._call("GET", "/access/roles") or []
        }

    def write_role(self, role: str, privileges: Sequence[str], *, exists: bool) -> None:
        privs = ",".join(privileges)
        if exists:
            self._call("PUT", f"/access/roles/{self._quote(role)}", {"privs": privs})
        else:
            self._call("POST", "/access/roles", {"roleid": role, "privs": privs})

    def users(self) -> set[str]:
        return {str(u["userid"]) for u in self._call("GET", "/access/users") or []}

    def add_user(self, userid: str, comment: str) -> None:
        self._call("POST", "/access/users", {"userid": userid, "comment": comment})

    def acl(self) -> set[tuple[str, str, str, bool]]:
        return {_acl_entry(a) for a in self._call("GET", "/access/acl") or []}

    def grant(self, path: str, userid: str, role: str, *, propagate: bool = True) -> None:
        self._call(
            "PUT", "/access/acl", {"path": path, "users": userid, "roles": role, "propagate": int(propagate)}
        )

    def tokens(self, userid: str) -> set[str]:
        return {
            str(t["tokenid"]) for t in self._call("GET", f"/access/users/{self._quote(userid)}/token") or []
        }

    def add_token(self, userid: str, name: str, comment: str) -> str:
        path = f"/access/users/{self._quote(userid)}/token/{self._quote(name)}"
        return _secret_of(self._call("POST", path, {"privsep": 0, "comment": comment}))

    def remove_token(self, userid: str, name: str) -> None:
        self._call("DELETE", f"/access/users/{self._quote(userid)}/token/{self._quote(name)}")


def _acl_entry(entry: Any) -> tuple[str, str, str, bool]:
    """(path, user or token id, role, propagated) of an ACL entry as Proxmox lists it (propagate is 1 when
    the listing leaves it out, Proxmox's default)."""
    return (
        str(entry["path"]),
        str(entry["ugid"]),
        str(entry["roleid"]),
        str(entry.get("propagate", 1)) != "0",
    )


def _privileges(value: Any) -> frozenset[str]:
    """A role's privileges, as Proxmox lists them: a comma-separated string (or a map, in older answers)."""
    if isinstance(value, dict):
        return frozenset(name for name, held in value.items() if held)
    return frozenset(p.strip() for p in str(value or "").split(",") if p.strip())


def _secret_of(made: Any) -> str:
    secret = made.get("value") if isinstance(made, dict) else None
    if not isinstance(secret, str) or not secret:
        raise ProxmoxAdminError("Proxmox made the API token but did not answer its secret")
    return secret
