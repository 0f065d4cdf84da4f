"""Zitadel's management API: users, project roles and authorizations (user grants), organizations.

The only module that speaks to Zitadel's APIs (token checks stay in ``orchestrator.auth``). It uses
Zitadel's current (v2) services, Connect-style: ``POST <base>/<package>.<Service>/<Method>`` with a
JSON body in protobuf's JSON mapping (lowerCamelCase fields, 64-bit integers as strings) and the
header ``Connect-Protocol-Version: 1``. Every method used has a v2 equivalent, so none of the v1
management API is used:

=================================  ==========================================================
``zitadel.user.v2.UserService``    ``ListUsers`` (search, and the users of an organization)
``zitadel.project.v2...``          ``ProjectService/AddProjectRole``, ``RemoveProjectRole``,
                                   ``GetProject``, ``CreateProjectGrant``, ``UpdateProjectGrant``,
                                   ``DeleteProjectGrant``
``zitadel.authorization.v2...``    ``AuthorizationService/ListAuthorizations``,
                                   ``CreateAuthorization``, ``UpdateAuthorization``,
                                   ``DeleteAuthorization`` (v1's user grants)
``zitadel.org.v2...``              ``OrganizationService/ListOrganizations``
=================================  ==========================================================

It authenticates as a service user with a JWT profile key (the JSON key file Zitadel hands out,
mounted from a Secret): an RS256 assertion signed with the key goes to ``/oauth/v2/token``
(grant type jwt-bearer) with the scope ``urn:zitadel:iam:org:project:id:zitadel:aud``, without which
Zitadel's APIs refuse the token. The token is kept in memory for its lifetime only, less a margin.

Every call has a deadline. Failures are domain errors naming Zitadel: ``Unavailable("Zitadel")``
when it did not answer in time or answered that it cannot now; ``ZitadelRefused`` with the Connect
code when it said no. Zitadel's own message is logged, never passed on: it may name objects of
other organizations.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import requests
from django.conf import settings

from orchestrator.errors import FlexPlaneError, Unavailable

logger = logging.getLogger(__name__)

WHERE = "Zitadel"
CONNECT_PROTOCOL_VERSION = "1"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
API_SCOPE = "openid urn:zitadel:iam:org:project:id:zitadel:aud"
TOKEN_PATH = "/oauth/v2/token"  # noqa: S105 - a path, not a secret
# A token is replaced this long before Zitadel says it expires (clock skew, a slow call).
_TOKEN_MARGIN = 30.0
# Zitadel's largest page; flex.plane never lists more users or authorizations in one answer.
PAGE_LIMIT = 1000

USERS = "zitadel.user.v2.UserService"
PROJECTS = "zitadel.project.v2.ProjectService"
AUTHORIZATIONS = "zitadel.authorization.v2.AuthorizationService"
ORGANIZATIONS = "zitadel.org.v2.OrganizationService"

# The Connect codes (connectrpc.com/docs/protocol#error-codes) that mean "not now".
_TRANSIENT = frozenset({"unavailable", "deadline_exceeded", "resource_exhausted", "aborted", "unknown"})
# In gRPC's order: the code numbered n (the v1 REST API's errors) is the n-th.
_GRPC_ORDER = (
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
)
_KNOWN_CODES = frozenset(_GRPC_ORDER)


class ZitadelRefused(FlexPlaneError):
    """Zitadel answered with an error; ``status`` is its Connect code (Zitadel's message is not kept)."""

    code = "UPSTREAM_FAILURE"

    def __init__(self, method: str, status: str) -> None:
        super().__init__(f"Zitadel refused {method} ({status})")
        self.where = WHERE
        self.method = method
        self.status = status


@dataclass(frozen=True)
class ServiceKey:
    """A service user's JWT profile key, as Zitadel's key file holds it."""

    key_id: str
    user_id: str
    private_key: str = field(repr=False)

    @classmethod
    def from_json(cls, text: str) -> ServiceKey:
        try:
            data = json.loads(text)
            return cls(key_id=str(data["keyId"]), user_id=str(data["userId"]), private_key=str(data["key"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                "the Zitadel key file is not a service user's JSON key (keyId, userId, key)"
            ) from exc

    @classmethod
    def from_file(cls, path: str | Path) -> ServiceKey:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class User:
    """A Zitadel user, as flex.plane shows one."""

    id: str
    username: str
    name: str
    email: str
    organization_id: str
    state: str = "USER_STATE_ACTIVE"


@dataclass(frozen=True)
class MachineUser:
    """A service account (Zitadel's machine user): no password, it signs in with its keys."""

    id: str
    username: str
    name: str
    description: str
    organization_id: str


@dataclass(frozen=True)
class Authorization:
    """A user grant: role keys of the project, given to a user within an organization."""

    id: str
    user_id: str
    organization_id: str
    role_keys: tuple[str, ...]
    state: str = "STATE_ACTIVE"


@dataclass(frozen=True)
class Organization:
    id: str
    name: str


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _user(item: Mapping[str, Any]) -> User:
    human = item.get("human") or {}
    profile = human.get("profile") or {}
    email = human.get("email") or {}
    machine = item.get("machine") or {}
    details = item.get("details") or {}
    username = _text(item.get("username"))
    name = _text(profile.get("displayName")) or _text(machine.get("name")) or username
    return User(
        id=_text(item.get("userId")),
        username=username,
        name=name,
        email=_text(email.get("email")),
        organization_id=_text(details.get("resourceOwner")),
        state=_text(item.get("state")) or "USER_STATE_UNSPECIFIED",
    )


def _machine_user(item: Mapping[str, Any]) -> MachineUser:
    machine = item.get("machine") or {}
    return MachineUser(
        id=_text(item.get("userId")),
        username=_text(item.get("username")),
        name=_text(machine.get("name")),
        description=_text(machine.get("description")),
        organization_id=_text((item.get("details") or {}).get("resourceOwner")),
    )


def _authorization(item: Mapping[str, Any]) -> Authorization:
    return Authorization(
        id=_text(item.get("id")),
        user_id=_text((item.get("user") or {}).get("id")),
        organization_id=_text((item.get("organization") or {}).get("id")),
        role_keys=tuple(_text(r.get("key")) for r in item.get("roles") or [] if isinstance(r, Mapping)),
        state=_text(item.get("state")) or "STATE_UNSPECIFIED",
    )


class ZitadelSource:
    """Typed calls to one Zitadel instance, as one service user."""

    def __init__(
        self,
        base_url: str,
        key: ServiceKey,
        project_id: str,
        *,
        timeout: float = 5.0,
        audience: str | None = None,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.project_id = project_id
        self.timeout = timeout
        # The assertion's audience is Zitadel's issuer: its external URL, the API's base by default.
        self.audience = (audience or self.base_url).rstrip("/")
        self.session = session or requests.Session()
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = 0.0

    # ------------------------------------------------------------------ the service user's token

    def _assertion(self) -> str:
        now = int(time.time())
        claims = {
            "iss": self.key.user_id,
            "sub": self.key.user_id,
            "aud": self.audience,
            "iat": now,
            "exp": now + 300,
            "jti": str(uuid.uuid4()),
        }
        return jwt.encode(claims, self.key.private_key, algorithm="RS256", headers={"kid": self.key.key_id})

    def token(self) -> str:
        """The service user's access token, fetched again once it is (nearly) expired."""
        with self._lock:
            if self._token is not None and time.monotonic() < self._expires:
                return self._token
            try:
                response = self.session.post(
                    f"{self.base_url}{TOKEN_PATH}",
                    data={"grant_type": JWT_BEARER, "assertion": self._assertion(), "scope": API_SCOPE},
                    timeout=self.timeout,
                )
            except requests.RequestException as exc:
                raise Unavailable(WHERE, f"Zitadel did not answer within {self.timeout:g}s") from exc
            body = _json(response)
            if response.status_code >= 500:
                raise Unavailable(WHERE, f"Zitadel could not issue a token now (HTTP {response.status_code})")
            token = body.get("access_token")
            if response.status_code != 200 or not isinstance(token, str):
                logger.warning(
                    "zitadel: token refused: HTTP %s %.200s", response.status_code, body.get("error")
                )
                raise ZitadelRefused("the service user's token", "unauthenticated")
            lifetime = float(body.get("expires_in") or 0)
            self._token = token
            self._expires = time.monotonic() + max(0.0, lifetime - _TOKEN_MARGIN)
            return token

    def forget_token(self) -> None:
        with self._lock:
            self._token = None
            self._expires = 0.0

    # ------------------------------------------------------------------ one Connect call

    def call(self, service: str, method: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /<service>/<method>``: the answer's JSON, or a domain error naming Zitadel."""
        headers = {"Connect-Protocol-Version": CONNECT_PROTOCOL_VERSION}
        return self._send("POST", f"{self.base_url}/{service}/{method}", method, body, headers)

    def _send(
        self, verb: str, url: str, method: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> dict[str, Any]:
        """One call with the service user's token (a new one, once, if it was refused): a Connect call,
        or one of the v1 API's REST calls (grpc-gateway, whose errors carry gRPC's numeric code)."""
        for attempt in (1, 2):
            token = self.token()
            try:
                response = self.session.request(
                    verb,
                    url,
                    json=dict(body),
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                        **headers,
                    },
                    timeout=self.timeout,
                )
            except requests.RequestException as exc:
                raise Unavailable(WHERE, f"Zitadel did not answer {method} within {self.timeout:g}s") from exc
            answer = _json(response)
            if response.status_code == 200:
                return answer
            status = _status_of(answer.get("code"))
            if status == "unauthenticated" and attempt == 1:
                self.forget_token()  # revoked or expired early: one new token, one retry
                continue
            logger.log(
                logging.WARNING if response.status_code >= 500 else logging.INFO,
                "zitadel: %s %s answered HTTP %s %s: %.300s",
                verb,
                url.removeprefix(self.base_url),
                response.status_code,
                status,
                answer.get("message"),
            )
            if status in _TRANSIENT or response.status_code >= 500:
                raise Unavailable(WHERE, f"Zitadel could not answer {method} now ({status})")
            raise ZitadelRefused(method, str(status))
        raise ZitadelRefused(method, "unauthenticated")  # pragma: no cover - the loop returns or raises

    # ------------------------------------------------------------------ users

    def search_users(self, search: str, *, organization_id: str | None = None, limit: int = 50) -> list[User]:
        """Users whose user name, display name or email contains ``search`` (case-insensitive)."""
        method = "TEXT_QUERY_METHOD_CONTAINS_IGNORE_CASE"
        queries: list[dict[str, Any]] = [
            {
                "orQuery": {
                    "queries": [
                        {"userNameQuery": {"userName": search, "method": method}},
                        {"displayNameQuery": {"displayName": search, "method": method}},
                        {"emailQuery": {"emailAddress": search, "method": method}},
                    ]
                }
            },
            {"typeQuery": {"type": "TYPE_HUMAN"}},
        ]
        if organization_id:
            queries.append({"organizationIdQuery": {"organizationId": organization_id}})
        return self._users(queries, limit)

    def users(self, user_ids: Iterable[str]) -> list[User]:
        """The users of these ids that exist (unknown ids are left out)."""
        ids = sorted(set(user_ids))
        if not ids:
            return []
        return self._users([{"inUserIdsQuery": {"userIds": ids}}], PAGE_LIMIT)

    def _users(self, queries: list[dict[str, Any]], limit: int) -> list[User]:
        answer = self.call(
            USERS,
            "ListUsers",
            {
                "query": {"offset": "0", "limit": min(limit, PAGE_LIMIT), "asc": True},
                "sortingColumn": "USER_FIELD_NAME_USER_NAME",
                "queries": queries,
            },
        )
        return [_user(item) for item in answer.get("result") or [] if isinstance(item, Mapping)]

    # ------------------------------------------------------------------ service accounts (machine users)

    def create_machine_user(
        self, organization_id: str, username: str, name: str, description: str = ""
    ) -> str:
        """A machine user in ``organization_id``; its id (the ``sub`` of its tokens)."""
        answer = self.call(
            USERS,
            "CreateUser",
            {
                "organizationId": organization_id,
                "username": username,
                "machine": {"name": name, "description": description},
            },
        )
        return _text(answer.get("id"))

    def add_machine_key(self, user_id: str, expires: datetime.datetime) -> str:
        """A new JWT profile key for the machine user, valid until ``expires``: its key file's JSON.

        Zitadel answers the private key this once (``keyContent``, base64 of the key file).
        """
        moment = expires.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        answer = self.call(USERS, "AddKey", {"userId": user_id, "expirationDate": moment})
        try:
            return base64.b64decode(_text(answer.get("keyContent")), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ZitadelRefused("AddKey", "unknown") from exc

    def remove_machine_key(self, user_id: str, key_id: str) -> None:
        """The machine user's key ``key_id`` is gone: it gives no next token (``ZitadelRefused`` with
        ``not_found`` when there is no such key)."""
        self.call(USERS, "RemoveKey", {"userId": user_id, "keyId": key_id})

    def use_jwt_access_tokens(self, user_id: str, organization_id: str, name: str, description: str) -> None:
        """Have Zitadel issue the machine user JWT access tokens (the orchestrator checks JWTs only).

        Zitadel's v2 API makes machine users with opaque tokens and has no way to change that: the v1
        management API's ``UpdateMachine`` does (``PUT /management/v1/users/{id}/machine``, in the user's
        organization), and needs the name and description again.
        """
        self._send(
            "PUT",
            f"{self.base_url}/management/v1/users/{user_id}/machine",
            "UpdateMachine",
            {"name": name, "description": description, "accessTokenType": "ACCESS_TOKEN_TYPE_JWT"},
            {"x-zitadel-orgid": organization_id},
        )

    def machine_users(self, username_prefix: str) -> list[MachineUser]:
        """The machine users whose user name starts with ``username_prefix``, sorted by user name."""
        answer = self.call(
            USERS,
            "ListUsers",
            {
                "query": {"offset": "0", "limit": PAGE_LIMIT, "asc": True},
                "sortingColumn": "USER_FIELD_NAME_USER_NAME",
                "queries": [
                    {"typeQuery": {"type": "TYPE_MACHINE"}},
                    {
                        "userNameQuery": {
                            "userName": username_prefix,
                            "method": "TEXT_QUERY_METHOD_STARTS_WITH",
                        }
                    },
                ],
            },
        )
        found = [_machine_user(item) for item in answer.get("result") or [] if isinstance(item, Mapping)]
        return sorted((m for m in found if m.username.startswith(username_prefix)), key=lambda m: m.username)

    def delete_user(self, user_id: str) -> None:
        """The user is gone, with its keys and grants: its next token is refused."""
        self.call(USERS, "DeleteUser", {"userId": user_id})

    # ------------------------------------------------------------------ project roles

    def add_project_role(self, role_key: str, display_name: str, group: str) -> bool:
        """Add a role to the project; False when it existed already."""
        try:
            self.call(
                PROJECTS,
                "AddProjectRole",
                {
                    "projectId": self.project_id,
                    "roleKey": role_key,
                    "displayName": display_name,
                    "group": group,
                },
            )
        except ZitadelRefused as exc:
            if exc.status == "already_exists":
                return False
            raise
        return True

    def project_organization(self) -> str:
        """The id of the organization that owns the project (its roles may be given there without a grant)."""
        answer = self.call(PROJECTS, "GetProject", {"projectId": self.project_id})
        return _text((answer.get("project") or {}).get("organizationId"))

    def grant_project(self, organization_id: str, role_keys: Sequence[str]) -> None:
        """Grant the project to another organization with exactly these roles (created, else updated), so
        that roles can be given to its users within it. Roles taken away leave its users' grants too."""
        body = {
            "projectId": self.project_id,
            "grantedOrganizationId": organization_id,
            "roleKeys": list(role_keys),
        }
        try:
            self.call(PROJECTS, "CreateProjectGrant", body)
        except ZitadelRefused as exc:
            if exc.status != "already_exists":
                raise
            self.call(PROJECTS, "UpdateProjectGrant", body)

    def revoke_project(self, organization_id: str) -> bool:
        """Take the project's grant away from another organization; False when it had none.

        Zitadel deletes with it the organization's authorizations of the project: its users lose the
        project's roles given within it (USER, ORG_OWNER, its VDCs')."""
        try:
            answer = self.call(
                PROJECTS,
                "DeleteProjectGrant",
                {"projectId": self.project_id, "grantedOrganizationId": organization_id},
            )
        except ZitadelRefused as exc:
            if exc.status == "not_found":
                return False
            raise
        return bool(answer.get("deletionDate"))

    def remove_project_role(self, role_key: str) -> None:
        """Remove a role from the project and from every authorization that has it (none: fine)."""
        self.call(PROJECTS, "RemoveProjectRole", {"projectId": self.project_id, "roleKey": role_key})

    # ------------------------------------------------------------------ authorizations

    def authorizations(
        self,
        *,
        user_ids: Sequence[str] = (),
        organization_id: str | None = None,
        role_key: str | None = None,
    ) -> list[Authorization]:
        """The project's authorizations, narrowed to these users, organization or role."""
        filters: list[dict[str, Any]] = [{"projectId": {"id": self.project_id}}]
        if organization_id:
            filters.append({"organizationId": {"id": organization_id}})
        if role_key:
            filters.append({"roleKey": {"key": role_key, "method": "TEXT_FILTER_METHOD_EQUALS"}})
        found: list[Authorization] = []
        for user_id in list(user_ids) or [""]:
            narrowed = filters + ([{"userId": {"id": user_id}}] if user_id else [])
            answer = self.call(
                AUTHORIZATIONS,
                "ListAuthorizations",
                {"pagination": {"offset": "0", "limit": PAGE_LIMIT, "asc": True}, "filters": narrowed},
            )
            found += [_authorization(a) for a in answer.get("authorizations") or [] if isinstance(a, Mapping)]
        return found

    def create_authorization(self, user_id: str, organization_id: str, role_keys: Sequence[str]) -> str:
        answer = self.call(
            AUTHORIZATIONS,
            "CreateAuthorization",
            {
                "userId": user_id,
                "projectId": self.project_id,
                "organizationId": organization_id,
                "roleKeys": list(role_keys),
            },
        )
        return _text(answer.get("id"))

    def update_authorization(self, authorization_id: str, role_keys: Sequence[str]) -> None:
        """Set the authorization's roles to exactly ``role_keys``."""
        self.call(
            AUTHORIZATIONS, "UpdateAuthorization", {"id": authorization_id, "roleKeys": list(role_keys)}
        )

    def delete_authorization(self, authorization_id: str) -> None:
        self.call(AUTHORIZATIONS, "DeleteAuthorization", {"id": authorization_id})

    # ------------------------------------------------------------------ organizations

    def organization(self, organization_id: str) -> Organization | None:
        answer = self.call(
            ORGANIZATIONS,
            "ListOrganizations",
            {
                "query": {"offset": "0", "limit": 1, "asc": True},
                "queries": [{"idQuery": {"id": organization_id}}],
            },
        )
        for item in answer.get("result") or []:
            if isinstance(item, Mapping) and item.get("id") == organization_id:
                return Organization(id=organization_id, name=_text(item.get("name")))
        return None


def _status_of(code: Any) -> str:
    """A Connect code's name, from Connect's name or the v1 REST API's gRPC number (1 to 16)."""
    if isinstance(code, int) and not isinstance(code, bool) and 1 <= code <= len(_GRPC_ORDER):
        return _GRPC_ORDER[code - 1]
    return code if code in _KNOWN_CODES else "unknown"


def _json(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


_source: ZitadelSource | None = None
_configured = False
_source_lock = threading.Lock()


def zitadel() -> ZitadelSource | None:
    """The process's Zitadel client, built from settings on first use; None when none is configured.

    ``FLEXPLANE_ZITADEL_KEY_FILE`` names the service user's key file (mounted from a Secret);
    ``FLEXPLANE_ZITADEL_URL`` Zitadel's API (default: the OIDC issuer's origin). A key file that cannot be
    read is ``Unavailable`` naming it.
    """
    global _source, _configured
    with _source_lock:
        if not _configured:
            key_file = getattr(settings, "FLEXPLANE_ZITADEL_KEY_FILE", "")
            if key_file:
                try:
                    key = ServiceKey.from_file(key_file)
                except (OSError, ValueError) as exc:
                    # Not there yet (its Secret not mounted) or not a key: said, and read again next time.
                    raise Unavailable(
                        WHERE, f"the service user's key {key_file} cannot be read: {exc}"
                    ) from None
                _source = ZitadelSource(
                    settings.FLEXPLANE_ZITADEL_URL,
                    key,
                    settings.FLEXPLANE_OIDC_PROJECT_ID,
                    timeout=settings.FLEXPLANE_ZITADEL_TIMEOUT,
                    audience=getattr(settings, "FLEXPLANE_ZITADEL_AUDIENCE", "") or None,
                )
            _configured = True
        return _source


NOT_CONFIGURED = "Zitadel's management API is not configured (FLEXPLANE_ZITADEL_KEY_FILE)"


def require_zitadel() -> ZitadelSource:
    """The Zitadel client, or ``Unavailable`` naming Zitadel when none is configured."""
    source = zitadel()
    if source is None:
        raise Unavailable(WHERE, NOT_CONFIGURED)
    return source
