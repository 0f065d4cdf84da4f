"""The rendered cloud controller's container run as a real process, as a kubelet would run it: its command
and environment as rendered, the ``cloud-controller`` Secret's files where its volume puts them.

The tenant's API server is the devstack's Kubernetes emulator over TLS with the serving certificate the
provider made (the kubeconfig's Service name resolved to its address, as the cluster's DNS would);
the identity provider and flex.plane are one small stand-in: a token for a service account assertion
that the key's public half verifies, and a /graphql that records the bearer token it is called with and
answers 503. So the process proves it starts from the rendered settings, exchanges the rendered key for a
token, calls flex.plane with it, reaches the tenant's API server with its own kubeconfig, and reports
itself alive and, while flex.plane fails, not ready. Not here: a pass that succeeds (flex.plane's side is
tests/providers/cloud/'s, in-process), and the devstack's stand-in for the hosted control plane starting
the Deployment itself.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from devstack.kube import KubeServer
from devstack.net import free_port
from providers.controlplane import model, pki, render
from tests import addresses

ROOT = Path(__file__).resolve().parents[3]
TENANT = addresses.address(addresses.CLOUD_CONTROLLER_POD, 1)
STAND_IN = addresses.address(addresses.CLOUD_CONTROLLER_POD, 2)
PROJECT = "301"
TOKEN = "access-token-for-k8s-web"
START_TIMEOUT = 30.0
MEMORY_REQUEST = render.cloud_controller_container(
    model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2"), model.CloudController(), ca=False
)["resources"]["requests"]["memory"]


def quantity(memory: str) -> int:
    """Bytes of a memory quantity in Mi."""
    assert memory.endswith("Mi"), memory
    return int(memory.removesuffix("Mi")) * 1024 * 1024


class StandIn:
    """The identity provider's token endpoint and flex.plane's /graphql, on one address."""

    def __init__(self, public_key: Any, key_id: str, user_id: str) -> None:
        self.public_key, self.key_id, self.user_id = public_key, key_id, user_id
        self.exchanges: list[dict[str, Any]] = []
        self.calls: list[str] = []  # the Authorization headers /graphql was called with
        self.server = ThreadingHTTPServer((STAND_IN, 0), self.handler())
        self.url = f"http://{STAND_IN}:{self.server.server_address[1]}"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/oauth/v2/token":
                    status, answer = stand_in.token(urllib.parse.parse_qs(body.decode()))
                elif self.path == "/graphql":
                    stand_in.calls.append(self.headers.get("Authorization", ""))
                    status, answer = 503, {"errors": [{"message": "the stand-in serves no API"}]}
                else:
                    status, answer = 404, {}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        return Handler

    def token(self, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        """Zitadel's JWT profile grant: the assertion signed by the key, for the service account."""
        assertion = form["assertion"][0]
        try:
            claims = jwt.decode(assertion, self.public_key, algorithms=["RS256"], audience=self.url)
        except jwt.InvalidTokenError:
            return 400, {"error": "invalid_grant"}
        headers = jwt.get_unverified_header(assertion)
        self.exchanges.append({"kid": headers.get("kid"), "iss": claims["iss"], "scope": form["scope"][0]})
        if headers.get("kid") != self.key_id or claims["iss"] != self.user_id:
            return 400, {"error": "invalid_grant"}
        return 200, {"access_token": TOKEN, "expires_in": 43199}

    def __enter__(self) -> StandIn:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service_account() -> tuple[bytes, Any]:
    """A key file as ``createServiceAccount`` answers it (Zitadel's shape), and its public half."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    key = {"type": "serviceaccount", "keyId": "key-1", "key": pem, "userId": "user-k8s-web"}
    return json.dumps(key).encode(), private.public_key()


def run_as_a_kubelet_would(
    deployment: dict[str, Any], secret: dict[str, Any], mount_root: Path, probes: str
) -> tuple[list[str], dict[str, str]]:
    """The container's command and environment, its Secret volume's files written under ``mount_root``
    (where the kubelet mounts them), the probes' address the pod's own."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == model.CLOUD_CONTROLLER]
    directory = mount_root / mount["mountPath"].lstrip("/")
    directory.mkdir(parents=True)
    for name, value in secret["data"].items():
        (directory / name).write_bytes(base64.b64decode(value))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(mount_root)}
    for variable in container["env"]:
        value = variable["value"]
        if value.startswith(mount["mountPath"] + "/"):
            value = str(mount_root / value.lstrip("/"))
        env[variable["name"]] = value
    env["FLEXPLANE_PROBES_LISTEN"] = probes
    env["FLEXPLANE_CLOUD_INTERVAL"] = "1"
    command = list(container["command"])
    assert command[0] == "python"
    return [sys.executable, *command[1:]], env


