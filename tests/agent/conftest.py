"""Fixtures for the agent's integration tests: a dev PKI, real agent processes, a fake Proxmox.

The agent runs as a subprocess (``python -m agent serve --config ...``) on 127.<subnet>.200.x
with a port the system picks; it talks HTTPS to fakepve served in this process by
fakepve's pytest plugin. The agent keeps no state, so one process serves every test
that needs nothing special; ``pve`` hands each test the session's fake Proxmox and
undoes the faults the test injected.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentclient import AgentPool, AgentTarget, ClientTLS, host_identity
from devstack.pki import CertificateAuthority
from devstack.sandbox import as_packaged
from tests import addresses

ROOT = Path(__file__).resolve().parents[2]
AGENT_HOST = addresses.address(addresses.AGENT_SUITE, 1)
# Loopback addresses nothing in the tests listens on.
NOWHERE_AGENT = f"{addresses.address(addresses.AGENT_SUITE, 250)}:7443"
NOWHERE_PROXMOX = f"https://{addresses.address(addresses.AGENT_SUITE, 251)}:8006"
ZONE = "zone1"
NODE = "pve1"
IDENTITY = host_identity(ZONE, NODE)
TOKEN_ID = "root@pam!flexplane"
# Distinctive, so that a leak anywhere is found by a plain substring search.
TOKEN_SECRET = "tok-secret-5e0c2f9a-7d41-4b8e-a1f3-never-shown"
START_TIMEOUT = 20.0
LISTENING = "flexplane-agent listening on "


@dataclass(frozen=True)
class Pki:
    """Every certificate the tests use, as paths."""

    directory: Path
    ca: CertificateAuthority
    agent: tuple[Path, Path]
    other_host_agent: tuple[Path, Path]
    orchestrator: tuple[Path, Path]
    stranger: tuple[Path, Path]
    other_ca: CertificateAuthority
    other_ca_orchestrator: tuple[Path, Path]

    def client_tls(self, client: tuple[Path, Path] | None = None) -> ClientTLS:
        cert, key = client or self.orchestrator
        return ClientTLS.from_files(self.ca.cert_path, cert, key)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority.create(directory / "ca")
    other_ca = CertificateAuthority.create(directory / "other-ca", common_name="some other CA")
    return Pki(
        directory=directory,
        ca=ca,
        agent=ca.issue_agent(IDENTITY, [AGENT_HOST], directory, "agent-pve1"),
        other_host_agent=ca.issue_agent(host_identity(ZONE, "pve2"), [AGENT_HOST], directory, "agent-pve2"),
        orchestrator=ca.issue_client("flexplane-orchestrator", directory, "orchestrator"),
        stranger=ca.issue_client("flexplane-portal", directory, "stranger"),
        other_ca=other_ca,
        other_ca_orchestrator=other_ca.issue_client("flexplane-orchestrator", directory / "other", "orch"),
    )


def agent_env() -> dict[str, str]:
    """This process's environment without any FLEXPLANE_AGENT_ override."""
    return {k: v for k, v in os.environ.items() if not k.startswith("FLEXPLANE_AGENT_")}


def stand_in_settings(directory: Path, zone: str = "zone-a") -> dict[str, str]:
    """The settings an agent's configuration must hold, its TLS files stand-ins written in ``directory``:
    for checking how one more setting validates."""
    for name in ("cert", "key", "ca"):
        (directory / name).write_text("x")
    return {
        "listen": "127.0.0.1:7443",
        "zone": zone,
        "node": "pve1",
        "tls_cert": str(directory / "cert"),
        "tls_key": str(directory / "key"),
        "ca": str(directory / "ca"),
        "proxmox_token_secret": "s",
    }


def write_config(directory: Path, pki: Pki, **overrides: Any) -> Path:
    """An agent configuration file; overrides replace keys (None removes one)."""
    cert, key = pki.agent
    values: dict[str, Any] = {
        "listen": f"{AGENT_HOST}:0",
        "zone": ZONE,
        "node": NODE,
        "tls_cert": str(cert),
        "tls_key": str(key),
        "ca": str(pki.ca.cert_path),
        "proxmox_token_id": TOKEN_ID,
        "proxmox_token_secret": TOKEN_SECRET,
        "proxmox_timeout": 5,
        "log_level": "debug",
    }
    values.update(overrides)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "agent.toml"
    # JSON strings, numbers and lists of strings are valid TOML values.
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items() if v is not None))
    return path


