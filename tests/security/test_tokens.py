"""Bearer tokens (RFC 8725, RFC 9068), against the running orchestrator's /graphql over HTTP.

Every way a token can be wrong answers 401 with ``WWW-Authenticate: Bearer error="invalid_token"``,
never a 500 and never data. A valid token without a role answers 403, and so does USER acting on
any mutation the schema documents as "Needs ADMIN" (found in the schema, so a new one gets its row).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
)

from orchestrator.graphql.schema import schema
from tests.apikit import Answer, GraphQL
from tests.promises import RecordFigure
from tests.security.conftest import Issuer

pytestmark = pytest.mark.promise("tokens")

SUITE = "tokens"
ME = "{ me { subject roles } }"
# The dev identity provider's confidential portal client (an ID token's audience and azp).
PORTAL_CLIENT = "flexplane-portal"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def assemble(header: Any, claims: Any, signature: bytes = b"") -> str:
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}.{b64(signature)}"


def foreign_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def hs256_with_the_public_key(issuer: Issuer) -> str:
    """Algorithm confusion: an HMAC keyed with the issuer's public key, which anyone may fetch."""
    header = {"alg": "HS256", "typ": "at+jwt", "kid": issuer.kid}
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(issuer.claims('ADMIN')).encode())}"
    signature = hmac.new(issuer.public_pem(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(signature)}"


def tampered(issuer: Issuer) -> str:
    """A genuine USER token whose payload was rewritten to claim ADMIN, keeping its signature."""
    head, _payload, signature = issuer.token("USER").split(".")
    return f"{head}.{b64(json.dumps(issuer.claims('ADMIN')).encode())}.{signature}"


def id_token(issuer: Issuer) -> str:
    """An ID token as the dev provider issues it: typ JWT, the client and project as audience, azp."""
    claims = issuer.claims("ADMIN", aud=[PORTAL_CLIENT, issuer.claims()["aud"][0]], azp=PORTAL_CLIENT)
    return issuer.sign({**claims, "auth_time": claims["iat"], "nonce": "n-0S6_WzA2Mj"}, typ="JWT")


def without(claims: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in claims.items() if key != name}


# name -> how to make the token, given the issuer
BAD_TOKENS: dict[str, Callable[[Issuer], str]] = {
    "alg none": lambda i: assemble({"alg": "none", "typ": "at+jwt"}, i.claims("ADMIN")),
    "alg None, signature kept": lambda i: assemble({"alg": "None", "kid": i.kid}, i.claims("ADMIN"), b"sig"),
    "HS256 keyed with the issuer's public key": hs256_with_the_public_key,
    "a key not in the JWKS, under the issuer's kid": lambda i: i.sign(i.claims("ADMIN"), key=foreign_key()),
    "an unknown kid": lambda i: i.sign(i.claims("ADMIN"), key=foreign_key(), kid="no-such-kid"),
    "no kid": lambda i: i.sign(i.claims("ADMIN"), kid=None),
    "a jku pointing at the attacker's keys": lambda i: i.sign(
        i.claims("ADMIN"), key=foreign_key(), jku="https://attacker.example/jwks.json"
    ),
    "wrong iss": lambda i: i.token("ADMIN", iss="https://evil.example.com"),
    "wrong aud": lambda i: i.token("ADMIN", aud=["someone-else"]),
    "expired": lambda i: i.token("ADMIN", iat=int(time.time()) - 7200, exp=int(time.time()) - 3600),
    "nbf in the future": lambda i: i.token("ADMIN", nbf=int(time.time()) + 3600),
    "a tampered payload": tampered,
    "an ID token where an access token is due": id_token,
    "no typ, where the issuer types access tokens": lambda i: i.sign(i.claims("ADMIN"), typ=None),
    "typ JWT": lambda i: i.sign(i.claims("ADMIN"), typ="JWT"),
    "no sub": lambda i: i.sign(without(i.claims("ADMIN"), "sub")),
    "no exp": lambda i: i.sign(without(i.claims("ADMIN"), "exp")),
    "exp that is not a number": lambda i: i.token("ADMIN", exp="tomorrow"),
    "the signature stripped": lambda i: i.token("ADMIN").rsplit(".", 1)[0] + ".",
    "a header that is not an object": lambda i: assemble(["RS256"], i.claims("ADMIN"), b"x"),
    "a payload that is not JSON": lambda i: f"{i.token('ADMIN').split('.')[0]}.{b64(b'not json')}.x",
    "not a JWT": lambda _: "not-a-jwt",
    "two dots, nothing else": lambda _: "..",
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_invalid_token(answer: Answer) -> None:
    assert answer.status == 401, answer.body
    assert answer.codes == ["UNAUTHENTICATED"], answer.body
    assert answer.data is None
    challenge = answer.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="invalid_token"' in challenge


@pytest.fixture(scope="module")
def refusal_times(record_figure: RecordFigure) -> Iterator[dict[str, float]]:
    """How long each bad token took to be refused (ms), summed up for the run's summary."""
    times: dict[str, float] = {}
    yield times
    if times:
        slowest = max(times, key=times.__getitem__)
        record_figure(
            SUITE, "bad tokens refused with 401 invalid_token", f"{len(times)} of {len(BAD_TOKENS)}"
        )
        record_figure(SUITE, "median refusal (ms)", round(statistics.median(times.values()), 1))
        record_figure(SUITE, "slowest refusal (ms)", f"{times[slowest]:.1f} ({slowest})")


@pytest.mark.parametrize("case", list(BAD_TOKENS))
def test_a_bad_token_answers_401_invalid_token(
    api: GraphQL, issuer: Issuer, refusal_times: dict[str, float], case: str
) -> None:
    token = BAD_TOKENS[case](issuer)

    started = time.monotonic()
    answer = api.raw(ME, headers=bearer(token))
    elapsed_ms = (time.monotonic() - started) * 1000

    assert_invalid_token(answer)
    refusal_times[case] = elapsed_ms


def test_the_token_minted_for_the_suite_is_accepted(api: GraphQL, issuer: Issuer) -> None:
    """The control: the bad tokens differ from this one only in what their row names."""
    answer = api.raw(ME, headers=bearer(issuer.token("USER")))

    assert answer.status == 200, answer.body
    assert answer.data["me"]["roles"] == ["USER"]


def test_the_media_type_form_of_the_access_token_type_is_accepted(api: GraphQL, issuer: Issuer) -> None:
    """RFC 7515 4.1.9: "application/at+jwt" and "at+jwt" name the same type, in any case."""
    answer = api.raw(ME, headers=bearer(issuer.sign(issuer.claims("USER"), typ="application/AT+JWT")))

    assert answer.status == 200, answer.body


def test_the_identity_providers_own_access_token_is_accepted(api: GraphQL) -> None:
    assert api(ME, user="alice").status == 200


def test_no_token_answers_401_with_a_bare_challenge(api: GraphQL) -> None:
    """RFC 6750 3.1: a request without credentials gets a challenge without an error code."""
    answer = api.raw(ME)

    assert answer.status == 401
    assert answer.codes == ["UNAUTHENTICATED"]
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="flexplane"'


@pytest.mark.parametrize("authorization", ["Basic YWxpY2U6YWxpY2U=", "Bearer", "Bearer    ", "Token abc"])
def test_an_authorization_header_that_is_not_a_bearer_token_answers_401(
    api: GraphQL, authorization: str
) -> None:
    answer = api.raw(ME, headers={"Authorization": authorization})

    assert_invalid_token(answer)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_token_in_the_query_string_does_not_authenticate(api: GraphQL, method: str) -> None:
    """Query strings end up in logs and Referer headers: only the Authorization header counts. To the
    API the request carries no credentials, so the challenge has no error code (RFC 6750 3.1)."""
    token = api.token("alice")

    response = requests.request(
        method, api.url, params={"access_token": token, "query": ME}, json={"query": ME}, timeout=10
    )

    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="flexplane"'
    assert "data" not in response.json()


# ----------------------------------------------------------------------------------------- 403


def test_a_valid_token_without_a_role_may_ask_who_it_is(api: GraphQL, issuer: Issuer) -> None:
    answer = api.raw(ME, headers=bearer(issuer.token()))

    assert answer.status == 200, answer.body
    assert answer.data["me"]["roles"] == []


def test_a_valid_token_without_user_answers_403(api: GraphQL, issuer: Issuer) -> None:
    answer = api.raw("{ virtualMachines { edges { cursor } } }", headers=bearer(issuer.token("vdc:demo")))

    assert answer.status == 403, answer.body
    assert answer.codes == ["FORBIDDEN"]
    assert answer.data is None


def admin_mutations() -> list[str]:
    """Every mutation whose description says it needs ADMIN."""
    fields = schema.graphql_schema.mutation_type.fields
    return sorted(
        name for name, field in fields.items() if re.search(r"\bNeeds ADMIN\b", field.description or "")
    )


def placeholder(kind: GraphQLInputType) -> Any:
    """A value of an input type, required parts only: enough for the call to get past GraphQL."""
    if isinstance(kind, GraphQLNonNull):
        return placeholder(kind.of_type)
    if isinstance(kind, GraphQLList):
        return []
    if isinstance(kind, GraphQLEnumType):
        return next(iter(kind.values))
    if isinstance(kind, GraphQLInputObjectType):
        return {
            name: placeholder(field.type)
            for name, field in kind.fields.items()
            if isinstance(field.type, GraphQLNonNull)
        }
    assert isinstance(kind, GraphQLScalarType)
    return {"Int": 1, "Float": 1.0, "Boolean": False}.get(kind.name, "forbidden-probe")


def mutation_document(name: str) -> tuple[str, dict[str, Any]]:
    field = schema.graphql_schema.mutation_type.fields[name]
    required = {arg: spec for arg, spec in field.args.items() if isinstance(spec.type, GraphQLNonNull)}
    params = "".join(f"${arg}: {spec.type}, " for arg, spec in required.items()).rstrip(", ")
    args = ", ".join(f"{arg}: ${arg}" for arg in required)
    signature, call = (f"({params})", f"({args})") if params else ("", "")
    document = f"mutation{signature} {{ {name}{call} {{ __typename }} }}"
    return document, {arg: placeholder(spec.type) for arg, spec in required.items()}


def test_the_schema_has_admin_mutations_to_check() -> None:
    assert {"createComputeProfile", "createVdc", "deleteZone"} <= set(admin_mutations())


@pytest.mark.parametrize("mutation", admin_mutations())
def test_user_acting_on_an_admin_mutation_answers_403(
    api: GraphQL, record_figure: RecordFigure, mutation: str
) -> None:
    document, variables = mutation_document(mutation)

    answer = api(document, user="alice", vdc="demo", variables=variables)

    assert answer.status == 403, answer.body
    assert answer.codes == ["FORBIDDEN"], answer.body
    assert answer.data == {mutation: None}
    record_figure(SUITE, "ADMIN mutations in the schema (each 403 for USER)", len(admin_mutations()))
