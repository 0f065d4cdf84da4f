"""How this provider shapes its tokens like Zitadel's: JWT access tokens and role claims.

django-oauth-toolkit calls :func:`generate_access_token` (its ``ACCESS_TOKEN_GENERATOR``) for
every access token and stores the result as it would an opaque token (it keeps only a SHA-256
checksum of it), so userinfo, introspection and revocation keep working. ID tokens and userinfo
get their claims from :class:`ZitadelClaimsValidator`.
"""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django.http import HttpRequest
from jwcrypto.jwk import JWK
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauthlib.common import Request

from devstack.identity.claims import (
    GENERIC_ROLES_CLAIM,
    PROFILE_CLAIMS,
    project_roles_claim,
    user_claims,
)
from devstack.identity.config import current_config

ACCESS_TOKEN_TYPE = "at+jwt"  # RFC 9068: JSON Web Token profile for OAuth 2.0 access tokens
SIGNING_ALGORITHM = "RS256"


@dataclass(frozen=True)
class SigningKey:
    private_key: RSAPrivateKey
    kid: str  # the RFC 7638 thumbprint: the same ``kid`` that the JWKS endpoint publishes


@functools.cache
def signing_key(pem: str) -> SigningKey:
    private_key = load_pem_private_key(pem.encode("ascii"), password=None)
    if not isinstance(private_key, RSAPrivateKey):
        raise TypeError("the OIDC signing key must be an RSA key")
    return SigningKey(private_key=private_key, kid=JWK.from_pem(pem.encode("ascii")).thumbprint())


def generate_access_token(request: Request) -> str:
    """A signed JWT access token, laid out as Zitadel's JWT access tokens are.

    oauthlib calls this after it has authenticated the client and the user and set
    ``request.expires_in``. A token without a user (a client credentials grant) has the
    client as its subject.
    """
    config = current_config()
    key = signing_key(oauth2_settings.OIDC_RSA_PRIVATE_KEY)
    client_id: str = request.client.client_id
    issued_at = int(time.time())
    claims: dict[str, Any] = {
        "iss": config.issuer,
        "sub": client_id,
        "aud": [config.project_id, client_id],
        "iat": issued_at,
        "nbf": issued_at,
        "exp": issued_at + int(request.expires_in),
        "jti": str(uuid.uuid4()),
        "client_id": client_id,
        "scope": " ".join(request.scopes or ()),
    }
    if request.user is not None:
        claims.update(user_claims(request.user, config.project_id))
    return jwt.encode(
        claims,
        key.private_key,
        algorithm=SIGNING_ALGORITHM,
        headers={"typ": ACCESS_TOKEN_TYPE, "kid": key.kid},
    )


class ZitadelClaimsValidator(OAuth2Validator):
    """Adds the profile and Zitadel role claims to ID tokens and userinfo, with a Zitadel ``sub``."""

    @property
    def oidc_claim_scope(self) -> dict[str, str]:
        # Roles come with every OpenID request: the portal cannot work without them.
        project_id = current_config().project_id
        return {
            **OAuth2Validator.oidc_claim_scope,
            project_roles_claim(project_id): "openid",
            GENERIC_ROLES_CLAIM: "openid",
        }

    def get_additional_claims(self, request: Request) -> dict[str, Any]:
        return user_claims(request.user, current_config().project_id)

    def get_discovery_claims(self, request: HttpRequest) -> list[str]:
        project_id = current_config().project_id
        return ["sub", *PROFILE_CLAIMS, project_roles_claim(project_id), GENERIC_ROLES_CLAIM]

    def validate_silent_login(self, request: Request) -> bool:
        """``prompt=none`` (a relying party renewing its session): the user is signed in.

        django-oauth-toolkit's authorization view validates a request for a signed-in user only;
        for anyone else it answers ``login_required`` itself, as OIDC Core 3.1.2.6 says.
        """
        return True

    def validate_silent_authorization(self, request: Request) -> bool:
        """``prompt=none``: silently only for a client that never asks for consent (the portal)."""
        return bool(getattr(request.client, "skip_authorization", False))

    def validate_device_code(self, client_id: str, code: str, request: Request) -> str | None:
        """Where a polled device code stands (RFC 8628 3.5): devstack/identity/device.py keeps the grant's
        pace and uses an approved code up."""
        from devstack.identity.device import poll  # its views need the toolkit's models loaded

        return poll(client_id, code, request)

    def get_id_token_dictionary(
        self, token: dict[str, Any], token_handler: Any, request: Request
    ) -> tuple[dict[str, Any], Any]:
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        # As Zitadel: the ID token is for the client and for the project it belongs to.
        client_id = request.client.client_id
        claims["aud"] = [client_id, current_config().project_id]
        claims["azp"] = client_id
        return claims, expiration_time
