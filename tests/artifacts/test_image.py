"""The orchestrator's OCI image (``make image``): its configuration, its files, and the image running.

The image's root filesystem is unpacked from the OCI layout with umoci and started the way a container
runtime would start it: in a mount namespace of its own (``unshare --mount``) the root is mounted
read-only with a tmpfs on /tmp (as the chart does), the kubeconfig mounted in, and the image's
entrypoint runs there through ``chroot --userspec`` as the image's user, with the image's environment.
The network is the host's, and daphne listens on a loopback address of this run: the devstack's
Kubernetes emulator and identity provider listen on loopback, which a separate network namespace
could only reach through a veth pair and routing of 127/8 (martian on anything but lo), so sharing the
host's network is what lets the image's process reach them as the pods reach theirs in a cluster.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import helm_python
import pytest
import requests
import yaml
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from kubernetes import client
from kubernetes.config import new_client_from_config

from devstack import seed
from devstack.identity.process import IdentityProvider
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.kube.server import KubeServer
from devstack.net import free_port
from providers.common.crds import load_crds
from tests.addresses import address
from tests.artifacts.chroot import BUILD, ROOT, in_namespace
from tests.artifacts.conftest import artifact
from tests.charts import kit

sys.path.insert(0, str(ROOT / "packaging"))
from build_image import CONTAINERFILE, ROOTFS_STAGE, image_config, stages, tags

BUILD_IMAGE = ROOT / "packaging" / "build_image.py"
# Third octet on this run's world subnet for the servers of the image test (tests/addresses.py).
IMAGE_SUITE = 230
MAX_SIZE = 250 * 1024 * 1024
FLEXTENANT = ROOT / "charts" / "flextenant"
PROVIDERS = ROOT / "charts" / "providers"
# What the charts' processes take from Secrets, as the cluster would give it (the values are the test's).
SECRETS = {
    "FLEXPLANE_SECRET_KEY": "image-test-" + "k" * 50,
    "FLEXPLANE_OIDC_CLIENT_SECRET": "image-test-client-secret",
    "FLEXPLANE_AGENT_REGISTRY_USERNAME": "image-test",
    "FLEXPLANE_AGENT_REGISTRY_PASSWORD": "image-test-password",
}
K3S_VALUES = FLEXTENANT / "ci" / "k3s-values.yaml"
START_TIMEOUT = 90.0
USER = "10001:10001"
# Started in the namespace: the root read-only, a tmpfs on /tmp, the kubeconfig, then the image's process.
RUN = """set -e
root=$1; config=$2; shift 2
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o size=64m,mode=1777 tmpfs "$root/tmp"
mount --bind "$config" "$root/run"
exec chroot --userspec="$USERSPEC" "$root" "$@"
"""


@pytest.fixture(scope="module")
def layout() -> Path:
    """The OCI layout under test: make test-artifacts' build, else one built now."""
    return artifact(
        "FLEXPLANE_IMAGE", [str(BUILD_IMAGE), "--build", str(BUILD)], lambda _: BUILD / "image" / "oci"
    )


def blob(layout: Path, digest: str) -> dict:
    algorithm, _, value = digest.partition(":")
    return json.loads((layout / "blobs" / algorithm / value).read_text(encoding="utf-8"))


def manifest(layout: Path, tag: str) -> dict:
    index = json.loads((layout / "index.json").read_text(encoding="utf-8"))
    for entry in index["manifests"]:
        if entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            return blob(layout, entry["digest"])
    raise AssertionError(f"no tag {tag} in {layout}")


@pytest.fixture(scope="module")
def config(layout: Path) -> dict:
    return blob(layout, manifest(layout, tags()[0])["config"]["digest"])


@pytest.fixture(scope="module")
def rootfs(layout: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    bundle = BUILD / "scratch" / f"image-bundle-{os.getpid()}"
    subprocess.run(["rm", "-rf", str(bundle)], check=True)
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{tags()[0]}", str(bundle)], check=True, capture_output=True
    )
    yield bundle / "rootfs"
    subprocess.run(["rm", "-rf", str(bundle)], check=True)


