"""Fixtures of the security suites: tokens minted as the identity provider (or an attacker) would, the
agent suites' standalone agent and PKI, counts of what reached the fake Proxmox zones, an orchestrator
under production settings beside the world's own, VMs of alice's VDC for the isolation suites, and the
timing of another VDC's ids against ids that do not exist.
"""

from __future__ import annotations

import re
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.test import override_settings
from django.urls import URLPattern, URLResolver

from devstack import seed
from devstack.net import free_port
from devstack.processes import spawn
from devstack.world import World
from portal import urls as portal_urls

# The standalone agent, its PKI and the fake Proxmox it serves (tests/agent/conftest.py).
from tests.agent.conftest import (  # noqa: F401  # fixtures, imported to be found here too
    agent,
    agent_config,
    launch,
    pki,
    pool,
    proxmox,
    pve,
    target,
)
from tests.apikit import GraphQL
from tests.portal.sessionkit import COOKIE, recorded_session
from tests.promises import RecordFigure
from tests.vmkit import act, create, vm_names

Reply = TypeVar("Reply")

ROLES_CLAIM = f"urn:zitadel:iam:org:project:{seed.PROJECT_ID}:roles"
ACCESS_TOKEN_TYPE = "at+jwt"


@dataclass(frozen=True)
class Issuer:
    """The world's identity provider as a token minter: its URL, its signing key and that key's kid."""

    url: str
    kid: str
    key: rsa.RSAPrivateKey

    def claims(self, *roles: str, **overrides: Any) -> dict[str, Any]:
        """The claims of a valid access token with these roles; keyword arguments replace or add claims."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "aud": [seed.PROJECT_ID],
            "sub": "300000000000000001",
            "iat": now,
            "nbf": now,
            "exp": now + 300,
            ROLES_CLAIM: {role: {"100000001": "flexplane.localhost"} for role in roles},
        }
        claims.update(overrides)
        return claims

    def sign(
        self,
        claims: dict[str, Any],
        *,
        typ: str | None = ACCESS_TOKEN_TYPE,
        key: rsa.RSAPrivateKey | None = None,
        **headers: Any,
    ) -> str:
        """claims signed RS256 with the issuer's key (or another), with its kid and the given typ; other
        keyword arguments are header parameters (None leaves one out)."""
        header = {"kid": self.kid, "typ": typ, **headers}
        # A header given as None is left out (PyJWT writes typ JWT unless typ is given as None).
        chosen = {name: value for name, value in header.items() if value is not None or name == "typ"}
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers=chosen)

    def token(self, *roles: str, **overrides: Any) -> str:
        """A valid access token with these roles."""
        return self.sign(self.claims(*roles, **overrides))

    def public_pem(self) -> bytes:
        return self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@pytest.fixture(scope="session")
def issuer(world: World) -> Issuer:
    """Signs with the identity provider's own key (its data directory), under the kid its JWKS publishes."""
    pem = (world.identity.data_dir / "oidc-signing-key.pem").read_bytes()
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    discovery = requests.get(f"{world.identity.issuer}/.well-known/openid-configuration", timeout=5).json()
    (jwk,) = requests.get(discovery["jwks_uri"], timeout=5).json()["keys"]
    return Issuer(url=world.identity.issuer, kid=jwk["kid"], key=key)


class ProxmoxCalls:
    """What reached the world's fake Proxmox zones: requests are counted from a mark."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.marks: dict[str, int] = {}

    def _all(self) -> dict[str, list[tuple[str, str, bytes]]]:
        fakes = self.world.fakes
        return {
            zone: fakes.on_loop(lambda fake=fake: list(fake.pve.requests))
            for zone, fake in fakes.zones.items()
        }

    def mark(self) -> None:
        self.marks = {zone: len(requests) for zone, requests in self._all().items()}

    def since_mark(self) -> list[tuple[str, str, str, bytes]]:
        """(zone, method, path, body) of every request since the mark."""
        return [
            (zone, method, path, body)
            for zone, requests in self._all().items()
            for method, path, body in requests[self.marks.get(zone, 0) :]
        ]

    def writes_since_mark(self) -> list[tuple[str, str, str, bytes]]:
        return [call for call in self.since_mark() if call[1] != "GET"]


@pytest.fixture
def proxmox_calls(world: World) -> ProxmoxCalls:
    """Counts the requests the fake zones receive from the moment the test calls ``mark()``."""
    calls = ProxmoxCalls(world)
    calls.mark()
    return calls


@dataclass(frozen=True)
class Production:
    """An orchestrator process under flexplane.settings.production, serving the world's neighbours."""

    url: str  # http://host:port: TLS ends at the ingress, which says so (BEHIND_THE_INGRESS)
    secret_key: str  # its SECRET_KEY, generated for the run: it signs the portal's sessions


