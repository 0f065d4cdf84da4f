"""An OCI registry on loopback: Debian's ``docker-registry`` (the CNCF distribution registry, 2.8).

The devstack and the release tests start their own ``docker-registry serve <config>``, never the
package's systemd service: TLS with a server certificate of the given CA (devstack/pki.py), and
basic auth from an htpasswd file (bcrypt) holding two accounts, the publisher's and the nodes'.
distribution's htpasswd auth knows no roles: a real site gives nodes a pull-only account (a
robot account of Harbor, a read-only token of its registry); here both accounts may push.

The configuration is JSON, which is YAML too. Storage is a folder of the data directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt

from agent.release import BuiltRelease
from agent.update.registry import Access, Repository, push_files
from devstack.net import free_port
from devstack.pki import CertificateAuthority

BINARY = "docker-registry"
# The repository agent releases are pushed to (the same registry may hold the platform's images).
REPOSITORY = "flexplane/agent"
PUBLISHER = "publisher"
NODES = "nodes"
START_TIMEOUT = 30.0


def htpasswd_line(username: str, password: str) -> str:
    """An htpasswd entry, bcrypt as distribution requires (the fewest rounds: loopback test accounts)."""
    return f"{username}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()}"


def _die_with_parent() -> None:
    """In the registry's process: SIGTERM when whoever started it dies (PR_SET_PDEATHSIG: the thread
    that started it, so start it from one that lives as long as it should)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


@dataclass
class Registry:
    """A running registry: its address, its accounts, its CA and log."""

    data_dir: Path
    ca: CertificateAuthority
    host: str = "127.0.0.1"
    port: int = 0
    passwords: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """host:port, as registry references name it."""
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"https://{self.address}"

    @property
    def repository(self) -> str:
        """Where agent releases go: ``host:port/flexplane/agent``."""
        return f"{self.address}/{REPOSITORY}"

    @property
    def log(self) -> Path:
        return self.data_dir / "registry.log"

    @classmethod
    def start(
        cls, data_dir: Path, ca: CertificateAuthority, *, host: str = "127.0.0.1", port: int = 0
    ) -> Registry:
        """Write the configuration, the certificate and the accounts, start, and wait until it answers."""
        if shutil.which(BINARY) is None:
            raise RuntimeError(f"{BINARY} is not installed: apt-get install docker-registry (make install)")
        data_dir.mkdir(parents=True, exist_ok=True)
        registry = cls(data_dir, ca, host, port or free_port(host))
        # Kept with the storage: nodes enrolled earlier (make dev) keep pulling with theirs.
        accounts = data_dir / "accounts.json"
        if accounts.is_file():
            registry.passwords = json.loads(accounts.read_text())
        else:
            registry.passwords = {PUBLISHER: secrets.token_urlsafe(18), NODES: secrets.token_urlsafe(18)}
            accounts.write_text(json.dumps(registry.passwords))
            accounts.chmod(0o600)
        registry._launch()
        return registry

    def _launch(self) -> None:
        cert, key = self.ca.issue_server([self.host], self.data_dir, "registry")
        htpasswd = self.data_dir / "htpasswd"
        htpasswd.write_text("".join(f"{htpasswd_line(u, p)}\n" for u, p in self.passwords.items()))
        htpasswd.chmod(0o600)
        config = {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": True}},
            "storage": {
                "filesystem": {"rootdirectory": str(self.data_dir / "storage")},
                "delete": {"enabled": True},
            },
            "http": {
                "addr": self.address,
                "tls": {"certificate": str(cert), "key": str(key)},
                "headers": {"X-Content-Type-Options": ["nosniff"]},
            },
            "auth": {"htpasswd": {"realm": "flexplane-releases", "path": str(htpasswd)}},
        }
        config_path = self.data_dir / "config.yml"
        config_path.write_text(json.dumps(config, indent=2))
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [BINARY, "serve", str(config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if self.answers():
                return
            time.sleep(0.1)
        output = self.log.read_text(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"the registry on {self.address} did not start:\n{output}")

    def orchestrator_env(self) -> dict[str, str]:
        """The orchestrator's settings for agent releases from this registry (nodes' read-only account)."""
        return {
            "FLEXPLANE_AGENT_REGISTRY": self.repository,
            "FLEXPLANE_AGENT_REGISTRY_USERNAME": NODES,
            "FLEXPLANE_AGENT_REGISTRY_PASSWORD": self.passwords[NODES],
            "FLEXPLANE_AGENT_REGISTRY_CA": str(self.ca.cert_path),
        }

    def publish(self, release: BuiltRelease) -> str:
        """Push a built release as the publisher would (``flexplane-agent release push``); its digest."""
        access = Access(self.address, PUBLISHER, self.passwords[PUBLISHER], self.ca.cert_pem.decode())
        # A thread of its own: the caller may run an event loop.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pushed = push_files(
                Repository.parse(self.repository),
                access,
                release.artifact,
                release.envelope,
                release.manifest,
            )
            return pool.submit(asyncio.run, pushed).result()

    def answers(self) -> bool:
        """Whether the registry answers its API's base (as 401 without credentials: auth is on)."""
        context = ssl.create_default_context(cafile=str(self.ca.cert_path))
        try:
            with urllib.request.urlopen(f"{self.url}/v2/", timeout=2, context=context):  # noqa: S310
                return True
        except urllib.error.HTTPError as exc:
            return exc.code == 401
        except (OSError, ValueError):
            return False

    def restart(self) -> None:
        """Start it again on the same address, storage and accounts (after :meth:`stop`)."""
        if self.process is None:
            self._launch()

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(10)
            self.process = None

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
