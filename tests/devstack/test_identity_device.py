"""The development identity provider's device authorization grant (RFC 8628), as Zitadel serves it: the
endpoint at Zitadel's path and in the discovery document, its answer's fields, the person's pages (the
code entered, the device approved or denied), and the token endpoint's answers to a polling device per
RFC 8628 3.5. The provider runs as its own process and is used over HTTP, as ``flexplane login`` uses it;
tests/cli/test_device_login.py plays the same with the CLI and a browser."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import jwt
import requests

from devstack.identity.client import CLI_DEVICE_CLIENT_ID, discover
from devstack.identity.process import IdentityProvider
from tests.devstack.conftest import IDENTITY_HOST, USERS, StartIdentity, free_port

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
SCOPE = "openid profile offline_access urn:zitadel:iam:org:project:id:flexplane:aud"
TIMEOUT = 10


def origin(identity: IdentityProvider) -> str:
    parts = urlsplit(identity.issuer)
    return f"{parts.scheme}://{parts.netloc}"


def authorize_device(identity: IdentityProvider, client_id: str = CLI_DEVICE_CLIENT_ID) -> requests.Response:
    return requests.post(
        discover(identity.issuer)["device_authorization_endpoint"],
        data={"client_id": client_id, "scope": SCOPE},
        timeout=TIMEOUT,
    )


def device_codes(identity: IdentityProvider) -> dict[str, Any]:
    answer = authorize_device(identity)
    assert answer.status_code == 200, answer.text
    codes: dict[str, Any] = answer.json()
    return codes


def token(identity: IdentityProvider, device_code: str, endpoint: str | None = None) -> requests.Response:
    """The device's poll of the token endpoint (the discovery document's, unless told)."""
    return requests.post(
        endpoint or discover(identity.issuer)["token_endpoint"],
        data={"grant_type": DEVICE_CODE, "device_code": device_code, "client_id": CLI_DEVICE_CLIENT_ID},
        timeout=TIMEOUT,
    )


def error_of(answer: requests.Response) -> str:
    assert answer.status_code == 400, (answer.status_code, answer.text)
    error: str = answer.json()["error"]
    return error


def csrf_of(page: requests.Response) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found is not None, page.text[:500]
    return found.group(1)


def decide(identity: IdentityProvider, username: str, typed_code: str, action: str) -> requests.Response:
    """A person at the verification URI: signs in with the login form, enters the code as typed, then
    allows (``accept``) or denies (``deny``) the device; the page they end on."""
    session = requests.Session()
    login = session.get(urljoin(origin(identity), "/ui/login/device"), timeout=TIMEOUT)
    assert urlsplit(login.url).path == "/o/login/"
    password = next(user["password"] for user in USERS if user["username"] == username)
    entry = session.post(
        login.url,
        data={
            "csrfmiddlewaretoken": csrf_of(login),
            "username": username,
            "password": password,
            "next": "/ui/login/device",
        },
        timeout=TIMEOUT,
    )
    assert urlsplit(entry.url).path == "/ui/login/device"
    confirm = session.post(
        entry.url, data={"csrfmiddlewaretoken": csrf_of(entry), "user_code": typed_code}, timeout=TIMEOUT
    )
    assert "/device-confirm/" in confirm.url, confirm.text[:500]
    return session.post(
        confirm.url, data={"csrfmiddlewaretoken": csrf_of(confirm), "action": action}, timeout=TIMEOUT
    )


def test_the_discovery_document_names_the_device_authorization_endpoint_at_zitadels_path(
    identity: IdentityProvider,
) -> None:
    document = discover(identity.issuer)

    assert document["device_authorization_endpoint"] == f"{origin(identity)}/oauth/v2/device_authorization"
    assert DEVICE_CODE in document["grant_types_supported"]
    assert "refresh_token" in document["grant_types_supported"]


def test_a_device_gets_its_codes_where_to_enter_them_and_how_often_to_poll(
    identity: IdentityProvider,
) -> None:
    codes = device_codes(identity)

    assert set(codes) == {
        "device_code",
        "user_code",
        "verification_uri",
        "verification_uri_complete",
        "expires_in",
        "interval",
    }
    assert codes["verification_uri"] == f"{origin(identity)}/ui/login/device"
    assert codes["verification_uri_complete"] == f"{codes['verification_uri']}?user_code={codes['user_code']}"
    assert (codes["expires_in"], codes["interval"]) == (300, 5)
    assert re.fullmatch(r"[0-9A-V]{8}", codes["user_code"])
    assert len(codes["device_code"]) >= 30


def test_an_unknown_client_gets_no_codes(identity: IdentityProvider) -> None:
    answer = authorize_device(identity, client_id="no-such-client")

    assert answer.status_code in {400, 401}
    # oauthlib's answer (Zitadel's says invalid_client): either way, no codes.
    assert answer.json()["error"] in {"invalid_request", "invalid_client"}
    assert "device_code" not in answer.json()


def test_a_device_polling_before_the_person_decided_is_told_to_wait_and_one_too_eager_to_slow_down(
    identity: IdentityProvider,
) -> None:
    codes = device_codes(identity)

    first = token(identity, codes["device_code"])
    at_once = token(identity, codes["device_code"])

    assert error_of(first) == "authorization_pending"
    assert error_of(at_once) == "slow_down"


def test_an_approved_device_gets_the_persons_token_once_and_a_refresh_token_that_renews_it(
    identity: IdentityProvider,
) -> None:
    codes = device_codes(identity)
    approved = decide(identity, "alice", codes["user_code"], "accept")
    assert "Device authorized" in approved.text

    # At Zitadel's token path, as at the discovery document's: one token endpoint for every grant.
    answer = token(identity, codes["device_code"], f"{origin(identity)}/oauth/v2/token")
    again = token(identity, codes["device_code"])

    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert claims["preferred_username"] == "alice"
    assert "flexplane" in claims["aud"]
    assert claims["client_id"] == CLI_DEVICE_CLIENT_ID
    assert error_of(again) == "invalid_grant"
    renewed = requests.post(
        discover(identity.issuer)["token_endpoint"],
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": CLI_DEVICE_CLIENT_ID,
        },
        timeout=TIMEOUT,
    )
    assert renewed.status_code == 200, renewed.text
    renewed_claims = jwt.decode(renewed.json()["access_token"], options={"verify_signature": False})
    assert renewed_claims["sub"] == claims["sub"]
    assert renewed.json()["refresh_token"] != tokens["refresh_token"]


def test_the_code_is_taken_as_a_person_types_it(identity: IdentityProvider) -> None:
    codes = device_codes(identity)
    code = codes["user_code"].lower()

    approved = decide(identity, "bob", f" {code[:4]}-{code[4:]} ", "accept")

    assert "Device authorized" in approved.text
    assert token(identity, codes["device_code"]).status_code == 200


def test_a_denied_device_is_told_access_denied(identity: IdentityProvider) -> None:
    codes = device_codes(identity)

    denied = decide(identity, "alice", codes["user_code"], "deny")

    assert "Device denied" in denied.text
    assert error_of(token(identity, codes["device_code"])) == "access_denied"


def test_a_code_never_issued_is_an_invalid_grant(identity: IdentityProvider) -> None:
    assert error_of(token(identity, "no-such-device-code")) == "invalid_grant"


def test_a_device_polling_after_its_code_expired_is_told_expired_token(
    start_identity: StartIdentity, tmp_path: Path
) -> None:
    hasty = start_identity(tmp_path / "identity", free_port(IDENTITY_HOST), device_code_lifetime=1)
    codes = device_codes(hasty)
    assert codes["expires_in"] == 1

    time.sleep(1.2)

    assert error_of(token(hasty, codes["device_code"])) == "expired_token"
