"""Who is calling: bearer tokens checked against the identity provider, turned into a ``Principal``.

Tokens are JWTs signed by the issuer (Zitadel, or the devstack's identity provider). They are
checked against the issuer's JWKS with an algorithm allowlist (never ``none``, never HS*), and
for ``iss``, ``aud``, ``exp`` and ``nbf``. Where the issuer types its tokens (RFC 9068's ``at+jwt``),
only its access tokens are accepted: an ID token carries the same signature, issuer and (with
Zitadel's project audience) audience, and must not stand in for one (RFC 8725, section 3.11).
Roles come from Zitadel's project roles claim.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.conf import settings

from orchestrator.errors import Unauthenticated

ADMIN = "ADMIN"
USER = "USER"
# Owner of an organization (a tenant): manages the VDCs of that organization and their members.
ORG_OWNER = "ORG_OWNER"
VDC_ROLE_PREFIX = "vdc:"
# The organization that owns the user, in Zitadel's tokens (scope urn:zitadel:iam:user:resourceowner).
RESOURCE_OWNER_CLAIM = "urn:zitadel:iam:user:resourceowner:id"
# Symmetric algorithms would let anyone holding the issuer's *public* key mint tokens.
_FORBIDDEN_ALGORITHMS = frozenset({"none", "HS256", "HS384", "HS512"})


@dataclass(frozen=True)
class Principal:
    """The authenticated caller, as the identity provider describes them."""

    subject: str
    name: str
    email: str
    roles: frozenset[str]
    # The organization the user belongs to, and those whose ORG_OWNER they are (from the roles claim).
    organization: str = ""
    owned_organizations: frozenset[str] = frozenset()

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.roles

    @property
    def is_user(self) -> bool:
        return USER in self.roles

    @property
    def vdcs(self) -> frozenset[str]:
        """The VDCs this principal is a member of (roles ``vdc:<id>``)."""
        return frozenset(r[len(VDC_ROLE_PREFIX) :] for r in self.roles if r.startswith(VDC_ROLE_PREFIX))

    @property
    def is_org_owner(self) -> bool:
        return ORG_OWNER in self.roles and bool(self.owned_organizations)

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any], project_id: str) -> Principal:
        granted = roles_map_from_claims(claims, project_id)
        owner = str(claims.get(RESOURCE_OWNER_CLAIM) or "")
        if not owner:  # without the claim: the organization that granted the roles, if only one did
            orgs = {org for orgs in granted.values() for org in orgs}
            owner = next(iter(orgs)) if len(orgs) == 1 else ""
        return cls(
            subject=str(claims["sub"]),
            name=str(claims.get("name") or claims.get("preferred_username") or ""),
            email=str(claims.get("email") or ""),
            roles=frozenset(granted),
            organization=owner,
            owned_organizations=granted.get(ORG_OWNER, frozenset()),
        )


def roles_map_from_claims(claims: Mapping[str, Any], project_id: str) -> dict[str, frozenset[str]]:
    """``{role: {orgId, ...}}`` from ``urn:zitadel:iam:org:project:{id}:roles``, else the project-less claim.

    Zitadel shapes both as ``{role: {orgId: orgDomain}}``; anything else yields no roles.
    """
    for key in (f"urn:zitadel:iam:org:project:{project_id}:roles", "urn:zitadel:iam:org:project:roles"):
        value = claims.get(key)
        if isinstance(value, Mapping):
            return {
                str(role): frozenset(str(org) for org in orgs) if isinstance(orgs, Mapping) else frozenset()
                for role, orgs in value.items()
            }
    return {}


def roles_from_claims(claims: Mapping[str, Any], project_id: str) -> frozenset[str]:
    """The role keys of the roles claim (``roles_map_from_claims``)."""
    return frozenset(roles_map_from_claims(claims, project_id))


class _IssuerKeys:
    """The issuer's discovery document and JWKS, kept in memory for a while (the one cache allowed)."""

    def __init__(self, issuer: str, ttl: float, timeout: float) -> None:
        self.issuer = issuer.rstrip("/")
        self.ttl = ttl
        self.timeout = timeout
        self._lock = threading.Lock()
        self._client: jwt.PyJWKClient | None = None
        self._fetched_at = 0.0

    def discovery(self) -> dict[str, Any]:
        url = f"{self.issuer}/.well-known/openid-configuration"
        try:
            response = requests.get(url, timeout=self.timeout)
            response.raise_for_status()
            document: dict[str, Any] = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise Unauthenticated(f"the identity provider at {self.issuer} did not answer: {exc}") from exc
        return document

    def _jwks_client(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._client is None or time.monotonic() - self._fetched_at > self.ttl:
                jwks_uri = self.discovery().get("jwks_uri")
                if not isinstance(jwks_uri, str):
                    raise Unauthenticated(f"the identity provider at {self.issuer} publishes no jwks_uri")
                self._client = jwt.PyJWKClient(
                    jwks_uri, cache_keys=True, lifespan=int(self.ttl), timeout=int(max(1, self.timeout))
                )
                self._fetched_at = time.monotonic()
            return self._client

    def signing_key(self, token: str) -> jwt.PyJWK:
        try:
            return self._jwks_client().get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise Unauthenticated(f"the identity provider's keys could not be fetched: {exc}") from exc
        except jwt.PyJWKClientError as exc:
            raise Unauthenticated(f"the token's signing key is unknown: {exc}") from exc


class TokenValidator:
    """Checks bearer tokens of one issuer and one audience."""

    def __init__(
        self,
        issuer: str,
        audience: str,
        project_id: str,
        algorithms: list[str],
        *,
        ttl: float = 300.0,
        timeout: float = 5.0,
        leeway: float = 30.0,
        access_token_type: str = "",
    ) -> None:
        if not issuer:
            raise ValueError("no OIDC issuer is configured (FLEXPLANE_OIDC_ISSUER)")
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self.project_id = project_id
        self.algorithms = [a for a in algorithms if a not in _FORBIDDEN_ALGORITHMS]
        self.leeway = leeway
        self.access_token_type = _media_type(access_token_type) if access_token_type else ""
        self.keys = _IssuerKeys(issuer, ttl, timeout)

    def validate(self, token: str) -> Principal:
        """The principal a token stands for; ``Unauthenticated`` naming the reason otherwise."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.DecodeError as exc:
            raise Unauthenticated(f"the token is not a JWT: {exc}") from exc
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise Unauthenticated(f"the token's algorithm {algorithm!r} is not accepted")
        self._check_type(header.get("typ"))
        key = self.keys.signing_key(token)
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthenticated("the token has expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise Unauthenticated("the token is not valid yet") from exc
        except jwt.InvalidAudienceError as exc:
            raise Unauthenticated("the token is not meant for flex.plane (audience)") from exc
        except jwt.InvalidIssuerError as exc:
            raise Unauthenticated("the token was issued by another issuer") from exc
        except jwt.InvalidTokenError as exc:
            raise Unauthenticated(f"the token is invalid: {exc}") from exc
        return Principal.from_claims(claims, self.project_id)

    def _check_type(self, typ: Any) -> None:
        """Refuse a JWT the issuer typed as something other than an access token (when it types them)."""
        if not self.access_token_type:
            return
        if not isinstance(typ, str) or _media_type(typ) != self.access_token_type:
            shown = repr(typ) if isinstance(typ, str) else "no type"
            raise Unauthenticated(
                f"the token is not an access token (its typ is {shown[:40]}, not {self.access_token_type!r})"
            )


def _media_type(typ: str) -> str:
    """A JOSE ``typ`` as compared (RFC 7515, section 4.1.9): without ``application/``, in lowercase."""
    lowered = typ.strip().lower()
    return lowered.removeprefix("application/")


_validator: TokenValidator | None = None
_validator_lock = threading.Lock()


def token_validator() -> TokenValidator:
    """The process's validator, built from settings on first use."""
    global _validator
    with _validator_lock:
        if _validator is None:
            _validator = TokenValidator(
                settings.FLEXPLANE_OIDC_ISSUER,
                settings.FLEXPLANE_OIDC_AUDIENCE,
                settings.FLEXPLANE_OIDC_PROJECT_ID,
                settings.FLEXPLANE_OIDC_ALGORITHMS,
                ttl=settings.FLEXPLANE_JWKS_TTL,
                timeout=settings.FLEXPLANE_OIDC_TIMEOUT,
                leeway=settings.FLEXPLANE_OIDC_LEEWAY,
                access_token_type=settings.FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE,
            )
        return _validator


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header."""
    if not authorization:
        raise Unauthenticated("no bearer token was sent (Authorization: Bearer <token>)")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("the Authorization header must be 'Bearer <token>'")
    return token.strip()
