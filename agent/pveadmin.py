"""The agent's own Proxmox API token, with the least privilege for what the agent does, where it does it.

The agent calls Proxmox as ``flexplane@pve`` through a token of its node,
``flexplane@pve!agent-<node>``, with privilege separation off: the token has the user's privileges, no
more. Nodes share the user and its roles and permissions (``/etc/pve`` is cluster-wide); the token is
each node's own, so enrolling, re-enrolling or removing one node (:meth:`ProxmoxAdmin.remove_node`)
never touches another's agent.

Each privilege sits on the narrowest ACL path where Proxmox checks it for the calls ``agent.proxy``
forwards and the image import makes (:func:`agent_grants`), one role per path:

- ``FlexPlaneAgentAudit`` (Sys.Audit) on ``/`` without propagation (``GET /cluster/status`` checks
  ``/`` itself) and on ``/nodes`` (``GET /nodes/<node>/status``; the cluster's resource listing shows
  the nodes one may audit, and reads fail over between nodes' agents, so every node, not only its own);
  nothing below ``/access``, ``/mapping`` or ``/storage`` gets Sys.Audit any more;
- ``FlexPlaneAgent`` (the VM privileges) on ``/vms``: VMIDs are picked at clone time, Proxmox ACLs
  have no wildcard, and VDC pools appear while the platform runs, so no narrower path exists that the
  bootstrap could write once (docs/install.md argues it privilege by privilege);
- ``FlexPlaneAgentPool`` (Pool.Audit, Pool.Allocate) on ``/pool``: ``POST /pools`` checks the new
  pool's own path, which does not exist before; every pool that exists at bootstrap and is not
  flex.plane's (``fp-*``) gets ``NoAccess``, so the agent can neither change it nor its permissions
  (Proxmox lets Pool.Allocate on ``/pool/<pool>`` edit that path's ACL);
- ``FlexPlaneAgentStorage`` (Datastore.Audit, AllocateSpace, AllocateTemplate) on ``/storage``;
- ``FlexPlaneAgentSDN`` under ``/sdn`` only: on ``/sdn`` without propagation (``PUT /cluster/sdn``,
  applying pending changes) and on ``/sdn/zones`` (zones, VNets, subnets, a NIC on a VNet), with
  ``NoAccess`` on ``/sdn/zones/localnetwork``: a NIC on the node's own bridges (``vmbr0``) is checked
  as SDN.Use on ``/sdn/zones/localnetwork/<bridge>``, which the agent may not. Controllers, IPAMs, DNS
  and fabrics get nothing.

The privileges follow the node's Proxmox version (:func:`agent_roles`): reading a guest's addresses
through the QEMU guest agent needs VM.Monitor on Proxmox VE 8 and VM.GuestAgent.Audit on 9, which
dropped VM.Monitor; each version's ``pveum role add`` refuses the other's name.

:class:`ProxmoxAdmin` is the small interface the bootstrap needs; :class:`PveumAdmin` runs ``pveum``
(and ``pveversion``, ``pvesh``, ``pvesm``) on the node (as root, the usual case) and :class:`ApiAdmin`
uses the Proxmox HTTP API with root's password (where those are not at hand, and in the tests against
the fake Proxmox).
"""

from __future__ import annotations

import json
import re
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
AGENT_COMMENT = "flex.plane agent (made by flexplane-agent bootstrap)"
FLEXPLANE_POOL_PREFIX = "fp-"  # the platform's pools (fp-<vdc>); any other pool is the operator's
SUPPORTED_MAJORS = (8, 9)
# The privilege GET .../qemu/{vmid}/agent/network-get-interfaces checks, by Proxmox VE major version.
GUEST_AGENT_PRIVILEGE = {8: "VM.Monitor", 9: "VM.GuestAgent.Audit"}

