"""Zitadel's management API in memory, with the surface of ``sources.protocols.ZitadelApi``: what the services
run on in-process tests instead of the devstack's Zitadel emulator (``devstack/identity``).

Its semantics are the emulator's (``devstack.identity.api.handlers``), held to them by
``tests/orchestrator/test_fakezitadel_contract.py``, which runs the same assertions against both:

- users: a search matches user name, display name or email (contains, ignoring case), humans only (every
  user here is one), within one organization if asked, sorted by user name; unknown ids are left out;
- project roles: adding one that exists is ``already_exists``; removing one takes it from every
  authorization and project grant too (none to remove: no error);
- project grants: the project granted to another organization than its owner, with roles that exist
  (``not_found`` for an unknown organization, ``invalid_argument`` for the owner, ``failed_precondition``
  for an unknown role); roles taken from a grant leave the organization's authorizations too, and a
  grant revoked takes the organization's authorizations with it;
- authorizations: one per user and organization (``already_exists``), with roles that exist and, within
  an organization other than the project's owner, that its grant holds (``failed_precondition``);
- the refusals are ``ZitadelRefused(method, status)`` with the client's method names and the emulator's
  Connect codes, ``invalid_argument`` included (an empty or over-long text, repeated role keys).

It is seeded as the emulator seeds itself (``devstack.identity.seed``) from the devstack's users
(``devstack.seed.USERS``): their subjects and organizations (``devstack.identity.claims``), the platform's
roles, the project granted to each other organization with its users' roles, one authorization per user.
``roles_of`` builds a user's roles claim as the emulator's tokens carry it, so that
``tests/orchestrator/inprocess.LocalIssuer`` mints tokens with the roles held now. Thread-safe: the API
serves concurrent requests.
"""

from __future__ import annotations

import datetime
import itertools
import json
import secrets
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from devstack import seed
from devstack.identity.claims import ORGANISATION_ID, organisation_of, subject_of
from devstack.identity.users import SeedUser
from orchestrator.sources.zitadel import Authorization, MachineUser, Organization, User, ZitadelRefused

# The roles the emulator gives the project beside the users' (``devstack.identity.seed.PLATFORM_ROLES``, a
# module of the emulator's Django app that this process cannot import).
PLATFORM_ROLES = ("ADMIN", "USER", "ORG_OWNER")
# The organization that owns the project: roles are given there without a grant (the emulator's OWNER).
OWNER = ORGANISATION_ID
# The emulator's bounds: a text field of 1 to 200 characters, at most 1000 items of a page.
_TEXT_MAX = 200
_PAGE_MAX = 1000
_PAGE_DEFAULT = 100


@dataclass
class _Grant:
    """An authorization: role keys for a user within an organization."""

    id: str
    user_id: str
    organization_id: str
    role_keys: list[str]
    created: int
    active: bool = True


@dataclass
class _Role:
    display_name: str
    group: str = ""