class AgentProcess:
    """An agent subprocess; its stdout and stderr go to files kept for the assertions."""

    def __init__(self, config: Path, workdir: Path, command: tuple[str, ...] = ("serve",)) -> None:
        self.stdout_path = workdir / "stdout.log"
        self.stderr_path = workdir / "stderr.log"
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                as_packaged([sys.executable, "-m", "agent", *command, "--config", str(config)]),
                cwd=ROOT,
                env=agent_env(),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )
        self.address = self._wait_until_listening()

    def _wait_until_listening(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for line in self.stdout_path.read_text().splitlines():
                if line.startswith(LISTENING):
                    return line[len(LISTENING) :].strip()
            if self.process.poll() is not None:
                pytest.fail(f"the agent exited with {self.process.returncode}:\n{self.output()}")
            time.sleep(0.02)
        self.stop()
        pytest.fail(f"the agent did not listen within {START_TIMEOUT} s:\n{self.output()}")

    def output(self) -> str:
        return self.stdout_path.read_text() + self.stderr_path.read_text()

    def target(self, identity: str = IDENTITY) -> AgentTarget:
        return AgentTarget(identity=identity, address=self.address)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@pytest.fixture(scope="session")
def proxmox(fakepve_session: Any) -> Any:
    """The session's fake Proxmox, knowing the agent's API token."""
    fakepve_session.apitokens[TOKEN_ID] = TOKEN_SECRET
    return fakepve_session


@pytest.fixture
def pve(proxmox: Any) -> Iterator[Any]:
    """The fake Proxmox for one test: faults and timing it sets are undone afterwards."""
    saved = (dict(proxmox.failures), json.loads(json.dumps(proxmox.network)), proxmox.time_scale)
    yield proxmox
    proxmox.failures.clear()
    proxmox.failures.update(saved[0])
    proxmox.network.clear()
    proxmox.network.update(saved[1])
    proxmox.time_scale = saved[2]
    proxmox.apitokens[TOKEN_ID] = TOKEN_SECRET


@pytest.fixture(scope="session")
def agent_config(
    pki: Pki, proxmox: Any, fakepve_cafile: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Path]:
    """Write an agent configuration for the fake Proxmox; keyword arguments override keys."""

    def make(**overrides: Any) -> Path:
        values = {"proxmox_url": proxmox.url, "proxmox_ca": fakepve_cafile, **overrides}
        return write_config(tmp_path_factory.mktemp("agent"), pki, **values)

    return make


@pytest.fixture(scope="session")
def launch(agent_config: Callable[..., Path]) -> Iterator[Callable[..., AgentProcess]]:
    """Start an agent process (configuration keys as keyword arguments); all stop at the end."""
    started: list[AgentProcess] = []

    def start(command: tuple[str, ...] = ("serve",), **overrides: Any) -> AgentProcess:
        config = agent_config(**overrides)
        process = AgentProcess(config, config.parent, command)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def run_agent() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m agent ARGS`` to its end (for commands that must exit); env adds variables."""

    def run(
        *args: str, env: dict[str, str] | None = None, timeout: float = START_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent", *args],
            cwd=ROOT,
            env={**agent_env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


@pytest.fixture(scope="session")
def agent(launch: Callable[..., AgentProcess]) -> Iterator[AgentProcess]:
    """One agent for every test that needs nothing special, serving the fake Proxmox (it keeps no state)."""
    process = launch()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def agent_without_proxmox(launch: Callable[..., AgentProcess]) -> Iterator[AgentProcess]:
    """An agent whose Proxmox URL points where nothing listens."""
    process = launch(proxmox_url=NOWHERE_PROXMOX)
    yield process
    process.stop()


@pytest.fixture
def nowhere() -> AgentTarget:
    """An agent target where no agent runs."""
    return AgentTarget(identity=IDENTITY, address=NOWHERE_AGENT)


@pytest.fixture
def target(agent: AgentProcess) -> AgentTarget:
    return agent.target()


@pytest.fixture
def pool(pki: Pki) -> Iterator[AgentPool]:
    """A pool with the orchestrator's client certificate."""
    with AgentPool(pki.client_tls(), timeout=5.0) as pool:
        yield pool