AGENT_AUDIT_ROLE = "FlexPlaneAgentAudit"
AGENT_AUDIT_PRIVILEGES = ("Sys.Audit",)  # GET /cluster/status (on /), GET /nodes/{node}/status
AGENT_ROLE = "FlexPlaneAgent"
# What each privilege is for: the Proxmox paths of agent.proxy and agent.images that need it (on /vms).
AGENT_VM_PRIVILEGES = (
    "VM.Audit",  # GET .../qemu/{vmid}/config, pending, status/current, snapshot, firewall
    "VM.Allocate",  # clone targets, DELETE .../qemu/{vmid}, the image import's VM and template
    "VM.Clone",  # POST .../qemu/{vmid}/clone
    "VM.Config.Disk",  # resize, disks in config
    "VM.Config.CDROM",  # the cloud-init drive
    "VM.Config.CPU",
    "VM.Config.Memory",
    "VM.Config.Network",  # NICs, the VM's firewall
    "VM.Config.HWType",
    "VM.Config.Options",
    "VM.Config.Cloudinit",  # ciuser, sshkeys, ipconfig, cicustom
    "VM.PowerMgmt",  # POST .../status/{start,stop,shutdown,reboot}
    "VM.Snapshot",  # POST .../snapshot, DELETE .../snapshot/{snapname}
    "VM.Snapshot.Rollback",  # POST .../snapshot/{snapname}/rollback
    "VM.Migrate",  # draining a host
)
AGENT_POOL_ROLE = "FlexPlaneAgentPool"
AGENT_POOL_PRIVILEGES = (
    "Pool.Audit",  # GET /pools/{poolid}
    "Pool.Allocate",  # VDC pools: create, add members, delete
)
AGENT_STORAGE_ROLE = "FlexPlaneAgentStorage"
AGENT_STORAGE_PRIVILEGES = (
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
COMMAND_TIMEOUT = 60.0
SNIPPETS = "snippets"  # the content type a storage needs for cloud-init snippets (cicustom)


class ProxmoxAdminError(Exception):
    """Proxmox refused, or could not be reached; the message says what was being done."""


class UnsupportedVersion(ProxmoxAdminError):
    """The node runs a Proxmox VE version the agent's privileges are not known for."""


def proxmox_major(version: str) -> int:
    """The major version of Proxmox VE from ``pveversion``'s line (``pve-manager/8.4.1/2a5f…``) or the
    API's ``/version`` (``9.0.10``); UnsupportedVersion unless it is one the agent knows."""
    found = re.search(r"(?:^|pve-manager/)(\d+)\.\d+", version.strip())
    if found is None:
        raise UnsupportedVersion(f"cannot tell the Proxmox VE version from {version.strip()[:80]!r}")
    major = int(found.group(1))
    if major not in SUPPORTED_MAJORS:
        supported = " and ".join(str(m) for m in SUPPORTED_MAJORS)
        raise UnsupportedVersion(
            f"Proxmox VE {major} is not supported (the agent's privileges are known for {supported})"
        )
    return major


def agent_roles(major: int) -> dict[str, tuple[str, ...]]:
    """Every role the agent's grants name, with its privileges as Proxmox VE ``major`` spells them."""
    if major not in GUEST_AGENT_PRIVILEGE:
        raise UnsupportedVersion(f"Proxmox VE {major} is not supported")
    return {
        AGENT_AUDIT_ROLE: AGENT_AUDIT_PRIVILEGES,
        AGENT_ROLE: (*AGENT_VM_PRIVILEGES, GUEST_AGENT_PRIVILEGE[major]),
        AGENT_POOL_ROLE: AGENT_POOL_PRIVILEGES,
        AGENT_STORAGE_ROLE: AGENT_STORAGE_PRIVILEGES,
        AGENT_SDN_ROLE: AGENT_SDN_PRIVILEGES,
    }


@dataclass(frozen=True)
class Grant:
    """A role on an ACL path, propagated to the paths below it or not."""

    path: str
    role: str
    propagate: bool = True


AGENT_GRANTS = (
    Grant("/", AGENT_AUDIT_ROLE, propagate=False),
    Grant("/nodes", AGENT_AUDIT_ROLE),
    Grant("/vms", AGENT_ROLE),
    Grant("/pool", AGENT_POOL_ROLE),
    Grant("/storage", AGENT_STORAGE_ROLE),
    Grant("/sdn", AGENT_SDN_ROLE, propagate=False),
    Grant("/sdn/zones", AGENT_SDN_ROLE),
    Grant("/sdn/zones/localnetwork", NO_ACCESS),
)


def agent_grants(pools: Sequence[str] = ()) -> tuple[Grant, ...]:
    """The agent user's grants: :data:`AGENT_GRANTS`, and NoAccess on each of ``pools`` (those that
    exist) that is not the platform's."""
    theirs = sorted(p for p in pools if not p.startswith(FLEXPLANE_POOL_PREFIX))
    return (*AGENT_GRANTS, *(Grant(f"/pool/{pool}", NO_ACCESS) for pool in theirs))


class Change(StrEnum):
    """What a bootstrap step did."""

    UNCHANGED = "unchanged"
    WRITTEN = "written"
    RENEWED = "renewed"
    REMOVED = "removed"


def token_name(node: str) -> str:
    """The node's token name (a Proxmox token name must start with a letter; a node name need not)."""
    return f"agent-{node}"


def token_id(node: str) -> str:
    return f"{AGENT_USER}!{token_name(node)}"


def snippets_plan(storage: str, content: set[str]) -> str:
    """The command that gives ``storage`` the snippets content type, keeping what it has."""
    return f"pvesm set {storage} --content {','.join(sorted(content | {SNIPPETS}))}"


class ProxmoxAdmin(ABC):
    """Users, roles, permissions, API tokens and storages of the node's Proxmox cluster."""

    # --- what an implementation answers and does

    @abstractmethod
    def version(self) -> str:
        """The Proxmox VE version, as ``pveversion`` or the API's ``/version`` says it."""

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
    def revoke(self, path: str, userid: str, role: str) -> None: ...

    @abstractmethod
    def pools(self) -> set[str]:
        """Every pool's id."""

    @abstractmethod
    def tokens(self, userid: str) -> set[str]:
        """The names of a user's API tokens."""

    @abstractmethod
    def add_token(self, userid: str, name: str, comment: str) -> str:
        """Create a token without privilege separation; answers its secret (shown once)."""

    @abstractmethod
    def remove_token(self, userid: str, name: str) -> None:
        """Delete the token (Proxmox deletes the token's own permissions with it)."""

    @abstractmethod
    def storage_content(self, storage: str) -> set[str]:
        """The content types the storage is configured for."""

    @abstractmethod
    def set_storage_content(self, storage: str, content: set[str]) -> None: ...

    @abstractmethod
    def sdn_zones(self) -> set[str]:
        """The cluster's SDN zones; ProxmoxAdminError where Proxmox has no SDN to ask."""

    # --- the steps the bootstrap (and the removal) take, each idempotent

    def major(self) -> int:
        """The node's Proxmox VE major version; UnsupportedVersion for one the agent does not know."""
        return proxmox_major(self.version())

    def ensure_role(self, major: int | None = None) -> Change:
        """Every role of :func:`agent_roles` for the node's version, with exactly its privileges."""
        wanted = agent_roles(self.major() if major is None else major)
        roles = self.roles()
        change = Change.UNCHANGED
        for name, privs in wanted.items():
            current = roles.get(name)
            if current != frozenset(privs):
                try:
                    self.write_role(name, privs, exists=current is not None)
                except ProxmoxAdminError as exc:
                    if not _made_meanwhile(exc):
                        raise
                    self.write_role(name, privs, exists=True)
                change = Change.WRITTEN
        return change

    def ensure_user(self, userid: str = AGENT_USER) -> Change:
        if userid in self.users():
            return Change.UNCHANGED
        try:
            self.add_user(userid, AGENT_COMMENT)
        except ProxmoxAdminError as exc:
            if not _made_meanwhile(exc):
                raise
            return Change.UNCHANGED
        return Change.WRITTEN

    def ensure_grant(self, userid: str = AGENT_USER, grants: Sequence[Grant] | None = None) -> Change:
        """Exactly the user's grants (by default :func:`agent_grants` with the pools there are now), each
        with its propagation: a grant an earlier bootstrap wrote that is no longer wanted (the role on
        ``/`` of older releases) is revoked, so the user never holds more than this release needs."""
        wanted = {
            (g.path, g.role, g.propagate)
            for g in (agent_grants(sorted(self.pools())) if grants is None else grants)
        }
        held = {(path, role, propagate) for path, ugid, role, propagate in self.acl() if ugid == userid}
        change = Change.UNCHANGED
        for path, role, propagate in sorted(held - wanted):
            if (path, role, not propagate) not in wanted:  # a propagation change is a new grant's
                self.revoke(path, userid, role)
            change = Change.WRITTEN
        for path, role, propagate in sorted(wanted - held):
            self.grant(path, userid, role, propagate=propagate)
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

    def ensure_snippets(self, storage: str, *, may_change: bool = True) -> Change:
        """The storage allows snippets (the agent's cloud-init files): enabled here, keeping its other
        content types, or, when the operator keeps storage settings to themselves, ProxmoxAdminError
        naming the storage and the command to run."""
        content = self.storage_content(storage)
        if SNIPPETS in content:
            return Change.UNCHANGED
        if not may_change:
            has = ",".join(sorted(content)) or "none"
            raise ProxmoxAdminError(
                f"storage {storage} does not allow snippets, which the agent writes cloud-init files to "
                f"(content: {has}); enable it: {snippets_plan(storage, content)}"
            )
        self.set_storage_content(storage, content | {SNIPPETS})
        return Change.WRITTEN

    def remove_node(self, node: str) -> Change:
        """Take back this node's token (and with it the token's permissions); the user, roles and grants
        the other nodes' tokens work through stay."""
        name = token_name(node)
        if name not in self.tokens(AGENT_USER):
            return Change.UNCHANGED
        self.remove_token(AGENT_USER, name)
        return Change.REMOVED


class PveumAdmin(ProxmoxAdmin):
    """``pveum`` on the node itself (needs root), with ``pveversion``, and ``pvesh`` and ``pvesm`` for the
    storage's content types."""

    def __init__(
        self,
        pveum: str = "pveum",
        *,
        pveversion: str = "pveversion",
        pvesh: str = "pvesh",
        pvesm: str = "pvesm",
    ) -> None:
        self.pveum = pveum
        self.pveversion = pveversion
        self.pvesh = pvesh
        self.pvesm = pvesm

    def _run(self, *args: str, answer: bool = False, program: str | None = None) -> Any:
        argv = [program or self.pveum, *args, *(("--output-format", "json") if answer else ())]
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
            return done.stdout
        try:
            return json.loads(done.stdout or "null")
        except ValueError:
            raise ProxmoxAdminError(f"{' '.join(argv)} did not answer JSON: {done.stdout[:200]!r}") from None

    def version(self) -> str:
        return str(self._run(program=self.pveversion))

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

    def revoke(self, path: str, userid: str, role: str) -> None:
        self._run("acl", "delete", path, "--users", userid, "--roles", role)

    def pools(self) -> set[str]:
        return {str(p["poolid"]) for p in self._run("pool", "list", answer=True) or []}

    def tokens(self, userid: str) -> set[str]:
        return {str(t["tokenid"]) for t in self._run("user", "token", "list", userid, answer=True)}

    def add_token(self, userid: str, name: str, comment: str) -> str:
        made = self._run(
            "user", "token", "add", userid, name, "--privsep", "0", "--comment", comment, answer=True
        )
        return _secret_of(made)

    def remove_token(self, userid: str, name: str) -> None:
        self._run("user", "token", "remove", userid, name)

    def storage_content(self, storage: str) -> set[str]:
        answer = self._run("get", f"/storage/{storage}", answer=True, program=self.pvesh)
        return _content(answer, storage)

    def set_storage_content(self, storage: str, content: set[str]) -> None:
        self._run("set", storage, "--content", ",".join(sorted(content)), program=self.pvesm)

    def sdn_zones(self) -> set[str]:
        return {
            str(z["zone"])
            for z in self._run("get", "/cluster/sdn/zones", answer=True, program=self.pvesh) or []
        }


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

    def version(self) -> str:
        answer = self._call("GET", "/version")
        return str(answer.get("version", "")) if isinstance(answer, dict) else ""

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

    def revoke(self, path: str, userid: str, role: str) -> None:
        self._call("PUT", "/access/acl", {"path": path, "users": userid, "roles": role, "delete": 1})

    def pools(self) -> set[str]:
        return {str(p["poolid"]) for p in self._call("GET", "/pools") or []}

    def tokens(self, userid: str) -> set[str]:
        return {
            str(t["tokenid"]) for t in self._call("GET", f"/access/users/{self._quote(userid)}/token") or []
        }

    def add_token(self, userid: str, name: str, comment: str) -> str:
        path = f"/access/users/{self._quote(userid)}/token/{self._quote(name)}"
        return _secret_of(self._call("POST", path, {"privsep": 0, "comment": comment}))

    def remove_token(self, userid: str, name: str) -> None:
        self._call("DELETE", f"/access/users/{self._quote(userid)}/token/{self._quote(name)}")

    def storage_content(self, storage: str) -> set[str]:
        return _content(self._call("GET", f"/storage/{self._quote(storage)}"), storage)

    def set_storage_content(self, storage: str, content: set[str]) -> None:
        self._call("PUT", f"/storage/{self._quote(storage)}", {"content": ",".join(sorted(content))})

    def sdn_zones(self) -> set[str]:
        return {str(z["zone"]) for z in self._call("GET", "/cluster/sdn/zones") or []}


def _made_meanwhile(exc: ProxmoxAdminError) -> bool:
    """Another node's bootstrap, run at the same time, made the role or user between our look and our
    write: Proxmox refuses the second ``add`` with "already exists" (nodes share ``/etc/pve``)."""
    return "already exists" in str(exc)


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


def _content(answer: Any, storage: str) -> set[str]:
    """A storage's content types from its configuration as Proxmox answers it."""
    if not isinstance(answer, dict):
        raise ProxmoxAdminError(f"Proxmox did not answer storage {storage}'s configuration")
    return {c.strip() for c in str(answer.get("content") or "").split(",") if c.strip()}


def _secret_of(made: Any) -> str:
    secret = made.get("value") if isinstance(made, dict) else None
    if not isinstance(secret, str) or not secret:
        raise ProxmoxAdminError("Proxmox made the API token but did not answer its secret")
    return secret
