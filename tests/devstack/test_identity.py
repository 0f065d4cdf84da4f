"""The development identity provider, run as its own process and used over HTTP as a client would."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import pytest
import requests

from devstack.identity.client import TokenRequestError, discover, password_token
from devstack.identity.process import IdentityProvider, IdentityProviderError
from tests.devstack.conftest import (
    IDENTITY_HOST,
    PORTAL_CLIENT_SECRET,
    PORTAL_POST_LOGOUT_REDIRECT_URI,
    PORTAL_REDIRECT_URI,
    USERS,
    StartIdentity,
    free_port,
)

PROJECT_ID = "flexplane"
PROJECT_ROLES_CLAIM = "urn:zitadel:iam:org:project:flexplane:roles"
GENERIC_ROLES_CLAIM = "urn:zitadel:iam:org:project:roles"
ORGANISATION = {"100000001": "flexplane.localhost"}
TIMEOUT = 10


def verified_claims(identity: IdentityProvider, token: str, audience: str = PROJECT_ID) -> dict[str, Any]:
    """The token's claims, once its signature, issuer, audience and lifetime have been checked."""
    jwks = jwt.PyJWKClient(discover(identity.issuer)["jwks_uri"], cache_keys=False)
    claims: dict[str, Any] = jwt.decode(
        token,
        jwks.get_signing_key_from_jwt(token).key,
        algorithms=["RS256"],
        audience=audience,
        issuer=identity.issuer,
        options={"require": ["iss", "aud", "sub", "exp", "iat"]},
    )
    return claims


def user_token(identity: IdentityProvider, username: str) -> str:
    password = next(user["password"] for user in USERS if user["username"] == username)
    return password_token(identity.issuer, username, password)


# --- discovery --------------------------------------------------------------------------------


def test_it_serves_the_discovery_document_at_the_issuer(identity: IdentityProvider) -> None:
    response = requests.get(f"{identity.issuer}/.well-known/openid-configuration", timeout=TIMEOUT)

    assert response.status_code == 200
    document = response.json()
    assert document["issuer"] == identity.issuer
    assert document["token_endpoint"] == f"{identity.issuer}/token/"
    assert document["end_session_endpoint"] == f"{identity.issuer}/logout/"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "RS256" in document["id_token_signing_alg_values_supported"]


def test_it_publishes_an_rs256_signing_key_in_its_jwks(identity: IdentityProvider) -> None:
    response = requests.get(discover(identity.issuer)["jwks_uri"], timeout=TIMEOUT)

    assert response.status_code == 200
    [key] = response.json()["keys"]
    assert (key["kty"], key["alg"], key["use"]) == ("RSA", "RS256", "sig")
    assert key["kid"]


# --- access tokens from the password grant ---------------------------------------------------


def test_an_access_token_verifies_against_the_jwks(identity: IdentityProvider) -> None:
    claims = verified_claims(identity, user_token(identity, "alice"))

    assert claims["iss"] == identity.issuer
    assert claims["aud"] == [PROJECT_ID, "flexplane-cli"]


def test_an_access_token_is_typed_as_a_jwt_access_token(identity: IdentityProvider) -> None:
    header = jwt.get_unverified_header(user_token(identity, "alice"))

    jwks = requests.get(discover(identity.issuer)["jwks_uri"], timeout=TIMEOUT).json()
    assert header == {"alg": "RS256", "typ": "at+jwt", "kid": jwks["keys"][0]["kid"]}


def test_an_access_token_carries_the_zitadel_roles_claims(identity: IdentityProvider) -> None:
    claims = verified_claims(identity, user_token(identity, "alice"))

    expected = {"USER": ORGANISATION, "vdc:demo": ORGANISATION}
    assert claims[PROJECT_ROLES_CLAIM] == expected
    assert claims[GENERIC_ROLES_CLAIM] == expected


def test_an_admins_access_token_carries_the_admin_role(identity: IdentityProvider) -> None:
    claims = verified_claims(identity, user_token(identity, "admin"))

    assert claims[PROJECT_ROLES_CLAIM] == {"ADMIN": ORGANISATION}


