"""Host enrollment through the orchestrator: join tokens in the GraphQL API, then the HTTPS enrollment
endpoints (/enroll/v1/join and /enroll/v1/renew) against the world's Kubernetes emulator and CA.

Nodes here are only names and addresses: no agent runs (tests/agent/test_bootstrap.py runs them).
Every host a test enrolls leaves the catalog when it ends.
"""

from __future__ import annotations

import base64
import datetime
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from agentclient.enrollment import JOIN_PATH, RENEW_PATH, parse_join_token, renewal_message, sign_proof
from devstack import seed
from devstack.pki import CertificateAuthority
from devstack.world import World
from tests.apikit import GraphQL
from tests.enrollkit import CREATE_TOKEN, core, csr, host_spec, join, join_token, post, remove_host
from tests.orchestrator.replicas import replica

ZONE = "zone-b"


@pytest.fixture
def enrolled(world: World) -> Iterator[Callable[[str], str]]:
    """Names of hosts a test enrolls (``enrolled("pve20")`` -> an endpoint of its own), removed afterwards."""
    names: list[str] = []

    def name(node: str) -> str:
        names.append(node)
        return f"127.{world.cfg.subnet}.2.{100 + len(names)}:7443"

    yield name
    for node in names:
        remove_host(world, ZONE, node)


def identity(node: str) -> str:
    return f"{node}.{ZONE}.agents.flexplane"


def error(response: requests.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()["error"]
    return body


def certificate(response: requests.Response) -> x509.Certificate:
    assert response.status_code == 200, response.text
    return x509.load_pem_x509_certificate(response.json()["certificate"].encode())


# ------------------------------------------------------------------------------ join tokens


def test_an_admin_gets_a_join_token_with_its_command_and_only_its_hash_is_stored(
    api: GraphQL, world: World
) -> None:
    answer = api(CREATE_TOKEN, user="admin", variables={"zone": ZONE, "host": "pve20"})
    made = answer.data["createHostJoinToken"]
    assert made["errors"] == []
    token = made["joinToken"]
    assert (token["zone"], token["host"]) == (ZONE, "pve20")
    expires = datetime.datetime.fromisoformat(token["expiresAt"])
    in_an_hour = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    assert abs((expires - in_an_hour).total_seconds()) < 60
    assert token["command"] == (
        f"flexplane-agent bootstrap --orchestrator {world.https_url} --token {token['token']}"
    )
    parts = parse_join_token(token["token"])
    assert (parts.zone, parts.host) == (ZONE, "pve20")

    stored = core(world).read_namespaced_secret(f"join-token-{parts.ident}", seed.NAMESPACE)
    assert stored.metadata is not None
    assert stored.metadata.labels is not None
    assert stored.data is not None
    assert stored.metadata.labels["flexplane.io/kind"] == "join-token"
    values = {k: base64.b64decode(v).decode() for k, v in stored.data.items()}
    assert all(parts.secret not in value for value in values.values())
    assert values["hash"] != parts.secret
    assert (values["zone"], values["host"]) == (ZONE, "pve20")


def test_a_user_may_not_create_join_tokens(api: GraphQL) -> None:
    answer = api(CREATE_TOKEN, user="alice", variables={"zone": ZONE, "host": "pve20"})
    assert answer.codes == ["FORBIDDEN"]
    assert answer.data is None or answer.data["createHostJoinToken"] is None


@pytest.mark.parametrize(
    ("zone", "host", "field", "words"),
    [
        ("zone-x", "pve20", "zone", "there is no zone 'zone-x'"),
        (ZONE, "PVE_20", "host", "is not a DNS label"),
        (ZONE, "-pve", "host", "is not a DNS label"),
    ],
)
def test_a_join_token_needs_an_existing_zone_and_a_dns_label(
    api: GraphQL, zone: str, host: str, field: str, words: str
) -> None:
    answer = api(CREATE_TOKEN, user="admin", variables={"zone": zone, "host": host})
    payload = answer.data["createHostJoinToken"]
    assert payload["joinToken"] is None
    [problem] = payload["errors"]
    assert (problem["field"], problem["code"]) == (field, "INVALID")
    assert words in problem["message"]


def test_admins_list_join_tokens_without_their_secret(api: GraphQL) -> None:
    token = join_token(api, ZONE, "pve21")
    answer = api("{ hostJoinTokens { id zone host expiresAt usedAt } }", user="admin")
    listed = {t["id"]: t for t in answer.data["hostJoinTokens"]}
    ident = parse_join_token(token).ident
    assert listed[ident]["host"] == "pve21"
    assert listed[ident]["usedAt"] is None
    assert token not in str(answer.body)
    assert api("{ hostJoinTokens { id } }", user="alice").codes == ["FORBIDDEN"]


# ------------------------------------------------------------------------------------ joining


def test_a_node_joins_and_gets_a_short_lived_certificate_naming_it(
    api: GraphQL, world: World, enrolled: Callable[[str], str]
) -> None:
    endpoint = enrolled("pve22")
    response = join(world, join_token(api, ZONE, "pve22"), csr(identity("pve22")), endpoint)
    issued = certificate(response)

    assert world.ca is not None
    issued.verify_directly_issued_by(world.ca.certificate)
    names = issued.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [identity("pve22")]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == [endpoint.split(":")[0]]
    usages = issued.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    lifetime = issued.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(days=29) < lifetime <= datetime.timedelta(days=30)

    body = response.json()
    assert body["ca"] == world.ca.cert_pem.decode()
    assert body["settings"]["zone"] == ZONE
    assert body["settings"]["node"] == "pve22"
    assert body["settings"]["listen"] == endpoint
    assert body["settings"]["orchestrator_url"] == world.https_url
    assert body["settings"]["allowed_clients"] == ["flexplane-orchestrator", "flexplane-capi"]
    assert host_spec(world, ZONE, "pve22") == {
        "zone": ZONE,
        "node": "pve22",
        "endpoint": endpoint,
        "cordoned": False,
        "memoryOvercommit": 1.0,
        "cpuOvercommit": 4.0,
    }


def test_a_join_token_works_once(api: GraphQL, world: World, enrolled: Callable[[str], str]) -> None:
    endpoint = enrolled("pve23")
    token = join_token(api, ZONE, "pve23")
    certificate(join(world, token, csr(identity("pve23")), endpoint))

    again = join(world, token, csr(identity("pve23")), endpoint)
    assert again.status_code == 401
    assert error(again)["code"] == "UNAUTHENTICATED"
    assert "already used" in error(again)["message"]
    assert "certificate" not in again.json()


def test_of_two_joins_racing_with_one_token_exactly_one_gets_a_certificate(
    api: GraphQL, world: World, enrolled: Callable[[str], str]
) -> None:
    endpoint = enrolled("pve24")
    token = join_token(api, ZONE, "pve24")
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: join(world, token, csr(identity("pve24")), endpoint), range(4)))
    assert sorted(a.status_code for a in answers) == [200, 401, 401, 401]


