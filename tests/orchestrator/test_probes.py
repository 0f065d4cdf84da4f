"""The probes of the processes that serve nothing else (orchestrator.probes): what /healthz and /readyz
answer for each state of a check, and the gateway reconciler's, served by ``reconcile_gateways --every``
against the world (the providers': tests/providers/e2e/test_cluster_lifecycle.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests

from devstack.net import free_port
from devstack.world import World
from orchestrator.management.commands.reconcile_gateways import Passes
from orchestrator.probes import ProbeAddressError, Probes, listen_address
from tests.addresses import PROBES, address
from tests.apikit import eventually

HOST = address(PROBES, 1)


@pytest.fixture
def served() -> Iterator[tuple[Probes, dict[str, str | None]]]:
    """Probes on loopback whose checks answer what the test puts in ``said``."""
    said: dict[str, str | None] = {"live": None, "ready": "the first pass has not ended"}
    probes = Probes(f"{HOST}:0", live=lambda: said["live"], ready=lambda: said["ready"]).start()
    try:
        yield probes, said
    finally:
        probes.stop()


def get(probes: Probes, path: str) -> requests.Response:
    return requests.get(f"http://{HOST}:{probes.port}{path}", timeout=5)


def test_each_probe_answers_200_while_its_check_is_content_and_503_with_what_is_wrong(
    served: tuple[Probes, dict[str, str | None]],
) -> None:
    probes, said = served
    assert get(probes, "/healthz").json() == {"status": "ok"}
    waiting = get(probes, "/readyz")
    assert waiting.status_code == 503
    assert waiting.json() == {"status": "failing", "detail": "the first pass has not ended"}
    said["ready"] = None
    assert get(probes, "/readyz?verbose=1").status_code == 200
    said["live"] = "the operators have stopped"
    assert get(probes, "/healthz").json()["detail"] == "the operators have stopped"
    assert get(probes, "/metrics").status_code == 404


def test_a_check_that_raises_is_a_failing_probe_not_a_dead_server(
    served: tuple[Probes, dict[str, str | None]],
) -> None:
    probes, _ = served

    def broken() -> str | None:
        raise RuntimeError("no answer from the cluster")

    probes.checks["/healthz"] = broken
    answer = get(probes, "/healthz")
    assert answer.status_code == 503
    assert answer.json()["detail"] == "the check failed: no answer from the cluster"
    assert get(probes, "/readyz").status_code == 503  # the server still answers


@pytest.mark.parametrize("value", ["8081", "host:", "host:port", "host:70000", ""])
def test_an_address_that_is_not_host_and_port_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ProbeAddressError, match="is not HOST:PORT"):
        listen_address(value)


def test_an_address_without_a_host_listens_everywhere_as_in_a_pod() -> None:
    assert listen_address(":8081") == ("0.0.0.0", 8081)  # noqa: S104
    assert listen_address("[::]:8081") == ("::", 8081)


def test_the_reconcilers_liveness_fails_once_no_pass_ended_for_its_stale_time() -> None:
    passes = Passes(stale_after=60)
    assert passes.live() is None
    assert passes.ready() == "the first pass has not ended"
    passes.started -= 61
    assert passes.live() == "no pass ended for 61 s: the first pass has run longer than 60 s"
    passes.ended()
    assert passes.live() is None
    assert passes.ready() is None
    assert passes.last_end is not None
    passes.last_end -= 90
    assert passes.live() == "no pass ended for 90 s: a pass has run longer than 60 s"


def test_the_gateway_reconciler_serves_its_probes_once_its_first_pass_ended(world: World) -> None:
    host = world.cfg.orchestrator_host
    listen = f"{host}:{free_port(host)}"
    process = subprocess.Popen(
        [sys.executable, "manage.py", "reconcile_gateways", "--every", "0.5", "--probes-listen", listen],
        env=world.orchestrator_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def ready() -> requests.Response | None:
            try:
                answer = requests.get(f"http://{listen}/readyz", timeout=5)
            except requests.ConnectionError:
                return None
            return answer if answer.status_code == 200 else None

        eventually(ready, 60, "the reconciler's first pass")
        assert requests.get(f"http://{listen}/healthz", timeout=5).json() == {"status": "ok"}
        assert process.poll() is None
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
