"""The identity chart's handover and bootstrap (charts/identity/files/zitadel_bootstrap.py).

The script runs in the chart's jobs; here it talks to in-memory stand-ins of the two APIs it calls,
answering with the shapes of Zitadel's management API v1 and of Kubernetes' Secrets API: Zitadel
checks the service user's assertion with the key's public half, as the real token endpoint does.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.charts.fakezitadel import API, HOST, ISSUER, FakeZitadel

SCRIPT = Path(__file__).resolve().parents[2] / "charts" / "identity" / "files" / "zitadel_bootstrap.py"
NAMESPACE = "flexplane"
ROLES = [{"key": "ADMIN", "displayName": "Platform administrator"}, {"key": "USER"}, {"key": "ORG_OWNER"}]


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zitadel_bootstrap", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


script = load()


class FakeKube:
    """Secrets: create (409 when it exists), get, merge patch of data."""

    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], dict[str, str]] = {}
        self.writes = 0

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, bytes]:
        assert headers["Authorization"] == "Bearer sa-token"
        match = re.fullmatch(r"https://kube/api/v1/namespaces/([^/]+)/secrets(?:/([^/]+))?", url)
        assert match is not None, url
        namespace, name = match.groups()
        data = json.loads(body) if body else {}
        if method == "GET":
            secret = self.secrets.get((namespace, name))
            return (200, json.dumps({"data": secret}).encode()) if secret is not None else (404, b"{}")
        self.writes += 1
        if method == "POST":
            key = (namespace, data["metadata"]["name"])
            if key in self.secrets:
                return 409, b'{"message": "already exists"}'
            self.secrets[key] = dict(data["data"])
            return 201, b"{}"
        assert method == "PATCH"
        assert headers["Content-Type"] == "application/merge-patch+json"
        self.secrets[(namespace, name)] |= data["data"]
        return 200, b"{}"

    def decoded(self, name: str) -> dict[str, str]:
        return {k: base64.b64decode(v).decode() for k, v in self.secrets[(NAMESPACE, name)].items()}


@pytest.fixture(scope="module")
def private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def key(private_key: rsa.RSAPrivateKey) -> dict[str, str]:
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    return {
        "type": "serviceaccount",
        "keyId": "300000000000000042",
        "key": pem,
        "userId": "200000000000000002",
    }


@pytest.fixture
def zitadel(private_key: rsa.RSAPrivateKey) -> FakeZitadel:
    return FakeZitadel(private_key.public_key())


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube()


def settings(roles: list[dict[str, str]] = ROLES) -> dict[str, Any]:
    return {
        "serviceUserNamespace": NAMESPACE,
        "serviceUserSecret": "flexplane-zitadel-service-user",
        "keyKey": "key.json",
        "project": "flexplane",
        "roles": roles,
        "admin": "zitadel-admin",
        "adminRoles": ["ADMIN"],
        "portal": {
            "url": "https://cloud.example.com",
            "namespace": NAMESPACE,
            "secret": "flexplane-portal-oidc",
        },
    }


def run(
    kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str], values: dict[str, Any] | None = None
) -> None:
    client = script.Zitadel(API, ISSUER, key, zitadel, HOST)
    script.bootstrap(script.Kube("https://kube", "sa-token", kube), client, values or settings())


def test_the_assertion_is_the_service_users_signed_for_the_issuer(
    key: dict[str, str], private_key: rsa.RSAPrivateKey
) -> None:
    assertion = script.Zitadel(API, ISSUER, key, None).assertion(1_800_000_000.0)
    claims = jwt.decode(
        assertion,
        private_key.public_key(),
        algorithms=["RS256"],
        audience=ISSUER,
        options={"verify_exp": False, "verify_iat": False},
    )
    assert jwt.get_unverified_header(assertion)["kid"] == key["keyId"]
    assert claims["iss"] == claims["sub"] == key["userId"]
    assert claims["exp"] - claims["iat"] <= 3600  # Zitadel refuses assertions living longer than an hour


def test_a_first_bootstrap_makes_the_project_its_roles_the_admins_grant_and_the_portals_client(
    kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str]
) -> None:
    run(kube, zitadel, key)
    ((project_id, project),) = zitadel.projects.items()
    assert project["name"] == "flexplane"
    assert project["projectRoleAssertion"] is True  # the roles reach the tokens the orchestrator reads
    assert zitadel.roles[project_id] == ["ADMIN", "USER", "ORG_OWNER"]
    (grant,) = zitadel.grants.values()
    assert (grant["userId"], grant["projectId"], grant["roleKeys"]) == (
        "200000000000000001",
        project_id,
        ["ADMIN"],
    )
    (app,) = zitadel.apps.values()
    assert app["oidcConfig"]["redirectUris"] == ["https://cloud.example.com/oidc/callback/"]
    assert app["oidcConfig"]["accessTokenType"] == "OIDC_TOKEN_TYPE_JWT"
    assert kube.decoded("flexplane-zitadel-service-user") == {"project-id": project_id}
    assert kube.decoded("flexplane-portal-oidc") == {
        "client-id": app["oidcConfig"]["clientId"],
        "client-secret": f"secret-{app['id']}",
    }


def test_a_second_bootstrap_writes_nothing(kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str]) -> None:
    run(kube, zitadel, key)
    before = (list(zitadel.writes), kube.writes, kube.decoded("flexplane-portal-oidc"))
    run(kube, zitadel, key)
    assert (zitadel.writes, kube.writes, kube.decoded("flexplane-portal-oidc")) == before


def test_a_new_role_is_added_and_the_orchestrators_own_roles_stay(
    kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str]
) -> None:
    run(kube, zitadel, key)
    (project_id,) = zitadel.projects
    zitadel.roles[project_id].append("vdc:demo")  # what the orchestrator adds for a VDC
    run(kube, zitadel, key, settings([*ROLES, {"key": "AUDITOR"}]))
    assert zitadel.roles[project_id] == ["ADMIN", "USER", "ORG_OWNER", "vdc:demo", "AUDITOR"]


def test_the_admins_other_roles_are_kept_when_admin_is_granted(
    kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str]
) -> None:
    run(kube, zitadel, key)
    (grant,) = zitadel.grants.values()
    grant["roleKeys"] = ["USER", "vdc:demo"]
    run(kube, zitadel, key)
    assert grant["roleKeys"] == ["USER", "vdc:demo", "ADMIN"]


def test_a_lost_portal_secret_is_generated_anew(
    kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str]
) -> None:
    run(kube, zitadel, key)
    first = kube.decoded("flexplane-portal-oidc")
    del kube.secrets[(NAMESPACE, "flexplane-portal-oidc")]
    run(kube, zitadel, key)
    again = kube.decoded("flexplane-portal-oidc")
    assert again["client-id"] == first["client-id"]
    assert again["client-secret"].startswith("new-secret-")
    assert len(zitadel.apps) == 1


def test_a_changed_portal_url_moves_the_redirects(
    kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str]
) -> None:
    run(kube, zitadel, key)
    moved = settings()
    moved["portal"] = moved["portal"] | {"url": "https://portal.example.org/"}
    run(kube, zitadel, key, moved)
    (app,) = zitadel.apps.values()
    assert app["oidcConfig"]["redirectUris"] == ["https://portal.example.org/oidc/callback/"]
    assert app["oidcConfig"]["postLogoutRedirectUris"] == ["https://portal.example.org/"]


def test_a_refused_key_stops_the_bootstrap_saying_so(
    kube: FakeKube, zitadel: FakeZitadel, key: dict[str, str], private_key: rsa.RSAPrivateKey
) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    zitadel.public_key = other.public_key()
    with pytest.raises(script.Failure, match="Zitadel refused the service user's key: HTTP 400"):
        run(kube, zitadel, key)
    assert zitadel.projects == {}


def test_the_handover_puts_the_key_in_the_secret_and_a_later_setup_keeps_it(
    kube: FakeKube, key: dict[str, str], tmp_path: Path
) -> None:
    api = script.Kube("https://kube", "sa-token", kube)
    written = tmp_path / "key.json"
    written.write_text(json.dumps(key))
    script.handover(api, written, NAMESPACE, "flexplane-zitadel-service-user", "key.json")
    assert json.loads(kube.decoded("flexplane-zitadel-service-user")["key.json"]) == key
    # An upgrade's setup writes no key (the instance exists): the Secret stays as it is.
    script.handover(api, tmp_path / "absent.json", NAMESPACE, "flexplane-zitadel-service-user", "key.json")
    assert json.loads(kube.decoded("flexplane-zitadel-service-user")["key.json"]) == key


def test_the_handover_without_a_key_anywhere_fails_naming_the_secret(kube: FakeKube, tmp_path: Path) -> None:
    api = script.Kube("https://kube", "sa-token", kube)
    with pytest.raises(script.Failure, match=r"flexplane/flexplane-zitadel-service-user holds no key\.json"):
        script.handover(
            api, tmp_path / "absent.json", NAMESPACE, "flexplane-zitadel-service-user", "key.json"
        )