def test_an_access_token_names_the_user_and_the_client(identity: IdentityProvider) -> None:
    claims = verified_claims(identity, user_token(identity, "alice"))

    assert claims["preferred_username"] == "alice"
    assert claims["name"] == "Alice Example"
    assert claims["email"] == "alice@example.com"
    assert claims["client_id"] == "flexplane-cli"
    assert claims["scope"] == "openid profile email"
    assert claims["jti"]


def test_an_access_token_lives_for_an_hour(identity: IdentityProvider) -> None:
    claims = verified_claims(identity, user_token(identity, "alice"))

    assert claims["nbf"] == claims["iat"]
    assert claims["exp"] - claims["iat"] == 3600


def test_a_subject_is_a_stable_opaque_number_per_user(identity: IdentityProvider) -> None:
    first = verified_claims(identity, user_token(identity, "alice"))["sub"]
    again = verified_claims(identity, user_token(identity, "alice"))["sub"]
    bob = verified_claims(identity, user_token(identity, "bob"))["sub"]

    assert re.fullmatch(r"[1-9][0-9]{17}", first)
    assert again == first
    assert bob != first


def test_a_refreshed_access_token_keeps_the_users_claims(identity: IdentityProvider) -> None:
    token_endpoint = discover(identity.issuer)["token_endpoint"]
    credentials = {"username": "bob", "password": "bob", "client_id": "flexplane-cli"}
    first = requests.post(token_endpoint, data={"grant_type": "password", **credentials}, timeout=TIMEOUT)

    refreshed = requests.post(
        token_endpoint,
        data={
            "grant_type": "refresh_token",
            "refresh_token": first.json()["refresh_token"],
            "client_id": "flexplane-cli",
        },
        timeout=TIMEOUT,
    )

    assert refreshed.status_code == 200, refreshed.text
    claims = verified_claims(identity, refreshed.json()["access_token"])
    assert claims["preferred_username"] == "bob"
    assert claims[PROJECT_ROLES_CLAIM] == {"USER": ORGANISATION, "vdc:other": ORGANISATION}


def test_a_wrong_password_fails_with_a_clear_error(identity: IdentityProvider) -> None:
    with pytest.raises(TokenRequestError, match=r"refused a token for 'alice'.*invalid_grant"):
        password_token(identity.issuer, "alice", "not-her-password")


def test_an_unreachable_issuer_fails_with_a_clear_error() -> None:
    issuer = f"http://{IDENTITY_HOST}:{free_port(IDENTITY_HOST)}/o"

    with pytest.raises(TokenRequestError, match="cannot read the discovery document"):
        password_token(issuer, "alice", "alice", timeout=2)


# --- the data directory ----------------------------------------------------------------------


def test_its_secrets_are_readable_by_their_owner_only(identity: IdentityProvider) -> None:
    for name in ("oidc-signing-key.pem", "django-secret-key", "portal-client.json"):
        mode = stat.S_IMODE((identity.data_dir / name).stat().st_mode)
        assert mode == 0o600, name


def test_it_records_the_portal_client_secret_it_was_given(identity: IdentityProvider) -> None:
    portal = identity.portal_client

    assert (portal.client_id, portal.client_secret) == ("flexplane-portal", PORTAL_CLIENT_SECRET)
    assert portal.issuer == identity.issuer


@dataclass
class Restart:
    """A provider stopped and started again on the same data dir, and what was seen before."""

    provider: IdentityProvider  # the second run, still serving
    token_before: str
    portal_secret_before: str
    first_exit_code: int | None
    first_output: str


@pytest.fixture(scope="module")
def restart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restart]:
    data_dir, port = tmp_path_factory.mktemp("restarted"), free_port(IDENTITY_HOST)

    def start() -> IdentityProvider:
        return IdentityProvider.start(
            data_dir, IDENTITY_HOST, port, USERS, portal_redirect_uris=[PORTAL_REDIRECT_URI]
        )

    with start() as first:
        token_before = user_token(first, "alice")
        portal_secret_before = first.portal_client.client_secret
    first_output = first.output()
    with start() as second:
        yield Restart(second, token_before, portal_secret_before, first.process.returncode, first_output)


def test_stopping_the_provider_ends_it_cleanly(restart: Restart) -> None:
    assert restart.first_exit_code == 0
    assert "identity provider stopped" in restart.first_output


