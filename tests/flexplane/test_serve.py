"""``python -m flexplane.serve``: every endpoint of one process (HTTP, the metrics port, HTTPS) answers as
its own, and a SIGTERM stops them all; arguments it cannot serve are refused before anything starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from devstack.net import free_port
from devstack.pki import CertificateAuthority
from tests.addresses import SERVE, address

ROOT = Path(__file__).resolve().parents[2]
HOST = address(SERVE, 1)


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[bytes]
    log: Path
    http: str
    metrics: str
    https: str
    ca: Path


def environment(**settings: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("FLEXPLANE_")}
    return {
        **kept,
        "DJANGO_SETTINGS_MODULE": "flexplane.settings",
        "FLEXPLANE_ALLOWED_HOSTS": HOST,
        **settings,
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    scratch = tmp_path_factory.mktemp("serve")
    ca = CertificateAuthority.create(scratch / "ca")
    cert, key = ca.issue_server([HOST], scratch, "https")
    http, metrics, https = (free_port(HOST) for _ in range(3))
    log = scratch / "serve.log"
    with log.open("wb") as out:  # read when something fails (a pipe nobody reads would fill)
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "flexplane.serve", "--host", HOST, "--port", str(http)),
                *("--metrics-port", str(metrics), "--https-port", str(https)),
                *("--certfile", str(cert), "--keyfile", str(key)),
            ],
            env=environment(FLEXPLANE_METRICS_PORT=str(metrics)),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    urls = (f"http://{HOST}:{http}", f"http://{HOST}:{metrics}", f"https://{HOST}:{https}")
    it = Served(process, log, *urls, ca.cert_path)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{it.http}/healthz", timeout=2)
                requests.get(f"{it.https}/healthz", timeout=2, verify=str(it.ca))
                break
            except requests.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the server did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.2)
        yield it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_http_and_https_endpoints_serve_the_app(served: Served) -> None:
    plain = requests.get(f"{served.http}/healthz", timeout=10)
    secure = requests.get(f"{served.https}/healthz", timeout=10, verify=str(served.ca))
    assert (plain.status_code, plain.json()) == (200, {"status": "ok"})
    assert (secure.status_code, secure.json()) == (200, {"status": "ok"})
    assert "server" not in plain.headers  # no server banner


def test_the_https_endpoint_is_secure_to_the_app_and_the_http_one_is_not(served: Served) -> None:
    # The pages' policy lets them open websockets on their own scheme: wss only where request.is_secure().
    plain = requests.get(f"{served.http}/healthz", timeout=10).headers["Content-Security-Policy"]
    secure = requests.get(f"{served.https}/healthz", timeout=10, verify=str(served.ca))
    assert f"ws://{HOST}" in plain
    assert f"wss://{HOST}" in secure.headers["Content-Security-Policy"]


def test_the_metrics_port_answers_metrics_only_and_the_others_never_do(served: Served) -> None:
    assert requests.get(f"{served.metrics}/metrics", timeout=10).status_code == 200
    assert requests.get(f"{served.metrics}/healthz", timeout=10).status_code == 404
    assert requests.get(f"{served.http}/metrics", timeout=10).status_code == 404


def test_a_sigterm_stops_every_endpoint_and_the_process_exits_cleanly(served: Served) -> None:
    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(timeout=30) == 0, served.log.read_text()[-3000:]
    for url in (served.http, served.metrics):
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{url}/healthz", timeout=2)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "give --port, --https-port or both"),
        (["--https-port", "8443"], "--https-port needs --certfile and --keyfile"),
        (["--port", "8000", "--metrics-port", "8000"], "--metrics-port must differ"),
    ],
)
def test_arguments_it_cannot_serve_are_refused_before_anything_starts(args: list[str], says: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flexplane.serve", "--host", HOST, *args],
        env=environment(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert says in done.stderr
