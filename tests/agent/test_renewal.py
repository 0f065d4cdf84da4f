"""Certificate renewal end to end: an agent enrolled through an orchestrator replica whose certificates
live 20 seconds renews at two thirds of that, and serves the new certificate without restarting;
when the orchestrator is gone, the failure is retried, reported by GetInfo, and the old
certificate keeps serving. Then a renewal a crash interrupted, as it is left on disk: the agent
starts, finishing the swap or discarding it.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agent.certs import finish_swap, pending
from agent.config import ConfigError, validate
from agent.renewal import backoff, renew_time
from devstack.net import free_port
from devstack.processes import Process
from devstack.world import World
from tests.agent.conftest import AGENT_HOST, IDENTITY, AgentProcess, Pki, stand_in_settings
from tests.apikit import GraphQL
from tests.enrollkit import Node, added_node, info, peer_certificate, served_certificate

ZONE = "zone-b"
LIFETIME = 20


@dataclass
class Renewing:
    node: Node
    replica: Process


@pytest.fixture(scope="module")
def renewing(world: World, api: GraphQL) -> Iterator[Renewing]:
    """Node pve4 of zone-b, enrolled through a replica that issues 20-second certificates."""
    host = world.cfg.orchestrator_host
    port, https_port = free_port(host), free_port(host)
    replica = world.spawn_orchestrator(
        "orchestrator-short-certificates",
        port,
        https_port,
        {
            "FLEXPLANE_AGENT_CERT_LIFETIME": str(LIFETIME),
            "FLEXPLANE_ENROLLMENT_URL": f"https://{host}:{https_port}",
        },
    )
    try:
        with added_node(world, ZONE, "pve4", f"127.{world.cfg.subnet}.2.9") as node:
            done = node.bootstrap(api, orchestrator_url=f"https://{host}:{https_port}")
            assert done.returncode == 0, done.stdout + done.stderr
            node.start_agent()
            yield Renewing(node, replica)
    finally:
        replica.stop()


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def test_an_agent_renews_its_certificate_and_serves_the_new_one_without_restarting(
    renewing: Renewing, world: World
) -> None:
    node = renewing.node
    assert node.agent is not None
    first = peer_certificate(world, node.endpoint)
    lifetime = first.not_valid_after_utc - first.not_valid_before_utc
    assert lifetime.total_seconds() <= LIFETIME * 1.1
    # The release registry's read-only access renews with the certificate (say its password changed).
    access = node.root / "etc/flexplane/registry.json"
    enrolled = json.loads(access.read_text())
    access.write_text(json.dumps({**enrolled, "password": "a-password-since-changed"}))

    renewed = until(
        lambda: (i := info(world, ZONE, "pve4", node.endpoint)).renewal.last_success and i,
        LIFETIME,
        "a renewal",
    )
    second = peer_certificate(world, node.endpoint)
    assert second.serial_number != first.serial_number
    assert second.public_key() != first.public_key()  # a new key, too
    assert world.ca is not None
    second.verify_directly_issued_by(world.ca.certificate)
    assert renewed.certificate_not_after == int(second.not_valid_after_utc.timestamp())
    assert renewed.renewal.failures == 0
    assert renewed.renewal.last_error == ""
    on_disk = x509.load_pem_x509_certificate((node.root / "etc/flexplane/agent.crt").read_bytes())
    assert on_disk == second
    assert sorted(p.name for p in (node.root / "etc/flexplane").glob("*.new")) == []
    assert node.agent.popen.poll() is None  # the same process all along
    assert json.loads(access.read_text()) == enrolled
    assert access.stat().st_mode & 0o777 == 0o600


def test_a_renewal_that_cannot_reach_the_orchestrator_is_retried_and_reported_while_the_old_one_serves(
    renewing: Renewing, world: World
) -> None:
    node = renewing.node
    renewing.replica.stop()
    served = peer_certificate(world, node.endpoint)

    failing = until(
        lambda: (i := info(world, ZONE, "pve4", node.endpoint)).renewal.failures >= 2 and i,
        LIFETIME,
        "two failed renewals",
    )
    assert "did not answer" in failing.renewal.last_error
    assert failing.renewal.next_attempt >= int(time.time()) - 1
    assert failing.certificate_not_after == int(served.not_valid_after_utc.timestamp())
    assert peer_certificate(world, node.endpoint) == served


# ---------------------------------------------------------------------------------- the schedule


def _lasting(seconds: float) -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pve1.zone-a.agents.flexplane")])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(seconds=seconds))
        .sign(key, hashes.SHA256())
    )


def test_renewal_is_due_at_two_thirds_of_a_certificates_life() -> None:
    month = _lasting(30 * 86400)
    assert renew_time(month) == month.not_valid_before_utc.timestamp() + 20 * 86400


def test_retries_back_off_from_a_hundredth_of_the_life_to_a_tenth_and_at_most_an_hour() -> None:
    month = _lasting(30 * 86400)
    assert [backoff(month, n) for n in (1, 2, 3, 6, 7, 20)] == [60, 120, 240, 1920, 3600, 3600]
    short = _lasting(30)
    assert [backoff(short, n) for n in (1, 2, 3, 9)] == [1, 2, 3, 3]


def test_renewal_needs_an_https_orchestrator_url(tmp_path: Path) -> None:
    base = stand_in_settings(tmp_path)
    with pytest.raises(ConfigError, match="orchestrator_url: must be an https:// URL"):
        validate({**base, "orchestrator_url": "http://flexplane.example.com"}, base=tmp_path)
    config = validate({**base, "orchestrator_url": "https://flexplane.example.com/"}, base=tmp_path)
    assert config.orchestrator_url == "https://flexplane.example.com"
    assert validate(base, base=tmp_path).orchestrator_url is None  # no renewal


# ------------------------------------------------------------------- a renewal a crash interrupted


@dataclass(frozen=True)
class Pair:
    cert: bytes
    key: bytes


@dataclass(frozen=True)
class Files:
    cert: Path
    key: Path

    def holding(self, cert: bytes, key: bytes) -> Files:
        self.cert.write_bytes(cert)
        self.key.write_bytes(key)
        self.key.chmod(0o600)
        return self


@pytest.fixture
def pairs(pki: Pki, tmp_path: Path) -> tuple[Pair, Pair]:
    """The pair a node served, and the pair its renewal was putting in place."""
    issued = [
        pki.ca.issue_agent(IDENTITY, [AGENT_HOST], tmp_path / "issued", name) for name in ("old", "new")
    ]
    old, new = (Pair(cert.read_bytes(), key.read_bytes()) for cert, key in issued)
    return old, new


@pytest.fixture
def files(tmp_path: Path) -> Files:
    """Where the node keeps its pair (tls_cert, tls_key)."""
    (tmp_path / "etc").mkdir()
    return Files(tmp_path / "etc" / "agent.crt", tmp_path / "etc" / "agent.key")


def serving(agent: AgentProcess, pki: Pki) -> x509.Certificate:
    return served_certificate(agent.address, *pki.orchestrator)


def crashed_between_the_renames(files: Files, old: Pair, new: Pair) -> Path:
    """The renewal renamed the new key into place; the node lost power before the certificate's turn."""
    files.holding(old.cert, new.key)
    pending(files.cert).write_bytes(new.cert)
    return pending(files.cert)