def test_a_restart_on_the_same_data_dir_keeps_the_signing_key(restart: Restart) -> None:
    claims = verified_claims(restart.provider, restart.token_before)

    assert claims["preferred_username"] == "alice"


def test_a_restart_on_the_same_data_dir_seeds_nothing_twice(restart: Restart) -> None:
    with closing(sqlite3.connect(restart.provider.data_dir / "identity.sqlite3")) as database:
        rows = {
            table: database.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608  # fixed names
            for table in (
                "auth_user",
                "auth_group",
                "oauth2_provider_application",
                "zitadel_api_authorization",
            )
        }

    roles = {role for user in USERS for role in user["roles"]}
    assert rows == {
        "auth_user": len(USERS),
        "auth_group": len(roles),
        "oauth2_provider_application": 3,  # the portal, the scripts' password grant, the CLI's login
        "zitadel_api_authorization": len(USERS),  # one per user: their roles within their organization
    }


def test_a_restart_keeps_the_generated_portal_client_secret(restart: Restart) -> None:
    assert restart.portal_secret_before
    assert restart.provider.portal_client.client_secret == restart.portal_secret_before


def test_a_restart_brings_the_users_in_line_with_the_users_file(
    start_identity: StartIdentity, tmp_path: Path
) -> None:
    port = free_port(IDENTITY_HOST)
    start_identity(tmp_path, port).stop()
    alice = {**USERS[1], "roles": ["USER", "vdc:demo", "vdc:other"]}

    provider = start_identity(tmp_path, port, users=[alice])

    claims = verified_claims(provider, user_token(provider, "alice"))
    assert set(claims[PROJECT_ROLES_CLAIM]) == {"USER", "vdc:demo", "vdc:other"}
    with pytest.raises(TokenRequestError, match="invalid_grant"):
        user_token(provider, "bob")


# --- the process -----------------------------------------------------------------------------


def test_start_reports_the_output_of_a_provider_that_fails(
    start_identity: StartIdentity, tmp_path: Path
) -> None:
    broken_users = [{"username": "alice", "roles": "USER"}]

    with pytest.raises(IdentityProviderError, match=r"exited with code 1(.|\n)*'password' must be"):
        start_identity(tmp_path, free_port(IDENTITY_HOST), users=broken_users)


# --- the authorization code flow, as the portal runs it ----------------------------------------


@dataclass
class SignIn:
    session: requests.Session  # the browser: it holds the provider's session cookie
    nonce: str
    tokens: dict[str, Any]  # the token endpoint's answer: access_token, id_token, refresh_token


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize(identity: IdentityProvider, session: requests.Session, **parameters: str) -> requests.Response:
    return session.get(
        discover(identity.issuer)["authorization_endpoint"],
        params={
            "response_type": "code",
            "client_id": "flexplane-portal",
            "redirect_uri": PORTAL_REDIRECT_URI,
            "scope": "openid profile email",
            "state": secrets.token_urlsafe(8),
            **parameters,
        },
        allow_redirects=False,
        timeout=TIMEOUT,
    )


def sign_in(identity: IdentityProvider, username: str, password: str) -> SignIn:
    """Log in through the login form, take the code from the redirect and exchange it."""
    session = requests.Session()
    verifier, challenge = pkce_pair()
    state, nonce = secrets.token_urlsafe(8), secrets.token_urlsafe(8)

    to_login = authorize(
        identity, session, state=state, nonce=nonce, code_challenge=challenge, code_challenge_method="S256"
    )
    assert to_login.status_code == 302
    login_page = session.get(urljoin(to_login.url, to_login.headers["Location"]), timeout=TIMEOUT)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text)
    assert csrf is not None
    back_to_authorize = session.post(
        login_page.url,
        data={
            "csrfmiddlewaretoken": csrf.group(1),
            "username": username,
            "password": password,
            "next": parse_qs(urlsplit(login_page.url).query)["next"][0],
        },
        allow_redirects=False,
        timeout=TIMEOUT,
    )
    assert back_to_authorize.status_code == 302
    to_portal = session.get(
        urljoin(login_page.url, back_to_authorize.headers["Location"]), allow_redirects=False, timeout=TIMEOUT
    )
    assert to_portal.status_code == 302
    callback = urlsplit(to_portal.headers["Location"])
    assert callback._replace(query="").geturl() == PORTAL_REDIRECT_URI
    answer = parse_qs(callback.query)
    assert answer["state"] == [state]

    portal = identity.portal_client
    tokens = requests.post(
        discover(identity.issuer)["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": answer["code"][0],
            "redirect_uri": PORTAL_REDIRECT_URI,
            "code_verifier": verifier,
        },
        auth=(portal.client_id, portal.client_secret),
        timeout=TIMEOUT,
    )
    assert tokens.status_code == 200, tokens.text
    return SignIn(session=session, nonce=nonce, tokens=tokens.json())


