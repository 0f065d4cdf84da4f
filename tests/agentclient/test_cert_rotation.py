"""A client certificate renewed in its mounted Secret is taken without a restart (issue 32, item 5).

The files are laid out as the kubelet lays out a Secret volume: each key a symlink through ``..data`` to
a timestamped directory, renewed by swapping ``..data`` in one rename. The rotation under load runs a
real agent process (the agent suite's kit) and calls it from four threads while the files are swapped.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID
from prometheus_client import REGISTRY

from agentclient import AgentError, AgentPool, AgentTLSError, ClientTLS, ClientTLSFiles
from devstack.pki import CertificateAuthority, generate_key, write_certificate, write_key
from tests.agent.conftest import NOWHERE_PROXMOX, AgentProcess, Pki, pki, write_config  # noqa: F401  # pki: fixture

CLIENT = "flexplane-orchestrator"


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SecretVolume:
    """A directory as the kubelet keeps a mounted Secret: ca.crt, tls.crt, tls.key through ``..data``."""

    def __init__(self, directory: Path, ca: CertificateAuthority) -> None:
        self.directory = directory
        self.ca = ca
        self.generation = 0
        directory.mkdir(parents=True, exist_ok=True)

    def issue(self, lifetime: datetime.timedelta = datetime.timedelta(days=30)) -> tuple[Path, Path]:
        """A new client certificate (and key) of the CA, written outside the volume."""
        self.generation += 1
        key = generate_key()
        certificate = self.ca.sign(
            key.public_key(), common_name=CLIENT, usages=[ExtendedKeyUsageOID.CLIENT_AUTH], validity=lifetime
        )
        folder = self.directory.parent / f"issued-{self.generation}"
        folder.mkdir()
        write_certificate(folder / "tls.crt", certificate)
        write_key(folder / "tls.key", key)
        return folder / "tls.crt", folder / "tls.key"

    def publish(self, cert: Path, key: Path) -> None:
        """Swap the volume to this certificate as the kubelet does: a new directory, ``..data`` renamed."""
        stamp = f"..{self.generation}_{time.monotonic_ns()}"
        data = self.directory / stamp
        data.mkdir()
        (data / "ca.crt").write_bytes(self.ca.cert_pem)
        (data / "tls.crt").write_bytes(cert.read_bytes())
        (data / "tls.key").write_bytes(key.read_bytes())
        link = self.directory / "..data_tmp"
        link.symlink_to(stamp)
        link.replace(self.directory / "..data")
        for name in ("ca.crt", "tls.crt", "tls.key"):
            if not (self.directory / name).is_symlink():
                (self.directory / name).symlink_to(f"..data/{name}")

    def files(self, **kwargs: object) -> ClientTLSFiles:
        return ClientTLSFiles(
            self.directory / "ca.crt",
            self.directory / "tls.crt",
            self.directory / "tls.key",
            **kwargs,  # type: ignore[arg-type]
        )


@pytest.fixture
def volume(tmp_path: Path) -> SecretVolume:
    ca = CertificateAuthority.create(tmp_path / "ca")
    return SecretVolume(tmp_path / "agent-tls", ca)


def expiry(cert: Path) -> float:
    return x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_after_utc.timestamp()


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_renewed_secret_is_read_once_the_check_interval_has_passed(volume: SecretVolume) -> None:
    first = volume.issue()
    volume.publish(*first)
    clock = Clock()
    files = volume.files(check_interval=5.0, clock=clock)
    before = files.current()
    renewals = metric("flexplane_certificate_reloads_total", outcome="ok")

    renewed = volume.issue(datetime.timedelta(days=60))
    volume.publish(*renewed)
    clock.now += 4.9
    unchanged = files.current()
    clock.now += 0.2
    after = files.current()

    assert unchanged is before
    assert (after.cert, after.key) == (renewed[0].read_bytes(), renewed[1].read_bytes())
    assert files.current() is after  # read once, not on every look
    assert metric("flexplane_certificate_reloads_total", outcome="ok") == renewals + 1
    assert metric("flexplane_certificate_expiry_timestamp_seconds", certificate="client") == pytest.approx(
        expiry(renewed[0])
    )
    ca_expiry = volume.ca.certificate.not_valid_after_utc.timestamp()
    assert metric("flexplane_certificate_expiry_timestamp_seconds", certificate="ca") == pytest.approx(
        ca_expiry
    )


def test_a_certificate_seen_without_its_key_is_not_taken_until_the_key_follows(volume: SecretVolume) -> None:
    """A renewer writing the files one by one (not the kubelet) is seen half-way: the previous pair stays."""
    cert, key = volume.issue()
    directory = volume.directory
    for name, source in (("ca.crt", volume.ca.cert_path), ("tls.crt", cert), ("tls.key", key)):
        (directory / name).write_bytes(Path(source).read_bytes())
    clock = Clock()
    files = volume.files(check_interval=1.0, clock=clock)
    before = files.current()
    failures = metric("flexplane_certificate_reloads_total", outcome="failed")

    new_cert, new_key = volume.issue()
    (directory / "tls.crt").write_bytes(new_cert.read_bytes())
    clock.now += 1.0
    half_way = files.current()
    (directory / "tls.key").write_bytes(new_key.read_bytes())
    clock.now += 1.0
    after = files.current()

    assert half_way is before
    assert metric("flexplane_certificate_reloads_total", outcome="failed") == failures + 1
    assert (after.cert, after.key) == (new_cert.read_bytes(), new_key.read_bytes())


@pytest.fixture
def agent(pki: Pki, tmp_path: Path) -> Iterator[AgentProcess]:  # noqa: F811
    """A real agent of the agent suite's CA; it answers health checks without a Proxmox."""
    config = write_config(tmp_path / "agent", pki, proxmox_url=NOWHERE_PROXMOX)
    process = AgentProcess(config, config.parent)
    yield process
    process.stop()