def crashed_before_the_pending_certificate(files: Files, old: Pair, new: Pair) -> Path:
    """The renewal wrote the pending key; the node lost power before the pending certificate."""
    files.holding(old.cert, old.key)
    pending(files.key).write_bytes(new.key)
    return pending(files.key)


@pytest.mark.parametrize(
    ("crash", "served", "said"),
    [
        pytest.param(
            crashed_between_the_renames,
            "new",
            "finished a certificate renewal a crash interrupted",
            id="it finishes a swap interrupted between the key and the certificate",
        ),
        pytest.param(
            crashed_before_the_pending_certificate,
            "old",
            "discarded",
            id="it discards a pending pair that never got whole",
        ),
    ],
)
def test_an_agent_settles_at_start_a_renewal_a_crash_interrupted(
    pairs: tuple[Pair, Pair],
    files: Files,
    pki: Pki,
    launch: Callable[..., AgentProcess],
    crash: Callable[[Files, Pair, Pair], Path],
    served: str,
    said: str,
) -> None:
    old, new = pairs
    left = crash(files, old, new)

    agent = launch(tls_cert=str(files.cert), tls_key=str(files.key))

    pair = {"old": old, "new": new}[served]
    assert serving(agent, pki) == x509.load_pem_x509_certificate(pair.cert)
    assert (files.cert.read_bytes(), files.key.read_bytes()) == (pair.cert, pair.key)
    assert not left.exists()
    assert said in agent.output()


def test_a_pending_pair_complete_before_any_rename_is_put_in_place(
    pairs: tuple[Pair, Pair], files: Files
) -> None:
    old, new = pairs
    files.holding(old.cert, old.key)
    pending(files.key).write_bytes(new.key)
    pending(files.cert).write_bytes(new.cert)

    assert "finished" in (finish_swap(files.cert, files.key) or "")
    assert (files.cert.read_bytes(), files.key.read_bytes()) == (new.cert, new.key)
    assert finish_swap(files.cert, files.key) is None  # nothing left to do


def test_a_pending_certificate_of_another_key_is_discarded_and_the_pair_in_place_stands(
    pairs: tuple[Pair, Pair], files: Files
) -> None:
    old, new = pairs
    files.holding(old.cert, old.key)
    pending(files.cert).write_bytes(new.cert)  # left over, its key lost

    assert "is not the certificate of" in (finish_swap(files.cert, files.key) or "")
    assert (files.cert.read_bytes(), files.key.read_bytes()) == (old.cert, old.key)
    assert not pending(files.cert).exists()