def test_the_image_runs_daphne_with_the_production_settings_as_a_user_that_is_not_root(config: dict) -> None:
    settings = config["config"]
    assert settings["User"] == USER
    assert settings["Entrypoint"] == ["daphne"]
    assert settings["Cmd"][-1] == "flexplane.asgi:application"
    assert "DJANGO_SETTINGS_MODULE=flexplane.settings.production" in settings["Env"]
    assert set(settings["ExposedPorts"]) == {"8000/tcp"}


def test_the_image_carries_the_open_container_labels_of_this_build(config: dict) -> None:
    labels = config["config"]["Labels"]
    for key in ("title", "description", "licenses", "source", "version", "revision", "vendor"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    assert labels["org.opencontainers.image.version"].startswith(tags()[0])
    assert labels["org.opencontainers.image.revision"] != "unknown"


def test_the_image_is_tagged_with_the_version_the_chart_deploys_and_with_the_build(layout: Path) -> None:
    index = json.loads((layout / "index.json").read_text(encoding="utf-8"))
    found = {entry["annotations"]["org.opencontainers.image.ref.name"] for entry in index["manifests"]}
    version = tags()[0]
    assert version in found
    (build,) = found - {version}
    assert re.fullmatch(rf"{re.escape(version)}-(git\d+\.[0-9a-f]+(-dirty)?|nogit)", build), build
    assert manifest(layout, build)["config"] == manifest(layout, version)["config"]


def test_the_image_is_under_its_size_target(layout: Path, rootfs: Path) -> None:
    layers = manifest(layout, tags()[0])["layers"]
    compressed = sum(layer["size"] for layer in layers)
    unpacked = int(
        subprocess.run(["du", "-sb", str(rootfs)], capture_output=True, text=True, check=True).stdout.split()[
            0
        ]
    )
    print(f"image: {compressed / 2**20:.1f} MiB compressed, {unpacked / 2**20:.1f} MiB unpacked")
    assert unpacked < MAX_SIZE, f"{unpacked / 2**20:.1f} MiB unpacked"


def test_the_image_has_no_package_manager_or_compiler_and_the_apps_wheel_in_a_venv(rootfs: Path) -> None:
    for tool in (
        "usr/bin/apt",
        "usr/bin/apt-get",
        "usr/bin/dpkg",
        "opt/flexplane/venv/bin/pip",
        "usr/bin/gcc",
        "usr/bin/cc",
    ):
        assert not (rootfs / tool).exists(), tool
    site = rootfs / "opt/flexplane/venv/lib/python3.11/site-packages"
    assert list(site.glob("flexplane-*.dist-info")), "the app is installed from its wheel"
    assert not list(site.glob("pip")), "no pip in the venv"
    assert (site / "templates").is_dir()
    assert (rootfs / "opt/flexplane/static/css/dist/styles.css").is_file(), (
        "the portal's built CSS, collected"
    )
    assert (rootfs / "opt/flexplane/venv/bin/daphne").is_file()
    # The same image runs the Cluster API providers (charts/providers: python -m providers).
    assert (site / "providers" / "__main__.py").is_file()
    assert list(site.glob("kopf-*.dist-info"))


def test_the_containerfile_builds_the_same_files_as_the_daemonless_build(config: dict, rootfs: Path) -> None:
    """Both builds run rootfs.sh on the same sources; the Containerfile's final stage copies that tree whole
    and only configures the image, with what make image's configuration says."""
    text = CONTAINERFILE.read_text(encoding="utf-8")
    _args, found = stages(text)
    build_stage = next(stage for stage in found if stage.name == ROOTFS_STAGE)
    runs = [rest for keyword, rest in build_stage.instructions if keyword == "RUN"]
    assert runs[-1] == "/src/packaging/image/orchestrator/rootfs.sh /src /rootfs"
    assert ("COPY", ". /src") in build_stage.instructions
    declared = image_config(
        text,
        {
            "VERSION": config["config"]["Labels"]["org.opencontainers.image.version"],
            "REVISION": config["config"]["Labels"]["org.opencontainers.image.revision"],
        },
    )
    settings = config["config"]
    assert declared.user == settings["User"]
    assert declared.entrypoint == settings["Entrypoint"]
    assert declared.cmd == settings["Cmd"]
    assert sorted(declared.env) == sorted(settings["Env"])
    assert declared.labels == settings["Labels"]
    assert {f"{port}" for port in declared.ports} == set(settings["ExposedPorts"])
    # The layer is the tree rootfs.sh made (umoci repacks that folder whole), unpacked here.
    listed = {str(path.relative_to(rootfs)) for path in rootfs.rglob("*")}
    for expected in (
        "etc/passwd",
        "usr/bin/python3",
        "opt/flexplane/venv/bin/daphne",
        "opt/flexplane/static",
    ):
        assert expected in listed
    assert "flexplane:x:10001:10001" in (rootfs / "etc/passwd").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def neighbours(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[KubeServer, IdentityProvider, Path]]:
    scratch = tmp_path_factory.mktemp("image-neighbours")
    kube = KubeServer.start(host=address(IMAGE_SUITE, 1), port=0)
    identity = IdentityProvider.start(
        data_dir=scratch / "identity",
        host=address(IMAGE_SUITE, 2),
        port=0,
        users=seed.USERS,
        project_id=seed.PROJECT_ID,
    )
    config_dir = scratch / "config"
    config_dir.mkdir()
    kube.write_kubeconfig(config_dir / "kubeconfig", namespace=seed.NAMESPACE).chmod(0o644)
    config_dir.chmod(0o755)
    # What an install has before the charts' processes start: the platform namespace, and Cluster API
    # core's CRDs with the providers' own (clusterctl init, the providers chart).
    kube.install_crds([*load_crds(), *CLUSTER_API_CORE_CRDS])
    core = client.CoreV1Api(new_client_from_config(config_file=str(config_dir / "kubeconfig")))
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=seed.NAMESPACE)))
    try:
        yield kube, identity, config_dir
    finally:
        identity.stop()
        kube.stop()


