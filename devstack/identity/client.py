"""Get tokens from the development identity provider, for scripts and tests."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import requests

from devstack.identity.claims import project_audience_scope

DEFAULT_SCOPE = "openid profile email"
# The `flexplane` CLI's login (apiclient/cli): in Zitadel a native application of the project with the
# device code and refresh token grants; here a public client of the device authorization grant (seed.py).
CLI_DEVICE_CLIENT_ID = "flexplane-cli-device"


class TokenRequestError(RuntimeError):
    """The identity provider could not be reached or refused to issue a token."""


def password_token(
    issuer: str,
    username: str,
    password: str,
    client_id: str = "flexplane-cli",
    timeout: float = 10,
) -> str:
    """An access token (a JWT) for ``username``, from the resource owner password grant.

    The token endpoint is found through the issuer's discovery document.
    Raises :class:`TokenRequestError` naming the user and the provider's own error.
    """
    token_endpoint = discover(issuer, timeout=timeout)["token_endpoint"]
    try:
        response = requests.post(
            token_endpoint,
            data={
                "grant_type": "password",
                "username": username,
                "password": password,
                "client_id": client_id,
                "scope": DEFAULT_SCOPE,
            },
            timeout=timeout,
        )
    except requests.RequestException as error:
        raise TokenRequestError(f"cannot reach the token endpoint {token_endpoint}: {error}") from error
    body = _json_or_empty(response)
    if response.status_code != requests.codes.ok or "access_token" not in body:
        error_code = body.get("error", f"HTTP {response.status_code}")
        description = body.get("error_description") or response.text[:200]
        raise TokenRequestError(
            f"the identity provider at {issuer} refused a token for {username!r} "
            f"(client {client_id}): {error_code}: {description}"
        )
    access_token: str = body["access_token"]
    return access_token


def discover(issuer: str, timeout: float = 10) -> dict[str, Any]:
    """The issuer's OpenID Connect discovery document."""
    url = f"{issuer.rstrip('/')}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=timeout)
        response.raise_for_status()
    except requests.RequestException as error:
        raise TokenRequestError(f"cannot read the discovery document {url}: {error}") from error
    document = _json_or_empty(response)
    if "token_endpoint" not in document:
        raise TokenRequestError(f"{url} is not an OpenID Connect discovery document")
    return document


def _json_or_empty(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def key_token(api_url: str, key_json: str, project_id: str, timeout: float = 10) -> str:
    """An access token for a service account, from its JWT profile key (RFC 7523), as Zitadel issues it.

    ``api_url`` is Zitadel's origin (its token endpoint is ``/oauth/v2/token``, the assertion's
    audience the origin); the scopes ask for flex.plane's project audience and its roles, so the token
    is one the orchestrator accepts. Raises :class:`TokenRequestError` with the provider's own error.
    """
    key = json.loads(key_json)
    now = int(time.time())
    origin = api_url.rstrip("/")
    assertion = jwt.encode(
        {"iss": key["userId"], "sub": key["userId"], "aud": origin, "iat": now, "exp": now + 300},
        key["key"],
        algorithm="RS256",
        headers={"kid": key["keyId"]},
    )
    scope = f"openid {project_audience_scope(project_id)} urn:zitadel:iam:org:projects:roles"
    try:
        response = requests.post(
            f"{origin}/oauth/v2/token",
            data={
                "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                "assertion": assertion,
                "scope": scope,
            },
            timeout=timeout,
        )
    except requests.RequestException as error:
        raise TokenRequestError(f"cannot reach the token endpoint of {origin}: {error}") from error
    body = _json_or_empty(response)
    if response.status_code != requests.codes.ok or "access_token" not in body:
        raise TokenRequestError(
            f"the identity provider at {origin} refused a token for key {key['keyId']}: "
            f"{body.get('error', f'HTTP {response.status_code}')}: {body.get('error_description', '')}"
        )
    access_token: str = body["access_token"]
    return access_token
