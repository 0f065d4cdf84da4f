"""Bearer tokens: every way a token can be wrong answers 401 with a challenge, never a 500."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from devstack import seed
from devstack.world import World
from tests.support import GraphQL

ME = "{ me { subject } }"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(world: World, **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": world.identity.issuer,
        "aud": [seed.PROJECT_ID],
        "sub": "1234",
        "iat": now,
        "nbf": now,
        "exp": now + 300,
        f"urn:zitadel:iam:org:project:{seed.PROJECT_ID}:roles": {"ADMIN": {"1": "example"}},
    }
    base.update(overrides)
    return base


def issuer_key(world: World) -> tuple[str, Any]:
    """The kid and public key of the identity provider's JWKS."""
    discovery = requests.get(f"{world.identity.issuer}/.well-known/openid-configuration", timeout=5).json()
    jwk = requests.get(discovery["jwks_uri"], timeout=5).json()["keys"][0]
    return jwk["kid"], jwt.PyJWK(jwk).key


def sign_rs256_with_a_foreign_key(payload: dict[str, Any], kid: str) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": kid})


def unsigned(payload: dict[str, Any]) -> str:
    return f"{b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{b64(json.dumps(payload).encode())}."


def hs256_with_public_key(payload: dict[str, Any], kid: str, public_key: Any) -> str:
    """The algorithm-confusion attack: HMAC keyed with the issuer's public key."""
    pem = public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = b64(json.dumps(payload).encode())
    signature = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


def call(api: GraphQL, token: str):
    return api.raw(ME, headers={"Authorization": f"Bearer {token}"})


def assert_invalid_token(answer) -> None:
    assert answer.status == 401, answer.body
    assert answer.codes == ["UNAUTHENTICATED"]
    assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]


def test_no_token_answers_401_with_a_bearer_challenge(api: GraphQL) -> None:
    answer = api.raw(ME)
    assert answer.status == 401
    assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert answer.codes == ["UNAUTHENTICATED"]


def test_a_valid_token_is_accepted(api: GraphQL) -> None:
    assert api(ME, user="alice").status == 200


def test_a_token_signed_by_a_key_not_in_the_jwks_is_refused(api: GraphQL, world: World) -> None:
    kid, _ = issuer_key(world)
    assert_invalid_token(call(api, sign_rs256_with_a_foreign_key(claims(world), kid)))


def test_a_token_with_an_unknown_kid_is_refused(api: GraphQL, world: World) -> None:
    assert_invalid_token(call(api, sign_rs256_with_a_foreign_key(claims(world), "no-such-kid")))


def test_alg_none_is_refused(api: GraphQL, world: World) -> None:
    assert_invalid_token(call(api, unsigned(claims(world))))


def test_hs256_keyed_with_the_issuers_public_key_is_refused(api: GraphQL, world: World) -> None:
    kid, public_key = issuer_key(world)
    assert_invalid_token(call(api, hs256_with_public_key(claims(world), kid, public_key)))


def sign_as_the_issuer(world: World, payload: dict[str, Any]) -> str:
    """A token signed with the identity provider's own key: only its claims can be wrong."""
    pem = (world.identity.data_dir / "oidc-signing-key.pem").read_bytes()
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    kid, _ = issuer_key(world)
    return jwt.encode(
        payload,
        key,
        algorithm="RS256",
        headers={"kid": kid, "typ": "at+jwt"},
    )


def test_a_token_signed_by_the_issuer_with_good_claims_is_accepted(api: GraphQL, world: World) -> None:
    assert call(api, sign_as_the_issuer(world, claims(world))).status == 200


@pytest.mark.parametrize(
    "override",
    [
        pytest.param({"iss": "https://evil.example.com"}, id="wrong issuer"),
        pytest.param({"aud": ["someone-else"]}, id="wrong audience"),
        pytest.param({"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200}, id="expired"),
        pytest.param({"nbf": int(time.time()) + 3600}, id="not yet valid"),
    ],
)
def test_a_token_with_bad_claims_is_refused(api: GraphQL, world: World, override: dict[str, Any]) -> None:
    assert_invalid_token(call(api, sign_as_the_issuer(world, claims(world, **override))))


def test_a_tampered_payload_is_refused(api: GraphQL, world: World) -> None:
    token = api.token("bob")
    head, payload, signature = token.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    decoded[f"urn:zitadel:iam:org:project:{seed.PROJECT_ID}:roles"] = {"ADMIN": {"1": "x"}}
    assert_invalid_token(call(api, f"{head}.{b64(json.dumps(decoded).encode())}.{signature}"))


def test_garbage_is_refused(api: GraphQL) -> None:
    assert_invalid_token(call(api, "not-a-jwt"))


def test_a_token_in_the_query_string_is_not_accepted(api: GraphQL) -> None:
    response = requests.post(f"{api.url}?access_token={api.token('alice')}", json={"query": ME}, timeout=10)
    assert response.status_code == 401
