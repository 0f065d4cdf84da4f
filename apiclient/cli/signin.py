"""How ``flexplane`` gets its tokens: a person's by the OAuth device authorization grant (RFC 8628), a
script's by a service account's key, both cached in the credentials file and renewed there.

The device login asks the identity provider (Zitadel; its endpoints from its discovery document) for a
device code and a user code, shows the person where to enter the code, then polls the token endpoint at
the interval it was told (5 seconds more after each ``slow_down``) until the person approved or denied
the device in their browser, or the code expired. The tokens it gets include a refresh token
(``offline_access``): a later command renews the access token with it, a minute before it expires or once
the API refuses it, and writes the new tokens back. A service account's key is exchanged as
``apiclient.auth.ServiceAccountKey`` does it, its token cached the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt

from apiclient.auth import ServiceAccountKey
from apiclient.cli.config import Credential, Profile, Store
from apiclient.errors import Unauthenticated

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
DEVICE = "device"
SERVICE_ACCOUNT = "service-account"
# A token is renewed this long before it expires, as apiclient.auth does.
REFRESH_BEFORE = 60.0
# What the device's interval grows by after a slow_down (RFC 8628 3.5), and when none was given.
SLOW_DOWN_STEP = 5
DEFAULT_INTERVAL = 5


class LoginFailed(Unauthenticated):
    """The device login ended without tokens: denied, expired, or refused by the identity provider."""


def scope_for(project_id: str) -> str:
    """What the CLI asks for: the person, flex.plane's project as the audience with its roles, and a
    refresh token (Zitadel's scopes)."""
    return (
        f"openid profile email offline_access urn:zitadel:iam:org:project:id:{project_id}:aud "
        "urn:zitadel:iam:org:projects:roles"
    )


def origin(url: str) -> str:
    """The scheme, host and port of ``url``: Zitadel's issuer is its origin, where ``/oauth/v2/`` lives."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def expiry(token: str, expires_in: float | None, now: float) -> float:
    """When a token expires: ``expires_in`` from now as the provider said, else the JWT's own ``exp``."""
    if expires_in:
        return now + float(expires_in)
    try:
        return float(jwt.decode(token, options={"verify_signature": False})["exp"])
    except (jwt.InvalidTokenError, KeyError, TypeError, ValueError):
        return now + REFRESH_BEFORE  # unknown: renewed at its next use


@dataclass(frozen=True)
class DeviceCodes:
    """The device authorization's answer (RFC 8628 3.2)."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: int
    interval: int
    token_endpoint: str


@dataclass
class DeviceLogin:
    """The device authorization grant against ``issuer`` as the public client ``client_id``."""

    issuer: str
    client_id: str
    project_id: str
    http: httpx.Client
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time

    def discovery(self) -> dict[str, Any]:
        url = f"{self.issuer.rstrip('/')}/.well-known/openid-configuration"
        document = _json(self._call("GET", url), url)
        if "device_authorization_endpoint" not in document or "token_endpoint" not in document:
            raise LoginFailed(f"{self.issuer} offers no device login (no device_authorization_endpoint)")
        return document

    def start(self) -> DeviceCodes:
        """A device code and the user code the person enters."""
        document = self.discovery()
        where = str(document["device_authorization_endpoint"])
        response = self._call(
            "POST", where, data={"client_id": self.client_id, "scope": scope_for(self.project_id)}
        )
        answer = _json(response, where)
        if response.status_code != httpx.codes.OK or "device_code" not in answer:
            raise LoginFailed(f"{where} refused client {self.client_id}: {_oauth_error(answer, response)}")
        return DeviceCodes(
            device_code=str(answer["device_code"]),
            user_code=str(answer["user_code"]),
            verification_uri=str(answer["verification_uri"]),
            verification_uri_complete=answer.get("verification_uri_complete"),
            expires_in=int(answer.get("expires_in", 300)),
            interval=int(answer.get("interval") or DEFAULT_INTERVAL),
            token_endpoint=str(document["token_endpoint"]),
        )

    def wait(self, codes: DeviceCodes) -> Credential:
        """Poll until the person decided: their tokens, or ``LoginFailed`` saying why there are none."""
        interval = codes.interval
        deadline = self.clock() + codes.expires_in
        while True:
            self.sleep(interval)
            response = self._call(
                "POST",
                codes.token_endpoint,
                data={
                    "grant_type": DEVICE_CODE,
                    "device_code": codes.device_code,
                    "client_id": self.client_id,
                },
            )
            answer = _json(response, codes.token_endpoint)
            if response.status_code == httpx.codes.OK and "access_token" in answer:
                return self._credential(answer, codes.token_endpoint)
            error = answer.get("error")
            if error == "slow_down":
                interval += SLOW_DOWN_STEP
            elif error == "access_denied":
                raise LoginFailed("the sign-in was denied in the browser")
            elif error == "expired_token" or (error == "authorization_pending" and self.clock() > deadline):
                raise LoginFailed(f"the code {codes.user_code} expired before it was approved: log in again")
            elif error != "authorization_pending":
                raise LoginFailed(
                    f"{codes.token_endpoint} refused the device: {_oauth_error(answer, response)}"
                )

    def refresh(self, credential: Credential) -> Credential:
        """New tokens for the refresh token of ``credential``."""
        if not credential.refresh_token or not credential.token_endpoint:
            raise Unauthenticated("the login has no refresh token: run `flexplane login` again")
        response = self._call(
            "POST",
            credential.token_endpoint,
            data={
                "grant_type": "refresh_token",
                "refresh_token": credential.refresh_token,
                "client_id": self.client_id,
            },
        )
        answer = _json(response, credential.token_endpoint)
        if response.status_code != httpx.codes.OK or "access_token" not in answer:
            raise Unauthenticated(
                f"the login could not be renewed ({_oauth_error(answer, response)}): "
                "run `flexplane login` again"
            )
        renewed = self._credential(answer, credential.token_endpoint)
        renewed.refresh_token = renewed.refresh_token or credential.refresh_token
        return renewed

    def _credential(self, answer: dict[str, Any], token_endpoint: str) -> Credential:
        token = str(answer["access_token"])
        return Credential(
            kind=DEVICE,
            access_token=token,
            expires_at=expiry(token, answer.get("expires_in"), self.clock()),
            refresh_token=answer.get("refresh_token"),
            token_endpoint=token_endpoint,
            subject=_subject(token),
        )

    def _call(self, method: str, url: str, **options: Any) -> httpx.Response:
        try:
            return self.http.request(method, url, **options)
        except httpx.HTTPError as error:
            raise Unauthenticated(f"cannot reach the identity provider at {url}: {error}") from error


def service_account_credential(
    key: dict[str, Any], profile: Profile, http: httpx.Client, clock: Callable[[], float] = time.time
) -> Credential:
    """A service account's key with a token it was just exchanged for (the key's refusal raises)."""
    if not profile.issuer or not profile.project_id:
        raise ValueError("a service account's key needs the profile's issuer and project id")
    exchange = ServiceAccountKey(key, origin(profile.issuer), profile.project_id, http=http)
    token = exchange.token()
    return Credential(
        kind=SERVICE_ACCOUNT,
        access_token=token,
        expires_at=expiry(token, None, clock()),
        key=dict(exchange.key),
        subject=_subject(token),
    )


class StoredLogin(httpx.Auth):
    """The profile's credential from the credentials file as the API's bearer token: renewed (and written
    back) a minute before it expires, and once more if the API answers 401 all the same."""

    def __init__(
        self,
        store: Store,
        profile_name: str,
        profile: Profile,
        http: httpx.Client,
        clock: Callable[[], float] = time.time,
    ) -> None:
        credential = store.credential(profile_name)
        if credential is None:
            raise Unauthenticated(f"not logged in (profile {profile_name}): run `flexplane login`")
        self.store = store
        self.profile_name = profile_name
        self.profile = profile
        self.http = http
        self.clock = clock
        self.credential = credential

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if not self.credential.access_token or self.clock() >= self.credential.expires_at - REFRESH_BEFORE:
            self.renew()
        request.headers["Authorization"] = f"Bearer {self.credential.access_token}"
        response = yield request
        if response.status_code == httpx.codes.UNAUTHORIZED:
            self.renew()
            request.headers["Authorization"] = f"Bearer {self.credential.access_token}"
            yield request

    def renew(self) -> None:
        if self.credential.kind == SERVICE_ACCOUNT and self.credential.key:
            self.credential = service_account_credential(
                self.credential.key, self.profile, self.http, self.clock
            )
        else:
            if not self.profile.issuer or not self.profile.client_id or not self.profile.project_id:
                raise Unauthenticated("the profile lost its issuer or client id: run `flexplane login` again")
            login = DeviceLogin(
                self.profile.issuer,
                self.profile.client_id,
                self.profile.project_id,
                self.http,
                clock=self.clock,
            )
            self.credential = login.refresh(self.credential)
        self.store.save_credential(self.profile_name, self.credential)


def _subject(token: str) -> str | None:
    try:
        return str(jwt.decode(token, options={"verify_signature": False}).get("sub")) or None
    except jwt.InvalidTokenError:
        return None


def _json(response: httpx.Response, where: str) -> dict[str, Any]:
    try:
        answer = response.json()
    except ValueError:
        raise Unauthenticated(f"{where} answered HTTP {response.status_code}, not JSON") from None
    return answer if isinstance(answer, dict) else {}


def _oauth_error(answer: dict[str, Any], response: httpx.Response) -> str:
    error = answer.get("error", f"HTTP {response.status_code}")
    description = answer.get("error_description")
    return f"{error}: {description}" if description else str(error)