# What the ingress adds to every request it forwards after ending TLS (SECURE_PROXY_SSL_HEADER).
BEHIND_THE_INGRESS = {"X-Forwarded-Proto": "https"}


def refused_before_proxmox(suite: str, refusals: str, requests_made: str) -> Any:
    """A module's ``refused`` fixture: the attempts its tests saw refused, counted in the summary as
    ``refusals``, beside ``requests_made`` (to Proxmox by those attempts): none."""

    @pytest.fixture(scope="module", name="refused")
    def fixture(record_figure: RecordFigure) -> Iterator[list[str]]:
        attempts: list[str] = []
        yield attempts
        record_figure(suite, refusals, len(attempts))
        record_figure(suite, requests_made, 0)

    return fixture


@pytest.fixture(scope="session")
def production_orchestrator(world: World) -> Iterator[Production]:
    """The orchestrator under production settings, beside the world's own, once per run."""
    host = world.cfg.orchestrator_host
    port = free_port(host)
    secret_key = secrets.token_urlsafe(50)
    env = {
        **world.orchestrator_env(),
        "DJANGO_SETTINGS_MODULE": "flexplane.settings.production",
        "FLEXPLANE_SECRET_KEY": secret_key,
        "FLEXPLANE_ALLOWED_HOSTS": host,
    }
    process = spawn(
        "production orchestrator",
        [sys.executable, "-m", "flexplane.serve", "--host", host, "--port", str(port)],
        world.cfg.scratch / "logs" / "orchestrator-production.log",
        env=env,
    )
    try:
        url = f"http://{host}:{port}"
        deadline = time.monotonic() + 30
        while not _healthy(f"{url}/healthz"):
            if time.monotonic() > deadline or process.popen.poll() is not None:
                pytest.fail(f"the production orchestrator did not start:\n{process.output()[-4000:]}")
            time.sleep(0.1)
        yield Production(url=url, secret_key=secret_key)
    finally:
        process.stop()