@pytest.fixture(scope="module")
def alice_signed_in(identity: IdentityProvider) -> SignIn:
    return sign_in(identity, "alice", "alice")


def test_the_code_flow_with_pkce_issues_an_id_token_with_the_roles(
    identity: IdentityProvider, alice_signed_in: SignIn
) -> None:
    claims = verified_claims(identity, alice_signed_in.tokens["id_token"], audience="flexplane-portal")

    assert claims["nonce"] == alice_signed_in.nonce
    assert claims["aud"] == ["flexplane-portal", PROJECT_ID]
    assert (claims["preferred_username"], claims["name"], claims["email"]) == (
        "alice",
        "Alice Example",
        "alice@example.com",
    )
    expected = {"USER": ORGANISATION, "vdc:demo": ORGANISATION}
    assert claims[PROJECT_ROLES_CLAIM] == expected
    assert claims[GENERIC_ROLES_CLAIM] == expected


def test_the_code_flow_issues_a_jwt_access_token_for_the_project(
    identity: IdentityProvider, alice_signed_in: SignIn
) -> None:
    access_token = alice_signed_in.tokens["access_token"]
    claims = verified_claims(identity, access_token)

    assert claims["aud"] == [PROJECT_ID, "flexplane-portal"]
    assert claims["sub"] == verified_claims(identity, user_token(identity, "alice"))["sub"]
    assert jwt.get_unverified_header(access_token)["typ"] == "at+jwt"


def test_userinfo_returns_the_profile_and_the_roles(
    identity: IdentityProvider, alice_signed_in: SignIn
) -> None:
    response = requests.get(
        discover(identity.issuer)["userinfo_endpoint"],
        headers={"Authorization": f"Bearer {alice_signed_in.tokens['access_token']}"},
        timeout=TIMEOUT,
    )

    assert response.status_code == 200
    userinfo = response.json()
    id_token = verified_claims(identity, alice_signed_in.tokens["id_token"], audience="flexplane-portal")
    assert userinfo["sub"] == id_token["sub"]
    assert (userinfo["preferred_username"], userinfo["name"], userinfo["email"]) == (
        "alice",
        "Alice Example",
        "alice@example.com",
    )
    assert userinfo[PROJECT_ROLES_CLAIM] == {"USER": ORGANISATION, "vdc:demo": ORGANISATION}


def test_an_authorization_request_without_pkce_is_refused(
    identity: IdentityProvider, alice_signed_in: SignIn
) -> None:
    response = authorize(identity, alice_signed_in.session)

    assert response.status_code == 302
    refusal = parse_qs(urlsplit(response.headers["Location"]).query)
    assert refusal["error"] == ["invalid_request"]
    assert refusal["error_description"] == ["Code challenge required."]


def test_rp_initiated_logout_ends_the_session_and_returns_to_the_portal(identity: IdentityProvider) -> None:
    bob = sign_in(identity, "bob", "bob")

    logout = bob.session.get(
        discover(identity.issuer)["end_session_endpoint"],
        params={
            "id_token_hint": bob.tokens["id_token"],
            "post_logout_redirect_uri": PORTAL_POST_LOGOUT_REDIRECT_URI,
            "state": "after-logout",
        },
        allow_redirects=False,
        timeout=TIMEOUT,
    )

    assert logout.status_code == 302
    assert logout.headers["Location"] == f"{PORTAL_POST_LOGOUT_REDIRECT_URI}?state=after-logout"
    _, challenge = pkce_pair()
    again = authorize(identity, bob.session, code_challenge=challenge, code_challenge_method="S256")
    assert urlsplit(again.headers["Location"]).path.endswith("/login/")