@contextlib.contextmanager
def image_process(
    rootfs: Path, config_dir: Path, userspec: str, command: list[str]
) -> Iterator[subprocess.Popen]:
    """``command`` run from the image's root as a runtime would start it (see RUN), stopped at the end:
    SIGTERM to its process group, SIGKILL to whatever of it outlives that."""
    process = subprocess.Popen(
        in_namespace(RUN, "run", str(rootfs), str(config_dir), *command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "USERSPEC": userspec},
        start_new_session=True,  # its own process group: stopping it stops the image's process too
    )
    try:
        yield process
    finally:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait()
        _signal_group(process, signal.SIGKILL)  # whatever of the group outlived unshare


def test_the_image_started_read_only_as_its_user_answers_healthz_and_readyz(
    config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    _kube, identity, config_dir = neighbours
    host = address(IMAGE_SUITE, 3)
    port = free_port(host)
    settings = config["config"]
    env = [
        *settings["Env"],
        "FLEXPLANE_SECRET_KEY=image-test-" + "k" * 50,
        f"FLEXPLANE_ALLOWED_HOSTS={host}",
        "FLEXPLANE_KUBECONFIG=/run/kubeconfig",
        f"FLEXPLANE_NAMESPACE={seed.NAMESPACE}",
        f"FLEXPLANE_OIDC_ISSUER={identity.issuer}",
        f"FLEXPLANE_OIDC_AUDIENCE={seed.PROJECT_ID}",
        f"FLEXPLANE_OIDC_PROJECT_ID={seed.PROJECT_ID}",
        "FLEXPLANE_METRICS_PORT=0",
    ]
    # The chart's own arguments, on this run's address: the entrypoint and environment are the image's.
    command = [
        "/usr/bin/env",
        "-i",
        *env,
        *settings["Entrypoint"],
        "--bind",
        host,
        "--port",
        str(port),
        "--proxy-headers",
        "flexplane.asgi:application",
    ]
    with image_process(rootfs, config_dir, USER, command) as process:
        deadline = time.monotonic() + START_TIMEOUT
        health = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                health = requests.get(f"http://{host}:{port}/healthz", timeout=2)
                break
            except requests.ConnectionError:
                time.sleep(0.3)
        assert health is not None, f"the image's daphne did not answer:\n{_output(process)}"
        assert health.status_code == 200, health.text
        ready = requests.get(f"http://{host}:{port}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"]["management-cluster"]["ok"]
        assert ready.json()["checks"]["identity"]["ok"]


def k3s_values() -> dict:
    """The flextenant chart's values as the README's k3s walkthrough gives them: its values file, and the
    hub endpoint it sets."""
    values: dict = yaml.safe_load(K3S_VALUES.read_text())
    return kit.merged(values, {"mesh": {"hubEndpoint": "203.0.113.10:51820"}})


def chart_container(chart_dir: Path, values: dict, name: str) -> dict:
    """The container ``name`` of the chart's Deployments, rendered with ``values``."""
    with helm_python.Chart.load(chart_dir) as chart:
        rendered = kit.manifests(
            chart.render(values, name=chart_dir.name, namespace="flexplane", is_install=True)
        )
    pods = [m["spec"]["template"]["spec"] for m in rendered if m["kind"] == "Deployment"]
    (container,) = [c for spec in pods for c in spec["containers"] if c["name"] == name]
    return dict(container)


def rendered_env(container: dict, references: dict[str, str]) -> list[str]:
    """The container's environment as NAME=VALUE: its values, and for what it takes from Secrets and the pod
    (valueFrom) what ``references`` says the cluster would give; a reference the test does not resolve
    fails it, naming the variable."""
    env = []
    for var in container.get("env", []):
        if "value" in var:
            env.append(f"{var['name']}={var['value']}")
        else:
            assert var["name"] in references, f"{var['name']} comes from {var['valueFrom']}: resolve it here"
            env.append(f"{var['name']}={references[var['name']]}")
    return env


def serving(process: subprocess.Popen, url: str) -> requests.Response:
    """The first answer of ``url`` that is not a refused connection (START_TIMEOUT at most)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(requests.ConnectionError):
            answer = requests.get(url, timeout=5)
            if answer.status_code == 200:
                return answer
        time.sleep(0.3)
    pytest.fail(f"{url} did not answer 200:\n{_output(process)}")


def test_the_image_runs_the_gateway_reconciler_as_the_chart_does_until_its_probes_say_ready(
    config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    """The reconciler's command, arguments and environment as the README's k3s values render them, as the
    image's user with its root read-only: its first pass over the (empty) catalog ends and its probes say
    so, on this run's address instead of the pod's."""
    _kube, _identity, config_dir = neighbours
    container = chart_container(FLEXTENANT, k3s_values(), "gateways")
    probes = f"{address(IMAGE_SUITE, 5)}:{free_port(address(IMAGE_SUITE, 5))}"
    arguments = [
        f"--probes-listen={probes}" if a.startswith("--probes-listen=") else a for a in container["args"]
    ]
    assert arguments != container["args"], "the chart gives the reconciler its probes' address"
    env = [*rendered_env(container, SECRETS), "FLEXPLANE_KUBECONFIG=/run/kubeconfig", image_path(config)]
    command = ["/usr/bin/env", "-i", *env, *container["command"], *arguments]
    with image_process(rootfs, config_dir, USER, command) as process:
        for path in (
            container["readinessProbe"]["httpGet"]["path"],
            container["livenessProbe"]["httpGet"]["path"],
        ):
            assert serving(process, f"http://{probes}{path}").json() == {"status": "ok"}


def test_the_image_runs_the_providers_as_the_chart_does_until_their_probes_say_ready(
    config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    """The providers' command and environment as the README's providers install renders them, as the image's
    user with its root read-only: they check Cluster API core's contract, take the leader Lease and run their
    operators, and their probes say so."""
    _kube, _identity, config_dir = neighbours
    container = chart_container(
        PROVIDERS, {"secretKey": {"existingSecret": "flexplane-secret-key"}}, "providers"
    )
    probes = f"{address(IMAGE_SUITE, 6)}:{free_port(address(IMAGE_SUITE, 6))}"
    env = [
        e for e in rendered_env(container, {**SECRETS, "POD_NAME": "providers-0"}) if "PROBES_LISTEN" not in e
    ]
    env += [f"FLEXPLANE_PROBES_LISTEN={probes}", "FLEXPLANE_KUBECONFIG=/run/kubeconfig", image_path(config)]
    command = ["/usr/bin/env", "-i", *env, *container["command"]]
    with image_process(rootfs, config_dir, USER, command) as process:
        for path in (
            container["readinessProbe"]["httpGet"]["path"],
            container["livenessProbe"]["httpGet"]["path"],
        ):
            assert serving(process, f"http://{probes}{path}").json() == {"status": "ok"}


def image_path(config: dict) -> str:
    """PATH as the image sets it (a container runtime starts the command with the image's environment)."""
    return next(e for e in config["config"]["Env"] if e.startswith("PATH="))


def uapi_get(path: Path) -> dict[str, str]:
    """A WireGuard device's settings through its UAPI socket (wireguard-go's, which lives in the image's
    /var/run/wireguard: the host's ``wg`` looks in its own)."""
    with socket.socket(socket.AF_UNIX) as uapi:
        uapi.settimeout(5)
        uapi.connect(str(path))
        uapi.sendall(b"get=1\n\n")
        answer = b""
        while not answer.endswith(b"\n\n"):
            chunk = uapi.recv(4096)
            if not chunk:
                break
            answer += chunk
    return dict(line.split("=", 1) for line in answer.decode().splitlines() if "=" in line)


def test_the_image_runs_the_mesh_hub_as_the_chart_does_with_the_tools_it_calls(
    config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    """The hub's command, arguments and environment as the chart renders them, from the image's root with
    only the capability the chart grants (NET_ADMIN, as root): it makes its WireGuard interface with the
    image's ip, wg and wireguard-go (where the kernel has no WireGuard, as here) and serves its proxy.
    The interface, the UDP port and the proxy's address are this run's; the cluster is the emulator."""
    _kube, _identity, config_dir = neighbours
    container = chart_container(FLEXTENANT, k3s_values(), "mesh")
    host = address(IMAGE_SUITE, 4)
    proxy_port, udp_port = free_port(host), free_port(host)
    interface = f"fpmeshimg{os.getpid() % 1000}"
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["NET_ADMIN"]}
    own = {
        "--interface": interface,
        "--port": str(udp_port),
        "--proxy-listen": f"{host}:{proxy_port}",
    }
    arguments = [f"{a.partition('=')[0]}={own[a.partition('=')[0]]}" for a in container["args"]]
    assert [a.partition("=")[0] for a in arguments] == list(own)
    env = [
        f"{var['name']}={var['value']}"
        for var in container["env"]
        if "value" in var and var["name"] != "POD_IP"
    ]
    env += [
        "FLEXPLANE_SECRET_KEY=image-test-" + "k" * 50,  # the chart's secretKeyRef
        "FLEXPLANE_KUBECONFIG=/run/kubeconfig",  # in a pod: its service account
        image_path(config),
    ]
    command = [
        "/usr/bin/setpriv",
        "--bounding-set=-all,+net_admin",
        "--inh-caps=-all",
        "--no-new-privs",
        "--",
        "/usr/bin/env",
        "-i",
        *env,
        *container["command"],
        *arguments,
    ]
    try:
        with image_process(rootfs, config_dir, "0:0", command) as process:
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and process.poll() is None:
                with contextlib.suppress(OSError):
                    socket.create_connection((host, proxy_port), timeout=1).close()
                    break
                time.sleep(0.3)
            else:
                pytest.fail(f"the image's mesh hub did not serve its proxy:\n{_output(process)}")
            device = uapi_get(config_dir / "wireguard" / f"{interface}.sock")
            addresses = subprocess.run(
                ["ip", "-o", "address", "show", "dev", interface], capture_output=True, text=True, check=True
            ).stdout
        assert process.stdout is not None
        said = process.stdout.read().decode(errors="replace")
        assert device["listen_port"] == str(udp_port), device
        private = X25519PrivateKey.from_private_bytes(bytes.fromhex(device["private_key"]))
        public = base64.b64encode(private.public_key().public_bytes_raw()).decode()
        assert f"mesh hub listening on UDP {udp_port} ({interface}), key {public}" in said, said
        assert "10.99.0.1/22" in addresses, addresses
    finally:
        subprocess.run(["ip", "link", "del", "dev", interface], capture_output=True, check=False)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group has ended
        os.killpg(process.pid, signum)


def _output(process: subprocess.Popen[bytes]) -> str:
    if process.poll() is None:
        _signal_group(process, signal.SIGKILL)
    out, _ = process.communicate(timeout=10)
    return out.decode(errors="replace")[-4000:]
