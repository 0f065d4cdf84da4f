"""What the server (``python -m flexplane.serve``) serves, and under which settings: real processes, each in
a network namespace of its own.

A fresh namespace (``unshare --net``, as root) has a loopback interface and nothing else: the tests
give it one more address, which stands for the machine's address on a network, so that the server can
bind every address there and be asked on both without reaching anything outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# An address of the namespace that is not loopback (TEST-NET-2: routed nowhere).
ELSEWHERE = "198.51.100.7"
# Started inside the namespace: the server on every address, then a request on loopback and on ELSEWHERE,
# both saying they are for "localhost" (a Host header is the client's to write).
ASK_BOTH = f"""
import json, subprocess, sys, time, urllib.error, urllib.request

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["ip", "address", "add", "{ELSEWHERE}/32", "dev", "lo"], check=True)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))


def ask(address):
    request = urllib.request.Request(f"http://{{address}}:8000/healthz", headers={{"Host": "localhost"}})
    try:
        with opener.open(request, timeout=5) as answer:
            return [answer.status, answer.read().decode()]
    except urllib.error.HTTPError as refused:
        return [refused.code, refused.read().decode()]


server = subprocess.Popen(
    [sys.executable, "-m", "flexplane.serve", "--host", "0.0.0.0", "--port", "8000"],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.PIPE,
)
try:
    deadline = time.monotonic() + 60
    while True:
        try:
            loopback = ask("127.0.0.1")
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(server.communicate(timeout=10)[1].decode()[-3000:])
            time.sleep(0.1)
    print(json.dumps({{"loopback": loopback, "elsewhere": ask("{ELSEWHERE}")}}))
finally:
    server.terminate()
    server.wait(10)
"""


def environment(**settings: str) -> dict[str, str]:
    """This process's environment without any settings of flex.plane or Django's, plus ``settings``."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("FLEXPLANE_") and k != "DJANGO_SETTINGS_MODULE"
    }
    return {**kept, **settings}


@pytest.fixture(scope="module")
def namespaces() -> None:
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(
            f"no network namespace of its own for the server (root is needed): {probe.stderr.decode()}"
        )


def test_the_server_under_the_development_settings_answers_on_loopback_only(namespaces: None) -> None:
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", ASK_BOTH],
        env=environment(DJANGO_SETTINGS_MODULE="flexplane.settings"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    answers = json.loads(done.stdout)
    assert answers["loopback"] == [200, '{"status": "ok"}']
    status, body = answers["elsewhere"]
    assert status == 403
    assert "development settings serve this machine only" in body


def test_the_server_without_settings_serves_the_production_ones_which_need_a_secret_key(
    namespaces: None,
) -> None:
    server = subprocess.Popen(
        [
            "unshare",
            "--net",
            sys.executable,
            "-m",
            "flexplane.serve",
            "--host",
            "127.0.0.1",
            "--port",
            "8000",
        ],
        env=environment(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
        pytest.fail("the server served without DJANGO_SETTINGS_MODULE and without FLEXPLANE_SECRET_KEY")
    assert server.returncode != 0
    assert "FLEXPLANE_SECRET_KEY is not set" in output


def test_the_asgi_app_defaults_to_the_production_settings() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import flexplane.asgi\nfrom django.conf import settings\nprint(settings.SETTINGS_MODULE)",
        ],
        env=environment(FLEXPLANE_SECRET_KEY="k" * 50, FLEXPLANE_ALLOWED_HOSTS="cloud.example.com"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["flexplane.settings.production"]


def test_the_asgi_app_refuses_to_start_under_the_development_settings_for_other_hosts() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import flexplane.asgi"],
        env=environment(
            DJANGO_SETTINGS_MODULE="flexplane.settings", FLEXPLANE_ALLOWED_HOSTS="localhost,cloud.example.com"
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "the development settings serve loopback only, not cloud.example.com" in done.stderr