class Caller:
    """Threads calling the agent's health service through one pool until stopped; each outcome kept."""

    def __init__(self, pool: AgentPool, agent: AgentProcess, threads: int = 4) -> None:
        self.pool, self.target = pool, agent.target()
        self.stop = threading.Event()
        self.outcomes: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def __enter__(self) -> Caller:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(10)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                outcome = "ok" if self.pool.check_health(self.target, timeout=5) else "not serving"
            except AgentError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self.outcomes.append((time.monotonic(), outcome))

    def since(self, moment: float) -> list[str]:
        with self._lock:
            return [outcome for at, outcome in self.outcomes if at > moment]


def test_calls_flowing_through_a_rotation_all_succeed_and_new_connections_present_the_new_certificate(
    pki: Pki,  # noqa: F811
    agent: AgentProcess,
    tmp_path: Path,
) -> None:
    """The old certificate expires while calls flow on the connection it opened (TLS checks a certificate
    at the handshake only), then the Secret is renewed: every new connection's handshake would fail with
    the expired certificate, so calls that succeed after the rotation presented the new one."""
    volume = SecretVolume(tmp_path / "agent-tls", pki.ca)
    lifetime = 2.0
    old = volume.issue(datetime.timedelta(seconds=lifetime))
    expires = time.monotonic() + lifetime
    volume.publish(*old)
    files = volume.files(check_interval=0.1)

    with AgentPool(files, timeout=5) as pool, Caller(pool, agent) as caller:
        time.sleep(max(0.0, expires - time.monotonic()) + 0.5)
        expired = time.monotonic()
        old_channel = pool.channel(agent.target())
        volume.publish(*volume.issue())
        rotated = time.monotonic()
        time.sleep(1.0)
        new_channel = pool.channel(agent.target())

    failed = [outcome for outcome in caller.since(0) if outcome != "ok"]
    assert failed == []
    assert caller.since(expired), "no call ran on the old connection after its certificate expired"
    assert len(caller.since(rotated + 0.2)) > 10
    assert new_channel is not old_channel
    assert pool.tls.cert != ClientTLS.from_files(pki.ca.cert_path, *old).cert
    with AgentPool(ClientTLS.from_files(pki.ca.cert_path, *old)) as stale, pytest.raises(AgentTLSError):
        stale.check_health(agent.target(), timeout=5)


def test_a_pool_given_fixed_material_keeps_it(volume: SecretVolume) -> None:
    cert, key = volume.issue()
    tls = ClientTLS.from_files(volume.ca.cert_path, cert, key)

    with AgentPool(tls) as pool:
        assert pool.tls is tls
        assert serialization.load_pem_private_key(pool.tls.key, password=None) is not None
