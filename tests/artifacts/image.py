"""The orchestrator's OCI image (``make image``): its configuration, its files, and the image running.

The image's root filesystem is unpacked from the OCI layout with umoci and started the way a container
runtime would start it: in a mount namespace of its own (``unshare --mount``) the root is mounted
read-only with a tmpfs on /tmp (as the chart does), the kubeconfig mounted in, and the image's
entrypoint runs there through ``chroot --userspec`` as the image's user, with the image's environment.
The network is the host's, and the server listens on a loopback address of this run: the devstack's
Kubernetes emulator and identity provider listen on loopback, which a separate network namespace
could only reach through a veth pair and routing of 127/8 (martian on anything but lo), so sharing the
host's network is what lets the image's process reach them as the pods reach theirs in a cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import helm_python
import pytest
import requests
import yaml
from kubernetes import client
from kubernetes.config import new_client_from_config

from devstack import seed
from devstack.identity.process import IdentityProvider
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.kube.server import KubeServer
from providers.common.crds import load_crds
from tests.addresses import address
from tests.artifacts.chroot import BUILD, ROOT, in_namespace
from tests.charts import kit

sys.path.insert(0, str(ROOT / "packaging"))
from build_image import tags

# Third octet on this run's world subnet for the servers of the image test (tests/addresses.py).
IMAGE_SUITE = 230
FLEXTENANT = ROOT / "charts" / "flextenant"
PROVIDERS = ROOT / "charts" / "providers"
# What the charts' processes take from Secrets, as the cluster would give it (the values are the test's).
SECRETS = {
    "FLEXPLANE_SECRET_KEY": "image-test-" + "k" * 50,
    "FLEXPLANE_OIDC_CLIENT_SECRET": "image-test-client-secret",
    "FLEXPLANE_AGENT_REGISTRY_USERNAME": "image-test",
    "FLEXPLANE_AGENT_REGISTRY_PASSWORD": "image-test-password",
}
IDENTITY = ROOT / "charts" / "identity"
K3S_VALUES = FLEXTENANT / "ci" / "k3s-values.yaml"
WORKLOADS = ("Deployment", "StatefulSet", "Job", "CronJob")
START_TIMEOUT = 90.0
USER = "10001:10001"
# Started in the namespace: the root read-only, a tmpfs on /tmp, the kubeconfig, then the image's process.
# BINDS: more "source:target" mounts, read-only (a pod's Secret and ConfigMap volumes), and WRITABLE the
# same, read-write (a pod's emptyDir); their mount points are made in the root first, as a runtime does.
RUN = """set -e
root=$1; config=$2; shift 2
for bind in $BINDS $WRITABLE; do mkdir -p "$root${bind#*:}"; done
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o size=64m,mode=1777 tmpfs "$root/tmp"
mount --bind "$config" "$root/run"
for bind in $BINDS; do mount --bind -o ro "${bind%%:*}" "$root${bind#*:}"; done
for bind in $WRITABLE; do mount --bind "${bind%%:*}" "$root${bind#*:}"; done
exec chroot --userspec="$USERSPEC" "$root" "$@"
"""


def blob(layout: Path, digest: str) -> dict:
    algorithm, _, value = digest.partition(":")
    return json.loads((layout / "blobs" / algorithm / value).read_text(encoding="utf-8"))


def manifest(layout: Path, tag: str) -> dict:
    index = json.loads((layout / "index.json").read_text(encoding="utf-8"))
    for entry in index["manifests"]:
        if entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            return blob(layout, entry["digest"])
    raise AssertionError(f"no tag {tag} in {layout}")


@pytest.fixture(scope="session")
def oci_config(layout: Path) -> dict:
    """The image's configuration (its OCI config blob)."""
    return blob(layout, manifest(layout, tags()[0])["config"]["digest"])


@pytest.fixture(scope="session")
def rootfs(layout: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    bundle = BUILD / "scratch" / f"image-bundle-{os.getpid()}"
    subprocess.run(["rm", "-rf", str(bundle)], check=True)
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{tags()[0]}", str(bundle)], check=True, capture_output=True
    )
    yield bundle / "rootfs"
    subprocess.run(["rm", "-rf", str(bundle)], check=True)


@pytest.fixture(scope="session")
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
    rootfs: Path,
    config_dir: Path,
    userspec: str,
    command: list[str],
    binds: dict[Path, str] | None = None,
    writable: dict[Path, str] | None = None,
) -> Iterator[subprocess.Popen]:
    """``command`` run from the image's root as a runtime would start it (see RUN), with ``binds`` (a
    folder of the test's: where it is mounted in the root) mounted read-only and ``writable`` read-write;
    stopped at the end: SIGTERM to its process group, SIGKILL to whatever of it outlives that."""

    def listed(folders: dict[Path, str] | None) -> str:
        return " ".join(f"{source}:{target}" for source, target in (folders or {}).items())

    process = subprocess.Popen(
        in_namespace(RUN, "run", str(rootfs), str(config_dir), *command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "USERSPEC": userspec, "BINDS": listed(binds), "WRITABLE": listed(writable)},
        start_new_session=True,  # its own process group: stopping it stops the image's process too
    )
    try:
        yield process
    finally:
        signal_group(process, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait()
        signal_group(process, signal.SIGKILL)  # whatever of the group outlived unshare


def k3s_values() -> dict:
    """The flextenant chart's values as the README's k3s walkthrough gives them: its values file, and the
    hub endpoint it sets."""
    values: dict = yaml.safe_load(K3S_VALUES.read_text())
    return kit.merged(values, {"mesh": {"hubEndpoint": "203.0.113.10:51820"}})


def chart_container(chart_dir: Path, values: dict, name: str) -> dict:
    """The container ``name`` (or init container) of the chart's workloads, rendered with ``values``."""
    with helm_python.Chart.load(chart_dir) as chart:
        rendered = kit.manifests(
            chart.render(values, name=chart_dir.name, namespace="flexplane", is_install=True)
        )
    pods = [pod_spec(m) for m in rendered if m["kind"] in WORKLOADS]
    containers = [c for spec in pods for c in [*spec.get("initContainers", []), *spec["containers"]]]
    (container,) = [c for c in containers if c["name"] == name]
    return dict(container)


def pod_spec(workload: dict) -> dict:
    """The pod template's spec of a Deployment, StatefulSet, Job or CronJob."""
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return dict(spec["template"]["spec"])


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
    pytest.fail(f"{url} did not answer 200:\n{output(process)}")


def image_path(oci_config: dict) -> str:
    """PATH as the image sets it (a container runtime starts the command with the image's environment)."""
    return next(e for e in oci_config["config"]["Env"] if e.startswith("PATH="))


def signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group has ended
        os.killpg(process.pid, signum)


def output(process: subprocess.Popen[bytes]) -> str:
    if process.poll() is None:
        signal_group(process, signal.SIGKILL)
    out, _ = process.communicate(timeout=10)
    return out.decode(errors="replace")[-4000:]
