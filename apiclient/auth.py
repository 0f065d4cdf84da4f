"""How the client authenticates: a bearer token as it is, or a service account's key exchanged for tokens.

A service account's key (``createServiceAccount``'s ``key``, Zitadel's key file) never travels to the
API: the client signs a short assertion with it and exchanges that at the identity provider's token
endpoint (RFC 7523's JWT bearer grant, as docs/api.md shows), then sends the access token it gets. It
asks for the next one before the current one expires, so a long script (a cluster that takes half an
hour) never sends an expired token, and once more when the API answers 401 anyway (a clock that drifts,
a token revoked early).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

import httpx
import jwt

from apiclient.errors import Unauthenticated

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# How long the signed assertion is good for: it is used at once.
ASSERTION_LIFETIME = 300
# A token is renewed this long before it expires: a request sent just before would arrive too late.
REFRESH_BEFORE = 60.0


class BearerToken(httpx.Auth):
    """A token the caller already has (``python -m devstack token alice``, a CI secret): sent as it is."""

    def __init__(self, token: str) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


class ServiceAccountKey(httpx.Auth):
    """A service account's key, exchanged at ``identity_url`` (Zitadel's origin) for access tokens to
    flex.plane's project ``project_id``, each renewed ``refresh_before`` seconds before it expires.

    ``clock`` tells the time the expiry is reckoned in (seconds since the epoch); ``http`` is the client
    the token requests go through (a proxy's, a CA's settings); ``exchanges`` counts the tokens it got."""

    def __init__(
        self,
        key: Mapping[str, Any],
        identity_url: str,
        project_id: str,
        *,
        refresh_before: float = REFRESH_BEFORE,
        clock: Callable[[], float] = time.time,
        http: httpx.Client | None = None,
    ) -> None:
        missing = sorted({"keyId", "key", "userId"} - set(key))
        if missing:
            raise ValueError(f"not a service account's key file: it lacks {', '.join(missing)}")
        self.key = dict(key)
        self.identity_url = identity_url.rstrip("/")
        self.project_id = project_id
        self.refresh_before = refresh_before
        self.clock = clock
        self._http = http or httpx.Client(timeout=10)
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = 0.0
        self.exchanges = 0

    @classmethod
    def from_file(
        cls, path: Path | str, identity_url: str, project_id: str, **options: Any
    ) -> ServiceAccountKey:
        """The key file as ``createServiceAccount`` answered it, saved by the user."""
        return cls(json.loads(Path(path).read_text(encoding="utf-8")), identity_url, project_id, **options)

    def token(self) -> str:
        """An access token good for at least ``refresh_before`` seconds more: the last one, or a new one."""
        with self._lock:
            if self._token is None or self.clock() >= self._expires - self.refresh_before:
                self._token, lifetime = self._exchange()
                self._expires = self.clock() + lifetime
            return self._token

    def forget(self) -> None:
        """Drop the current token: the next request gets a new one."""
        with self._lock:
            self._token = None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        response = yield request
        if response.status_code == httpx.codes.UNAUTHORIZED:
            self.forget()
            request.headers["Authorization"] = f"Bearer {self.token()}"
            yield request

    def _assertion(self) -> str:
        now = int(time.time())
        claims = {
            "iss": self.key["userId"],
            "sub": self.key["userId"],
            "aud": self.identity_url,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
        }
        return jwt.encode(claims, self.key["key"], algorithm="RS256", headers={"kid": self.key["keyId"]})

    def _exchange(self) -> tuple[str, float]:
        """A new access token and how many seconds it is good for, from the identity provider."""
        scope = (
            f"openid urn:zitadel:iam:org:project:id:{self.project_id}:aud urn:zitadel:iam:org:projects:roles"
        )
        where = f"{self.identity_url}/oauth/v2/token"
        try:
            response = self._http.post(
                where, data={"grant_type": JWT_BEARER, "assertion": self._assertion(), "scope": scope}
            )
        except httpx.HTTPError as error:
            raise Unauthenticated(f"cannot reach the identity provider at {where}: {error}") from error
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code != httpx.codes.OK or "access_token" not in body:
            raise Unauthenticated(
                f"the identity provider at {self.identity_url} refused a token for key {self.key['keyId']}: "
                f"{body.get('error', f'HTTP {response.status_code}')}: {body.get('error_description', '')}"
            )
        self.exchanges += 1
        return str(body["access_token"]), float(body.get("expires_in", 0))
