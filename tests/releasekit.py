"""The agent release tests' kit: signed releases, and a platform that serves their channel over HTTPS.

:class:`ReleasePlatform` runs the real orchestrator on an HTTPS endpoint (flexplane.serve; certificate of
the tests' dev CA), with FLEXPLANE_AGENT_RELEASES_DIR pointing at a folder the tests fill (or
FLEXPLANE_AGENT_REGISTRY at a real registry, devstack/registry.py), the Kubernetes emulator
holding the pin, and the dev identity provider for admin tokens. Agents fetch
``/agent/releases/channel.json`` from it exactly as from a real deployment.

:class:`Proxy` stands between agents and the registry: a TCP relay (TLS passes through) the tests
make slow, stall or cut mid-transfer.

Addresses are 127.<the worker's world subnet>.60.x (tests/addresses.py), away from the world's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.x509.oid import ExtendedKeyUsageOID
from kubernetes import client, config

from agent.release import BuiltRelease, build, generate_keys, load_private_key
from agent.update.registry import MANIFEST_MEDIA_TYPE, Access, Client, Repository, push_release
from devstack import seed
from devstack.identity.client import password_token
from devstack.identity.process import IdentityProvider
from devstack.kube import KubeServer
from devstack.lifecycle import Lifecycle
from devstack.net import free_port
from devstack.pki import CertificateAuthority, generate_key, write_certificate, write_key
from devstack.registry import NODES, PUBLISHER, Registry
from tests import addresses

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 60.0
PIN_CONFIG_MAP = "agent-release-pin"


def address(last: int) -> str:
    return addresses.address(addresses.RELEASE_PLATFORM, last)


def die_with_parent() -> None:
    """In a child: have Linux SIGTERM it when the test process dies, however it dies."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def stop_pid(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Stop a process we started, by its pid: SIGTERM, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(grace)


# ------------------------------------------------------------------------------------- releases


@dataclass(frozen=True)
class Keys:
    """The release signing key and its public key, and a key nobody trusts."""

    private: Path
    public: Path
    stranger: Path

    @classmethod
    def create(cls, directory: Path) -> Keys:
        keys = cls(directory / "release.pem", directory / "release-public.pem", directory / "stranger.pem")
        generate_keys(keys.private, keys.public)
        generate_keys(keys.stranger, directory / "stranger-public.pem")
        return keys

    def signing(self) -> Ed25519PrivateKey:
        return load_private_key(self.private)


def broken_source(directory: Path) -> Path:
    """A copy of this checkout's agent whose serve() fails at once: a release that never answers."""
    for package in ("agent", "agentclient"):
        shutil.copytree(ROOT / package, directory / package, ignore=shutil.ignore_patterns("__pycache__"))
    with (directory / "agent" / "server.py").open("a") as server:
        server.write(
            "\n\nasync def serve(config: AgentConfig, *, stop: asyncio.Event | None = None) -> None:\n"
            '    raise StartupError("this release is broken on purpose")\n'
        )
    return directory


def build_release(
    version: str, key: Ed25519PrivateKey, out: Path, source: Path | None = None
) -> BuiltRelease:
    return build(version, key, out / version, source)


def release_files(release: BuiltRelease) -> list[str]:
    """The agent CLI's arguments that name a built release's files (``release install``, ``release push``)."""
    return ["--artifact", str(release.artifact), "--manifest", str(release.envelope)]


@dataclass(frozen=True)
class Releases:
    keys: Keys
    base: BuiltRelease  # 1.0.0, what every test starts from
    newer: BuiltRelease  # 1.1.0
    older: BuiltRelease  # 0.9.0
    broken: BuiltRelease  # 1.2.0, which exits at startup
    stranger: BuiltRelease  # 1.3.0, signed by a key the agents do not trust


def build_releases(directory: Path) -> Releases:
    """The update suites' releases, built in ``directory`` under its own signing key."""
    keys = Keys.create(directory / "keys")
    key = keys.signing()
    broken = broken_source(directory / "broken-source")
    return Releases(
        keys=keys,
        base=build_release("1.0.0", key, directory),
        newer=build_release("1.1.0", key, directory),
        older=build_release("0.9.0", key, directory),
        broken=build_release("1.2.0", key, directory, broken),
        stranger=build_release("1.3.0", Keys.create(directory / "other-keys").signing(), directory),
    )


# ------------------------------------------------------------------------------------- platform