@dataclass
class FakeZitadel:
    """One project's Zitadel: organizations, users, roles, grants to organizations, authorizations."""

    project_id: str = seed.PROJECT_ID
    organizations: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, domain)
    accounts: dict[str, User] = field(default_factory=dict)
    roles: dict[str, _Role] = field(default_factory=dict)
    project_grants: dict[str, list[str]] = field(default_factory=dict)  # organization id -> role keys
    grants: dict[str, _Grant] = field(default_factory=dict)
    machines: dict[str, MachineUser] = field(default_factory=dict)
    jwt_machines: set[str] = field(default_factory=set)  # machine users whose access tokens are JWTs
    machine_keys: dict[str, dict[str, datetime.datetime]] = field(
        default_factory=dict
    )  # user -> key -> expiry

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._sequence = itertools.count(1)

    # ------------------------------------------------------------------ seeding

    @classmethod
    def seeded(
        cls, users: Sequence[Mapping[str, Any]] = seed.USERS, project_id: str = seed.PROJECT_ID
    ) -> FakeZitadel:
        """As the emulator is after its first start with ``users``: the service user's platform roles, then
        each user's account, roles, their organization's grant and their authorization."""
        fake = cls(project_id=project_id)
        for role in PLATFORM_ROLES:
            fake.roles.setdefault(role, _Role(role))
        for index, entry in enumerate(users):
            fake.add_seed_user(SeedUser.from_json(entry, f"user {index}"))
        return fake

    def add_seed_user(self, user: SeedUser) -> None:
        """One user as ``devstack.identity.seed.ensure_grants`` seeds them into an empty directory."""
        with self._lock:
            org_id, domain = organisation_of(user.organization)
            self.organizations[org_id] = (user.organization, domain)
            first, _, last = user.name.strip().partition(" ")
            # Named as the emulator names a user: its first and last name (Django's get_full_name), else
            # the user name.
            name = f"{first} {last.strip()}".strip() or user.username
            ident = subject_of(user.username)
            self.accounts[ident] = User(ident, user.username, name, user.email, org_id)
            wanted = sorted(set(user.roles))
            for role in wanted:
                self.roles.setdefault(role, _Role(role))
            if org_id != OWNER and wanted:
                granted = self.project_grants.setdefault(org_id, [])
                granted += [k for k in wanted if k not in granted]
            if self._grant_of(ident, org_id) is None:
                self._add_grant(ident, org_id, wanted)

    # ------------------------------------------------------------------ tokens

    def roles_of(self, user_id: str) -> dict[str, dict[str, str]]:
        """``{role: {orgId: orgDomain}}`` from the user's active authorizations: their token's roles claim,
        as ``devstack.identity.claims.roles_of`` builds it."""
        with self._lock:
            granted: dict[str, dict[str, str]] = {}
            for grant in self._ordered(g for g in self.grants.values() if g.user_id == user_id and g.active):
                domain = self.organizations[grant.organization_id][1]
                for role in grant.role_keys:
                    granted.setdefault(role, {})[grant.organization_id] = domain
            return dict(sorted(granted.items()))

    # ------------------------------------------------------------------ users

    def search_users(self, search: str, *, organization_id: str | None = None, limit: int = 50) -> list[User]:
        method = "ListUsers"
        with self._lock:
            wanted = _text(method, search).lower()
            org = _text(method, organization_id) if organization_id else None
            found = [
                a
                for a in self._accounts()
                if any(wanted in value.lower() for value in (a.username, a.name, a.email))
                and (org is None or a.organization_id == org)
            ]
            return [a for a in found[: _page_limit(limit)]]

    def users(self, user_ids: Iterable[str]) -> list[User]:
        ids = sorted(set(user_ids))
        if not ids:
            return []
        with self._lock:
            wanted = set(_keys("ListUsers", ids))
            return [a for a in self._accounts() if a.id in wanted][:_PAGE_MAX]

    # ------------------------------------------------------------------ project roles

    def add_project_role(self, role_key: str, display_name: str, group: str) -> bool:
        method = "AddProjectRole"
        with self._lock:
            key = _text(method, role_key)
            display = _text(method, display_name)
            group = _text(method, group, required=False)
            if key in self.roles:
                return False  # the client's answer to already_exists
            self.roles[key] = _Role(display, group)
            return True

    def project_organization(self) -> str:
        return OWNER

    def grant_project(self, organization_id: str, role_keys: Sequence[str]) -> None:
        method = "CreateProjectGrant"
        with self._lock:
            org = _text(method, organization_id)
            if org not in self.organizations:
                raise ZitadelRefused(method, "not_found")
            if org == OWNER:
                raise ZitadelRefused(method, "invalid_argument")
            keys = _keys(method, role_keys)
            self._check_roles(method, keys)
            before = self.project_grants.get(org)
            self.project_grants[org] = keys
            if before is not None:  # already_exists: the client updates it, taking roles away from users too
                taken = set(before) - set(keys)
                for grant in self.grants.values():
                    if grant.organization_id == org and taken & set(grant.role_keys):
                        grant.role_keys = [k for k in grant.role_keys if k not in taken]

    def revoke_project(self, organization_id: str) -> bool:
        with self._lock:
            org = _text("DeleteProjectGrant", organization_id)
            if self.project_grants.pop(org, None) is None:
                return False
            for ident in [g.id for g in self.grants.values() if g.organization_id == org]:
                del self.grants[ident]
            return True

    def remove_project_role(self, role_key: str) -> None:
        with self._lock:
            key = _text("RemoveProjectRole", role_key)
            self.roles.pop(key, None)
            for holder in [*self.grants.values()]:
                holder.role_keys = [k for k in holder.role_keys if k != key]
            for org, keys in self.project_grants.items():
                self.project_grants[org] = [k for k in keys if k != key]

    # ------------------------------------------------------------------ authorizations

    def authorizations(
        self,
        *,
        user_ids: Sequence[str] = (),
        organization_id: str | None = None,
        role_key: str | None = None,
    ) -> list[Authorization]:
        method = "ListAuthorizations"
        with self._lock:
            org = _text(method, organization_id, required=False) if organization_id else None
            role = _text(method, role_key, required=False) if role_key else None
            found: list[Authorization] = []
            for user_id in list(user_ids) or [""]:
                user = _text(method, user_id, required=False) or None
                matching = [
                    g
                    for g in self.grants.values()
                    if (org is None or g.organization_id == org)
                    and (role is None or role in g.role_keys)
                    and (user is None or g.user_id == user)
                ]
                found += [self._authorization(g) for g in self._ordered(matching)[:_PAGE_MAX]]
            return found

    def create_authorization(self, user_id: str, organization_id: str, role_keys: Sequence[str]) -> str:
        method = "CreateAuthorization"
        with self._lock:
            user = _text(method, user_id)
            org = _text(method, organization_id)
            keys = _keys(method, role_keys)
            if (user not in self.accounts and user not in self.machines) or org not in self.organizations:
                raise ZitadelRefused(method, "not_found")
            self._check_roles(method, keys, org)
            if self._grant_of(user, org) is not None:
                raise ZitadelRefused(method, "already_exists")
            return self._add_grant(user, org, keys).id

    def update_authorization(self, authorization_id: str, role_keys: Sequence[str]) -> None:
        method = "UpdateAuthorization"
        with self._lock:
            ident = _text(method, authorization_id)
            keys = _keys(method, role_keys)
            grant = self.grants.get(ident)
            if grant is None:
                raise ZitadelRefused(method, "not_found")
            self._check_roles(method, keys, grant.organization_id)
            grant.role_keys = keys

    def delete_authorization(self, authorization_id: str) -> None:
        with self._lock:
            self.grants.pop(_text("DeleteAuthorization", authorization_id), None)

    # ------------------------------------------------------------------ organizations

    def organization(self, organization_id: str) -> Organization | None:
        with self._lock:
            org = _text("ListOrganizations", organization_id)
            known = self.organizations.get(org)
            return Organization(id=org, name=known[0]) if known is not None else None

    # ------------------------------------------------------------------ service accounts (machine users)

    def create_machine_user(
        self, organization_id: str, username: str, name: str, description: str = ""
    ) -> str:
        method = "CreateUser"
        with self._lock:
            if _text(method, organization_id) not in self.organizations:
                raise ZitadelRefused(method, "not_found")
            _text(method, name)
            _text(method, description, required=False)
            taken = {a.username for a in self.accounts.values()} | {
                m.username for m in self.machines.values()
            }
            if _text(method, username) in taken:
                raise ZitadelRefused(method, "already_exists")
            ident = _new_id()
            self.machines[ident] = MachineUser(ident, username, name, description, organization_id)
            return ident

    def use_jwt_access_tokens(self, user_id: str, organization_id: str, name: str, description: str) -> None:
        method = "UpdateMachine"
        with self._lock:
            machine = self.machines.get(user_id)
            if machine is None:
                raise ZitadelRefused(method, "not_found")
            named = (_text(method, name), _text(method, description, required=False))
            self.machines[user_id] = MachineUser(user_id, machine.username, *named, machine.organization_id)
            self.jwt_machines.add(user_id)

    def add_machine_key(self, user_id: str, expires: datetime.datetime) -> str:
        """A key file's JSON; the fake keeps no key pair (tokens of machine users are minted by the tests)."""
        method = "AddKey"
        with self._lock:
            if user_id not in self.machines:
                raise ZitadelRefused(method, "not_found")
            if expires <= datetime.datetime.now(datetime.UTC):
                raise ZitadelRefused(method, "invalid_argument")
            key_id = _new_id()
            self.machine_keys.setdefault(user_id, {})[key_id] = expires
            content = {"type": "serviceaccount", "keyId": key_id, "key": "", "userId": user_id}
            return json.dumps({**content, "expirationDate": expires.isoformat()})

    def remove_machine_key(self, user_id: str, key_id: str) -> None:
        method = "RemoveKey"
        with self._lock:
            keys = self.machine_keys.get(_text(method, user_id), {})
            if user_id not in self.machines or keys.pop(_text(method, key_id), None) is None:
                raise ZitadelRefused(method, "not_found")

    def machine_users(self, username_prefix: str) -> list[MachineUser]:
        with self._lock:
            found = [m for m in self.machines.values() if m.username.startswith(username_prefix)]
            return sorted(found, key=lambda m: m.username)

    def delete_user(self, user_id: str) -> None:
        """The user goes with its keys and authorizations (the emulator deletes a machine user only)."""
        with self._lock:
            if self.machines.pop(_text("DeleteUser", user_id), None) is None:
                raise ZitadelRefused("DeleteUser", "not_found")
            self.machine_keys.pop(user_id, None)
            self.jwt_machines.discard(user_id)
            for ident in [g.id for g in self.grants.values() if g.user_id == user_id]:
                del self.grants[ident]

    # ------------------------------------------------------------------ inside

    def _accounts(self) -> list[User]:
        return sorted(self.accounts.values(), key=lambda a: a.username)

    def _ordered(self, grants: Iterable[_Grant]) -> list[_Grant]:
        return sorted(grants, key=lambda g: (g.created, g.id))

    def _authorization(self, grant: _Grant) -> Authorization:
        return Authorization(
            id=grant.id,
            user_id=grant.user_id,
            organization_id=grant.organization_id,
            role_keys=tuple(k for k in grant.role_keys if k in self.roles),  # as the emulator answers them
            state="STATE_ACTIVE" if grant.active else "STATE_INACTIVE",
        )

    def _grant_of(self, user_id: str, organization_id: str) -> _Grant | None:
        return next(
            (
                g
                for g in self.grants.values()
                if g.user_id == user_id and g.organization_id == organization_id
            ),
            None,
        )

    def _add_grant(self, user_id: str, organization_id: str, keys: list[str]) -> _Grant:
        ident = _new_id()
        while ident in self.grants:
            ident = _new_id()
        grant = _Grant(ident, user_id, organization_id, list(keys), next(self._sequence))
        self.grants[ident] = grant
        return grant

    def _check_roles(self, method: str, keys: Sequence[str], organization_id: str | None = None) -> None:
        """The roles exist and, within an organization that does not own the project, its grant has them."""
        if any(k not in self.roles for k in keys):
            raise ZitadelRefused(method, "failed_precondition")
        if organization_id is not None and organization_id != OWNER:
            granted = self.project_grants.get(organization_id)
            if granted is None or not set(keys) <= set(granted):
                raise ZitadelRefused(method, "failed_precondition")


def _new_id() -> str:
    """An id shaped like Zitadel's: 18 digits."""
    return str(10**17 + secrets.randbelow(9 * 10**17))


def _text(method: str, value: object, *, required: bool = True) -> str:
    """A text field as the emulator checks it: a string of 1 (0 if not required) to 200 characters."""
    if not isinstance(value, str) or len(value) > _TEXT_MAX or (required and not value):
        raise ZitadelRefused(method, "invalid_argument")
    return value


def _keys(method: str, values: Iterable[object]) -> list[str]:
    """A list of distinct texts of 1 to 200 characters (role keys, user ids)."""
    keys = list(values)
    if not all(isinstance(k, str) and 1 <= len(k) <= _TEXT_MAX for k in keys) or len(set(keys)) != len(keys):
        raise ZitadelRefused(method, "invalid_argument")
    return [str(k) for k in keys]


def _page_limit(limit: int) -> int:
    """The client asks for at most Zitadel's largest page; the emulator reads 0 as its default page."""
    return min(limit, _PAGE_MAX) or _PAGE_DEFAULT