def test_an_unknown_join_token_is_refused(api: GraphQL, world: World) -> None:
    real = parse_join_token(join_token(api, ZONE, "pve25"))
    forged = f"{real.zone}.{real.host}.{real.expires}.{real.ident}.{'x' * 43}"
    for token in (forged, "not-a-token"):
        response = join(world, token, csr(identity("pve25")), "127.0.0.9:7443")
        assert response.status_code == 401
        assert error(response)["code"] == "UNAUTHENTICATED"
    assert (
        "unknown join token"
        in error(join(world, forged, csr(identity("pve25")), "127.0.0.9:7443"))["message"]
    )
    assert host_spec(world, ZONE, "pve25") is None


@pytest.fixture(scope="module")
def short_tokens(world: World) -> Iterator[str]:
    """A second orchestrator replica, whose join tokens live one second: its HTTP URL."""
    with replica(world, "orchestrator-short-tokens", {"FLEXPLANE_JOIN_TOKEN_TTL": "1"}) as url:
        yield url


def test_an_expired_join_token_is_refused(api: GraphQL, world: World, short_tokens: str) -> None:
    answer = requests.post(
        f"{short_tokens}/graphql",
        json={"query": CREATE_TOKEN, "variables": {"zone": ZONE, "host": "pve26"}},
        headers={"Authorization": f"Bearer {api.token('admin')}"},
        timeout=30,
    ).json()
    token = answer["data"]["createHostJoinToken"]["joinToken"]["token"]
    time.sleep(1.5)
    response = join(world, token, csr(identity("pve26")), "127.0.0.9:7443")  # the other replica: no state
    assert response.status_code == 401
    assert "expired at" in error(response)["message"]
    assert host_spec(world, ZONE, "pve26") is None


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: csr(identity("pve99")), "this host is pve27.zone-b.agents.flexplane"),
        (lambda: csr(identity("pve27"), dns=[identity("pve27"), "evil.example.com"]), "evil.example.com"),
        (lambda: csr(identity("pve27"), rsa.generate_private_key(65537, 1024)), "1024 bits, too weak"),  # noqa: S505 - the weak key refused
        (lambda: csr(identity("pve27"), ec.generate_private_key(ec.SECP521R1())), "curve secp521r1"),
        (lambda: csr(identity("pve27"), ed25519.Ed25519PrivateKey.generate()), "Ed25519PublicKey"),
        (lambda: _tampered(csr(identity("pve27"))), "signature does not verify"),
        (lambda: "-----BEGIN CERTIFICATE REQUEST-----\nnope\n", "not a PEM certificate signing request"),
    ],
    ids=["another-host", "extra-name", "rsa-1024", "p-521", "ed25519", "bad-signature", "not-pem"],
)
def test_a_bad_csr_is_refused_and_the_token_still_works(
    api: GraphQL, world: World, enrolled: Callable[[str], str], make: Callable[[], str], words: str
) -> None:
    endpoint = enrolled("pve27")
    token = join_token(api, ZONE, "pve27")
    refused = join(world, token, make(), endpoint)
    assert refused.status_code == 400
    assert (error(refused)["code"], error(refused)["field"]) == ("INVALID", "csr")
    assert words in error(refused)["message"]
    assert host_spec(world, ZONE, "pve27") is None
    certificate(join(world, token, csr(identity("pve27")), endpoint))  # nothing was spent