@dataclass
class ReleasePlatform(Lifecycle):
    """The orchestrator over HTTPS serving a release folder, with the kube emulator and identity."""

    scratch: Path
    ca: CertificateAuthority
    host: str = field(default_factory=lambda: address(5))
    port: int = 0
    releases: Path = field(init=False)
    kube: KubeServer | None = None
    identity: IdentityProvider | None = None
    orchestrator: subprocess.Popen[bytes] | None = None
    # More of the orchestrator's environment (e.g. FLEXPLANE_AGENT_REGISTRY).
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.releases = self.scratch / "releases"
        self.releases.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def channel_url(self) -> str:
        return f"{self.url}/agent/releases/channel.json"

    @property
    def log(self) -> Path:
        return self.scratch / "orchestrator.log"

    def _start(self) -> None:
        self.kube = KubeServer.start(host=address(3), port=0)
        kubeconfig = self.kube.write_kubeconfig(self.scratch / "kubeconfig")
        # The platform's namespace, as the chart's install makes it.
        self.core().create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=seed.NAMESPACE)))
        self.identity = IdentityProvider.start(
            data_dir=self.scratch / "identity",
            host=address(2),
            port=0,
            users=seed.USERS,
            project_id=seed.PROJECT_ID,
        )
        key = generate_key()
        certificate = self.ca.sign(
            key.public_key(),
            common_name="flexplane-orchestrator-web",
            ip_addresses=[self.host],
            usages=[ExtendedKeyUsageOID.SERVER_AUTH],
        )
        cert_path, key_path = self.scratch / "web.crt", self.scratch / "web.key"
        write_certificate(cert_path, certificate)
        write_key(key_path, key)
        self.port = free_port(self.host)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "flexplane.settings",
            "FLEXPLANE_ALLOWED_HOSTS": self.host,
            "FLEXPLANE_KUBECONFIG": str(kubeconfig),
            "FLEXPLANE_NAMESPACE": seed.NAMESPACE,
            "FLEXPLANE_OIDC_ISSUER": self.identity.issuer,
            "FLEXPLANE_OIDC_AUDIENCE": seed.PROJECT_ID,
            "FLEXPLANE_OIDC_PROJECT_ID": seed.PROJECT_ID,
            "FLEXPLANE_AGENT_RELEASES_DIR": str(self.releases),
            **self.env,
        }
        https = ["--host", self.host, "--https-port", str(self.port), "--certfile", str(cert_path)]
        with self.log.open("wb") as log:
            self.orchestrator = subprocess.Popen(
                [sys.executable, "-m", "flexplane.serve", *https, "--keyfile", str(key_path)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.orchestrator.poll() is None:
            with contextlib.suppress(requests.RequestException):
                if self.get("/healthz").status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"the orchestrator did not start:\n{self.log.read_text()[-4000:]}")

    def stop(self) -> None:
        if self.orchestrator is not None:
            stop_pid(self.orchestrator)
            self.orchestrator = None
        if self.identity is not None:
            self.identity.stop()
            self.identity = None
        if self.kube is not None:
            self.kube.stop()
            self.kube = None

    # -------------------------------------------------------------------------------- use

    def get(self, path: str) -> requests.Response:
        return requests.get(f"{self.url}{path}", verify=str(self.ca.cert_path), timeout=10)

    def publish(self, *releases: BuiltRelease) -> None:
        """Make the channel's folder hold exactly these releases."""
        for old in self.releases.iterdir():
            old.unlink()
        for release in releases:
            shutil.copy2(release.artifact, self.releases / release.artifact.name)
            shutil.copy2(release.envelope, self.releases / release.envelope.name)

    def core(self) -> client.CoreV1Api:
        """The official client on the platform's management cluster."""
        return client.CoreV1Api(config.new_client_from_config(config_file=str(self.scratch / "kubeconfig")))

    def remove_pin(self) -> None:
        try:
            self.core().delete_namespaced_config_map(PIN_CONFIG_MAP, seed.NAMESPACE)
        except client.ApiException as exc:
            if exc.status != 404:
                raise

    def published(self, name: str) -> Path:
        return self.releases / name

    def token(self, username: str) -> str:
        assert self.identity is not None
        user = next(u for u in seed.USERS if u["username"] == username)
        return password_token(self.identity.issuer, username, user["password"])

    def graphql(self, query: str, *, user: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = requests.post(
            f"{self.url}/graphql",
            json={"query": query, "variables": variables or {}},
            headers={"Authorization": f"Bearer {self.token(user)}"},
            verify=str(self.ca.cert_path),
            timeout=30,
        )
        body: dict[str, Any] = response.json()
        return body


# ------------------------------------------------------------------------------------- registry


def registry_env(repository: str, registry: Registry) -> dict[str, str]:
    """The orchestrator's settings for releases from ``repository`` (of ``registry``, maybe proxied)."""
    return {
        "FLEXPLANE_AGENT_REGISTRY": repository,
        "FLEXPLANE_AGENT_REGISTRY_USERNAME": NODES,
        "FLEXPLANE_AGENT_REGISTRY_PASSWORD": registry.passwords[NODES],
        "FLEXPLANE_AGENT_REGISTRY_CA": str(registry.ca.cert_path),
    }


def node_access(registry: Registry, host: str | None = None) -> Access:
    """The read-only access a node gets with enrollment (for ``host``, when it pulls through a proxy)."""
    return Access(host or registry.address, NODES, registry.passwords[NODES], registry.ca.cert_pem.decode())


def publisher(registry: Registry) -> Access:
    return Access(registry.address, PUBLISHER, registry.passwords[PUBLISHER], registry.ca.cert_pem.decode())


def push(registry: Registry, release: BuiltRelease, tag: str | None = None) -> str:
    """Push a built release as the publisher, under its version (or ``tag``); the manifest's digest."""

    async def pushing() -> str:
        import aiohttp

        async with aiohttp.ClientSession() as session:
            client = Client(session, Repository.parse(registry.repository), publisher(registry))
            envelope = release.envelope.read_bytes()
            return await push_release(
                client, release.artifact, envelope, release.manifest, tag or release.manifest.version
            )

    # A thread of its own: the caller may be a coroutine test, whose loop runs in this thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, pushing()).result()


def put_manifest(registry: Registry, tag: str, body: bytes) -> str:
    """PUT raw manifest bytes under a tag, as the publisher (a tampered or foreign artifact)."""
    response = requests.put(
        f"{registry.url}/v2/{registry.repository.partition('/')[2]}/manifests/{tag}",
        data=body,
        headers={"Content-Type": MANIFEST_MEDIA_TYPE},
        auth=(PUBLISHER, registry.passwords[PUBLISHER]),
        verify=str(registry.ca.cert_path),
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return str(response.headers["Docker-Content-Digest"])


def get_manifest(registry: Registry, reference: str) -> bytes:
    response = requests.get(
        f"{registry.url}/v2/{registry.repository.partition('/')[2]}/manifests/{reference}",
        headers={"Accept": MANIFEST_MEDIA_TYPE},
        auth=(PUBLISHER, registry.passwords[PUBLISHER]),
        verify=str(registry.ca.cert_path),
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response.content


def clear(registry: Registry) -> None:
    """Remove every tag's manifest from the repository (the blobs stay: content-addressed)."""
    path = registry.repository.partition("/")[2]
    session = requests.Session()
    session.auth = (PUBLISHER, registry.passwords[PUBLISHER])
    verify = str(registry.ca.cert_path)
    listed = session.get(f"{registry.url}/v2/{path}/tags/list", verify=verify, timeout=10)
    if listed.status_code == 404:
        return
    for tag in listed.json().get("tags") or []:
        head = session.head(
            f"{registry.url}/v2/{path}/manifests/{tag}",
            headers={"Accept": MANIFEST_MEDIA_TYPE},
            verify=verify,
            timeout=10,
        )
        if head.status_code == 200:
            digest = head.headers["Docker-Content-Digest"]
            deleted = session.delete(
                f"{registry.url}/v2/{path}/manifests/{digest}", verify=verify, timeout=10
            )
            assert deleted.status_code in (202, 404), deleted.text


class Proxy:
    """A TCP relay to the registry, in a thread of its own, whose answers the test shapes.

    Per connection, the bytes from the registry may be delayed (``delay`` seconds before each chunk),
    stalled (nothing more after ``stall_after`` bytes, until the client gives up), or cut (the
    connection reset after ``cut_after`` bytes). TLS passes through untouched: the registry's
    certificate names the host, which the proxy shares.
    """

    def __init__(self, host: str, target: tuple[str, int]) -> None:
        self.host = host
        self.target = target
        self.port = 0
        self.delay = 0.0
        self.stall_after: int | None = None
        self.cut_after: int | None = None
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="registry-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Proxy:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._relay, self.host, 0), self._loop
        )
        self._server = started.result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def normal(self) -> None:
        self.delay, self.stall_after, self.cut_after = 0.0, None, None

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        relays = [task for task in asyncio.all_tasks() if task is not current]
        for task in relays:
            task.cancel()
        await asyncio.gather(*relays, return_exceptions=True)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.close()
            return
        upward = asyncio.ensure_future(self._pump(client_reader, upstream_writer, shaped=False))
        downward = asyncio.ensure_future(self._pump(upstream_reader, client_writer, shaped=True))
        await asyncio.wait([upward, downward], return_when=asyncio.FIRST_COMPLETED)
        for task in (upward, downward):
            task.cancel()
        for writer in (client_writer, upstream_writer):
            with contextlib.suppress(Exception):
                writer.close()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, shaped: bool
    ) -> None:
        sent = 0
        while chunk := await reader.read(16 * 1024):
            if shaped:
                if self.delay:
                    await asyncio.sleep(self.delay)
                if self.cut_after is not None and sent + len(chunk) > self.cut_after:
                    writer.write(chunk[: max(0, self.cut_after - sent)])
                    await writer.drain()
                    writer.transport.abort()
                    return
                if self.stall_after is not None and sent + len(chunk) > self.stall_after:
                    writer.write(chunk[: max(0, self.stall_after - sent)])
                    await writer.drain()
                    await asyncio.Event().wait()  # until the client gives up (or the test ends)
            writer.write(chunk)
            await writer.drain()
            sent += len(chunk)