def _healthy(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


@dataclass(frozen=True)
class AlicesVms:
    """VMs of VDC demo (alice's), made for a module and deleted after it, with ids bob must not reach."""

    running: str
    stopped: str
    # The start task of ``running``'s create: a task of VDC demo.
    task: str
    name: str  # ``running``'s name
    # More names of the module's own: every VM so named is deleted after the module too.
    names: Callable[[str], str]
    # The id of VDC demo's default network of zone-a (its VMs' NICs are on it).
    network: str = ""
    # A security group of VDC demo's (none of VDC other's is so named).
    security_group: str = ""
    # A volume of VDC demo's, available, beside ``stopped``.
    volume: str = ""
    # A snapshot of ``volume``.
    volume_snapshot: str = ""


@pytest.fixture(scope="module")
def alices_vms(api: GraphQL, world: World) -> Iterator[AlicesVms]:
    """Two VMs made by alice in VDC demo (one running, one stopped), and a security group of hers, so
    that the isolation suites act on objects of their own rather than on the seeded ones other suites
    change."""
    with vm_names(api, world) as name:
        running = create(api, "alice", "demo", name=name("running"))
        stopped = create(api, "alice", "demo", name=name("stopped"))["virtualMachine"]["id"]
        act(api, "alice", "stopVirtualMachine", stopped)
        listed = api("{ networks { id zone isDefault } }", user="alice", vdc="demo").data["networks"]
        [network] = [n["id"] for n in listed if n["zone"] == "zone-a" and n["isDefault"]]
        group = name("sg")[:32]
        made = api(
            "mutation($name: String!) { createSecurityGroup(input: {name: $name}) { errors { code } } }",
            user="alice",
            vdc="demo",
            variables={"name": group},
        )
        assert made.data["createSecurityGroup"]["errors"] == [], made.body
        volume = api(
            'mutation($name: String!, $near: ID!) { createVolume(name: $name, storageProfile: "standard", '
            "sizeGb: 10, near: $near) { volume { id } errors { code message } } }",
            user="alice",
            vdc="demo",
            variables={"name": name("vol"), "near": stopped},
        ).data["createVolume"]
        assert volume["errors"] == [], volume["errors"]
        snapshot = api(
            "mutation($id: ID!, $name: String!) { createVolumeSnapshot(volume: $id, name: $name) "
            "{ snapshot { id } errors { code message } } }",
            user="alice",
            vdc="demo",
            variables={"id": volume["volume"]["id"], "name": name("snap")},
        ).data["createVolumeSnapshot"]
        assert snapshot["errors"] == [], snapshot["errors"]
        yield AlicesVms(
            network=network,
            security_group=group,
            volume=volume["volume"]["id"],
            volume_snapshot=snapshot["snapshot"]["id"],
            running=running["virtualMachine"]["id"],
            stopped=stopped,
            task=running["task"]["id"],
            name=running["virtualMachine"]["name"],
            names=name,
        )
        api(
            "mutation($name: String!) { deleteSecurityGroup(name: $name) { errors { code } } }",
            user="admin",
            vdc="demo",
            variables={"name": group},
        )
        api(
            "mutation($id: ID!) { deleteVolumeSnapshot(id: $id) { errors { code } } }",
            user="admin",
            variables={"id": snapshot["snapshot"]["id"]},
        )
        for mutation in ("detachVolume", "deleteVolume"):
            document = f"mutation($id: ID!) {{ {mutation}(id: $id) {{ errors {{ code }} }} }}"
            api(document, user="admin", variables={"id": volume["volume"]["id"]})


def production_cookie(production: Production, world: World, roles: list[str], username: str) -> str:
    """The portal's session cookie of a signed-in user, as the production orchestrator signs them."""
    with override_settings(SECRET_KEY=production.secret_key):
        session = recorded_session(world, roles, username)
    return str(session.cookies.get(COOKIE, domain=world.cfg.orchestrator_host))


_PARAM = re.compile(r"<(?:\w+:)?(\w+)>")


@dataclass(frozen=True)
class Route:
    """One of the portal's URL patterns: its path with Django's ``<converter:name>`` parameters."""

    path: str
    name: str

    @property
    def params(self) -> list[str]:
        return _PARAM.findall(self.path)

    def url(self, **values: object) -> str:
        """The path with each parameter replaced by its value."""
        return "/" + _PARAM.sub(lambda match: str(values[match[1]]), self.path)


def portal_routes() -> list[Route]:
    """Every HTTP URL of the portal: portal/urls.py and what it includes, read from Django's resolver."""

    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> Iterator[Route]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield Route(prefix + str(pattern.pattern), str(pattern.name))

    return list(walk(portal_urls.urlpatterns, ""))


# ------------------------------------------------------------------------------------------ timings


@pytest.fixture(scope="session")
def timing_full(pytestconfig: pytest.Config) -> bool:
    """Whether timing probes take all their rounds at once (``--timing-full``, ``make test-full``)."""
    return bool(pytestconfig.getoption("timing_full"))


class Timings(Generic[Reply]):
    """The answers to two ids (another VDC's, one that does not exist) and their times, asked in rounds
    that alternate which goes first, and the ratio of their median times.

    A probe takes ``first`` rounds (one by default, all of them under ``make test-full``). The ratio is
    asserted on them when it is within bounds; otherwise on all the rounds, the remaining ones taken
    then, as a probe of all its rounds would have been.
    """

    def __init__(self, ask: Callable[[str], tuple[Reply, float]], foreign: str, missing: str) -> None:
        self.ask = ask
        self.foreign, self.missing = foreign, missing
        self.times: dict[str, list[float]] = {foreign: [], missing: []}
        self.answers: dict[str, Reply] = {}

    def take(self, rounds: int) -> Timings[Reply]:
        for _ in range(rounds):
            first_foreign = len(self.times[self.foreign]) % 2 == 0
            for ident in (self.foreign, self.missing) if first_foreign else (self.missing, self.foreign):
                self.answers[ident], elapsed = self.ask(ident)
                self.times[ident].append(elapsed)
        return self

    @property
    def ratio(self) -> float:
        """The median time of the foreign id over that of the missing one."""
        return statistics.median(self.times[self.foreign]) / statistics.median(self.times[self.missing])

    def ratio_within(self, magnitude: float, rounds: int) -> float:
        """The ratio, over all ``rounds`` if that of the rounds taken so far is not within the magnitude."""
        if not 1 / magnitude < self.ratio < magnitude:
            self.take(rounds - len(self.times[self.foreign]))
        return self.ratio