def _tampered(pem: str) -> str:
    """The CSR with one bit of its signature flipped."""
    der = bytearray(x509.load_pem_x509_csr(pem.encode()).public_bytes(serialization.Encoding.DER))
    der[-1] ^= 1
    return x509.load_der_x509_csr(bytes(der)).public_bytes(serialization.Encoding.PEM).decode()


@pytest.mark.parametrize("endpoint", ["pve28:7443", "10.0.0.1", "0.0.0.0:7443", "10.0.0.1:70000", "::1:7443"])
def test_an_endpoint_must_be_an_ip_and_a_port(api: GraphQL, world: World, endpoint: str) -> None:
    refused = join(world, join_token(api, ZONE, "pve28"), csr(identity("pve28")), endpoint)
    assert refused.status_code == 400
    assert error(refused)["field"] == "endpoint"


def test_enrollment_over_plain_http_is_refused(api: GraphQL, world: World) -> None:
    response = requests.post(
        world.url + JOIN_PATH,
        json={
            "token": join_token(api, ZONE, "pve29"),
            "csr": csr(identity("pve29")),
            "endpoint": "127.0.0.9:1",
        },
        timeout=30,
    )
    assert response.status_code == 403
    assert "needs HTTPS" in error(response)["message"]
    assert host_spec(world, ZONE, "pve29") is None


# ------------------------------------------------------------------------------------ renewal


def _renewal(
    current: str, key: Any, new_csr: str, *, timestamp: int | None = None, signer: Any = None
) -> dict[str, Any]:
    stamp = int(time.time()) if timestamp is None else timestamp
    return {
        "csr": new_csr,
        "certificate": current,
        "timestamp": stamp,
        "signature": sign_proof(signer or key, renewal_message(stamp, new_csr)),
    }


@pytest.fixture
def joined(
    api: GraphQL, world: World, enrolled: Callable[[str], str]
) -> tuple[str, ec.EllipticCurvePrivateKey]:
    """Host pve30 enrolled: its certificate (PEM) and key."""
    key = ec.generate_private_key(ec.SECP256R1())
    response = join(world, join_token(api, ZONE, "pve30"), csr(identity("pve30"), key), enrolled("pve30"))
    assert response.status_code == 200, response.text
    return response.json()["certificate"], key


def test_an_agent_renews_with_a_proof_of_its_key(world: World, joined: tuple[str, Any]) -> None:
    current, key = joined
    new_key = ec.generate_private_key(ec.SECP256R1())
    renewed = certificate(post(world, RENEW_PATH, _renewal(current, key, csr(identity("pve30"), new_key))))
    assert renewed.public_key() == new_key.public_key()
    assert renewed.serial_number != x509.load_pem_x509_certificate(current.encode()).serial_number
    names = renewed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [identity("pve30")]


def test_a_renewal_signed_with_another_key_is_refused(world: World, joined: tuple[str, Any]) -> None:
    current, key = joined
    body = _renewal(current, key, csr(identity("pve30")), signer=ec.generate_private_key(ec.SECP256R1()))
    response = post(world, RENEW_PATH, body)
    assert response.status_code == 401
    assert "no proof of possession" in error(response)["message"]


def test_a_renewal_with_a_stale_timestamp_is_refused(world: World, joined: tuple[str, Any]) -> None:
    current, key = joined
    response = post(
        world, RENEW_PATH, _renewal(current, key, csr(identity("pve30")), timestamp=int(time.time()) - 3600)
    )
    assert response.status_code == 401
    assert "check the node's clock" in error(response)["message"]


def test_a_renewal_for_another_host_is_refused(world: World, joined: tuple[str, Any]) -> None:
    current, key = joined
    response = post(world, RENEW_PATH, _renewal(current, key, csr(identity("pve31"))))
    assert response.status_code == 400
    assert "this host is pve30.zone-b.agents.flexplane" in error(response)["message"]


def test_a_removed_host_is_not_renewed(world: World, joined: tuple[str, Any]) -> None:
    current, key = joined
    remove_host(world, ZONE, "pve30")
    response = post(world, RENEW_PATH, _renewal(current, key, csr(identity("pve30"))))
    assert response.status_code == 403
    assert "not in the host list" in error(response)["message"]


def test_a_certificate_of_another_ca_is_not_renewed(world: World, tmp_path: Any) -> None:
    other = CertificateAuthority.create(tmp_path / "other")
    cert_path, key_path = other.issue_agent(identity("pve30"), ["127.0.0.9"], tmp_path, "agent")
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    response = post(world, RENEW_PATH, _renewal(cert_path.read_text(), key, csr(identity("pve30"))))
    assert response.status_code == 401
    assert "not issued by the platform CA" in error(response)["message"]