@pytest.fixture
def pod(
    tmp_path: Path, service_account: tuple[bytes, Any]
) -> Iterator[tuple[subprocess.Popen[str], StandIn, KubeServer, str]]:
    key, public_key = service_account
    cp = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", endpoint_host=TENANT)
    files = pki.ensure_pki({}, cp.names)
    with (
        StandIn(public_key, "key-1", "user-k8s-web") as stand_in,
        KubeServer.start(TENANT, 6443, tls=(files["apiserver.crt"], files["apiserver.key"])) as tenant,
    ):
        cloud = model.CloudController(url=stand_in.url, identity_url=stand_in.url, project_id=PROJECT)
        secret, deployment = render.render_cloud_controller(cp, cloud, files, key)
        probes = f"{STAND_IN}:{free_port(STAND_IN)}"
        command, env = run_as_a_kubelet_would(deployment, secret, tmp_path, probes)
        # The Service's name, resolved as the management cluster's DNS would: to the tenant API's address.
        kubeconfig = Path(env["FLEXPLANE_CLOUD_KUBECONFIG"])
        config = yaml.safe_load(kubeconfig.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        assert server == f"https://kube-apiserver.{cp.namespace}.svc:6443"
        config["clusters"][0]["cluster"]["server"] = f"https://{TENANT}:6443"
        kubeconfig.write_text(yaml.safe_dump(config))
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            yield process, stand_in, tenant, f"http://{probes}"
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=10)


def until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"not within {START_TIMEOUT} s: {what}")


def answer(url: str) -> requests.Response | None:
    try:
        return requests.get(url, timeout=2)
    except requests.ConnectionError:
        return None


def test_the_rendered_container_runs_exchanges_its_key_and_calls_flexplane_and_the_tenant_with_it(
    pod: tuple[subprocess.Popen[str], StandIn, KubeServer, str],
) -> None:
    process, stand_in, tenant, probes = pod
    alive = until(lambda: answer(f"{probes}/healthz"), "/healthz answers")
    assert alive.status_code == 200, alive.text

    until(lambda: stand_in.calls, "flex.plane is called")
    assert stand_in.exchanges[0] == {
        "kid": "key-1",
        "iss": "user-k8s-web",
        "scope": f"openid urn:zitadel:iam:org:project:id:{PROJECT}:aud urn:zitadel:iam:org:projects:roles",
    }
    assert set(stand_in.calls) == {f"Bearer {TOKEN}"}
    # Its watches of the tenant's Nodes and Services, over TLS verified with the cluster's CA.
    seen = until(
        lambda: (
            {str(r.resource.plural) for r in tenant.emulator if r.resource is not None}
            >= {"nodes", "services"}
        ),
        "the tenant's API server is asked for Nodes and Services",
    )
    assert seen

    # (A Response of 503 is falsy: the check returns its text.)
    detail = until(
        lambda: (r := answer(f"{probes}/readyz")) is not None and r.status_code == 503 and r.json()["detail"],
        "/readyz says the pass failed",
    )
    assert "the last pass failed" in detail
    # Within the memory the Deployment asks for, after its first passes (its limit is the render's).
    rss = next(
        line for line in Path(f"/proc/{process.pid}/status").read_text().splitlines() if "VmRSS" in line
    )
    assert int(rss.split()[1]) * 1024 < quantity(MEMORY_REQUEST), rss

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0, process.communicate()[0]
