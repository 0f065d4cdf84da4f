"""The orchestrator's OCI image (``make image``): its configuration, its files, and the processes the
charts' long-running workloads start from it (tests/artifacts/image.py says how an image's process is run
here), each until it is ready."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from devstack import seed
from devstack.identity.process import IdentityProvider
from devstack.kube.server import KubeServer
from devstack.net import free_port
from tests.addresses import address
from tests.artifacts.chroot import ROOT
from tests.artifacts.image import (
    FLEXTENANT,
    IMAGE_SUITE,
    PROVIDERS,
    SECRETS,
    START_TIMEOUT,
    USER,
    chart_container,
    image_path,
    image_process,
    k3s_values,
    manifest,
    output,
    rendered_env,
    serving,
)

sys.path.insert(0, str(ROOT / "packaging"))
from build_image import CONTAINERFILE, ROOTFS_STAGE, image_config, stages, tags

MAX_SIZE = 250 * 1024 * 1024


def test_the_image_runs_its_server_with_the_production_settings_as_a_user_that_is_not_root(
    oci_config: dict,
) -> None:
    settings = oci_config["config"]
    assert settings["User"] == USER
    assert settings["Entrypoint"] == ["flexplane-serve"]
    assert settings["Cmd"] == ["--host", "0.0.0.0", "--port", "8000", "--proxy-headers"]  # noqa: S104
    assert "DJANGO_SETTINGS_MODULE=flexplane.settings.production" in settings["Env"]
    assert set(settings["ExposedPorts"]) == {"8000/tcp"}


def test_the_image_carries_the_open_container_labels_of_this_build(oci_config: dict) -> None:
    labels = oci_config["config"]["Labels"]
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
    assert (rootfs / "opt/flexplane/venv/bin/flexplane-serve").is_file()
    # The same image runs the Cluster API providers (charts/providers: python -m providers).
    assert (site / "providers" / "__main__.py").is_file()
    assert list(site.glob("kopf-*.dist-info"))


def test_the_containerfile_builds_the_same_files_as_the_daemonless_build(
    oci_config: dict, rootfs: Path
) -> None:
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
            "VERSION": oci_config["config"]["Labels"]["org.opencontainers.image.version"],
            "REVISION": oci_config["config"]["Labels"]["org.opencontainers.image.revision"],
        },
    )
    settings = oci_config["config"]
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
        "opt/flexplane/venv/bin/flexplane-serve",
        "opt/flexplane/static",
    ):
        assert expected in listed
    assert "flexplane:x:10001:10001" in (rootfs / "etc/passwd").read_text(encoding="utf-8")


def test_the_image_started_read_only_as_its_user_answers_healthz_and_readyz(
    oci_config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    _kube, identity, config_dir = neighbours
    host = address(IMAGE_SUITE, 3)
    port = free_port(host)
    settings = oci_config["config"]
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
        "--host",
        host,
        "--port",
        str(port),
        "--proxy-headers",
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
        assert health is not None, f"the image's server did not answer:\n{output(process)}"
        assert health.status_code == 200, health.text
        ready = requests.get(f"http://{host}:{port}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"]["management-cluster"]["ok"]
        assert ready.json()["checks"]["identity"]["ok"]


def test_the_image_runs_the_gateway_reconciler_as_the_chart_does_until_its_probes_say_ready(
    oci_config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
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
    env = [*rendered_env(container, SECRETS), "FLEXPLANE_KUBECONFIG=/run/kubeconfig", image_path(oci_config)]
    command = ["/usr/bin/env", "-i", *env, *container["command"], *arguments]
    with image_process(rootfs, config_dir, USER, command) as process:
        for path in (
            container["readinessProbe"]["httpGet"]["path"],
            container["livenessProbe"]["httpGet"]["path"],
        ):
            assert serving(process, f"http://{probes}{path}").json() == {"status": "ok"}


def test_the_image_runs_the_providers_as_the_chart_does_until_their_probes_say_ready(
    oci_config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    """The providers' command and environment as the README's providers install renders them, as the image's
    user with its root read-only: they check Cluster API core's contract, take the leader Lease and run their
    operators, and their probes say so."""
    _kube, _identity, config_dir = neighbours
    container = chart_container(
        PROVIDERS, {"secretKey": {"existingSecret": "flexplane-secret-key"}}, "providers"
    )
    probes = f"{address(IMAGE_SUITE, 6)}:{free_port(address(IMAGE_SUITE, 6))}"
    metrics = f"{address(IMAGE_SUITE, 6)}:{free_port(address(IMAGE_SUITE, 6))}"
    rendered = rendered_env(container, {**SECRETS, "POD_NAME": "providers-0"})
    assert "FLEXPLANE_METRICS_LISTEN=:9100" in rendered  # the chart's metrics port; this run's address below
    env = [e for e in rendered if "PROBES_LISTEN" not in e and "METRICS_LISTEN" not in e]
    env += [
        f"FLEXPLANE_PROBES_LISTEN={probes}",
        f"FLEXPLANE_METRICS_LISTEN={metrics}",
        "FLEXPLANE_KUBECONFIG=/run/kubeconfig",
    ]
    env.append(image_path(oci_config))
    command = ["/usr/bin/env", "-i", *env, *container["command"]]
    with image_process(rootfs, config_dir, USER, command) as process:
        for path in (
            container["readinessProbe"]["httpGet"]["path"],
            container["livenessProbe"]["httpGet"]["path"],
        ):
            assert serving(process, f"http://{probes}{path}").json() == {"status": "ok"}
        assert (
            "flexplane_certificate_expiry_timestamp_seconds"
            in serving(process, f"http://{metrics}/metrics").text
        )


def test_the_image_runs_the_sni_router_as_the_chart_does_and_it_refuses_an_unknown_name(
    oci_config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    """The SNI router's command and environment as the providers chart renders them with the router on,
    as the image's user with its root read-only, on this run's addresses: its probes say ready once it
    follows the control planes' Services, and a TLS client naming no control plane gets TLS's
    unrecognized_name alert."""
    _kube, _identity, config_dir = neighbours
    values = {
        "secretKey": {"existingSecret": "flexplane-secret-key"},
        "sni": {"enabled": True, "domain": "k8s.example.com"},
    }
    container = chart_container(PROVIDERS, values, "sni-router")
    host = address(IMAGE_SUITE, 10)
    probes, listen = f"{host}:{free_port(host)}", f"{host}:{free_port(host)}"
    own = {"FLEXPLANE_PROBES_LISTEN": probes, "FLEXPLANE_SNI_LISTEN": listen}
    env = [e for e in rendered_env(container, {}) if e.partition("=")[0] not in own]
    env += [f"{name}={value}" for name, value in own.items()]
    env += ["FLEXPLANE_KUBECONFIG=/run/kubeconfig", image_path(oci_config)]
    command = ["/usr/bin/env", "-i", *env, *container["command"]]
    with image_process(rootfs, config_dir, USER, command) as process:
        for path in (
            container["readinessProbe"]["httpGet"]["path"],
            container["livenessProbe"]["httpGet"]["path"],
        ):
            assert serving(process, f"http://{probes}{path}").json() == {"status": "ok"}
        context = ssl.create_default_context()
        router_host, _, port = listen.rpartition(":")
        with (
            socket.create_connection((router_host, int(port)), timeout=10) as raw,
            pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"),
        ):
            context.wrap_socket(raw, server_hostname="nobody.k8s.example.com")


def test_the_image_runs_a_tenant_clusters_cloud_controller_alive_and_not_ready_without_flexplane(
    oci_config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    """A tenant cluster's cloud controller (``python -m providers.cloud``, with the API's client the image
    carries) as the image's user with its root read-only: the Kubernetes neighbour plays the tenant
    cluster's API server, and flex.plane's API answers nowhere. It is alive (``/healthz``) and not ready
    (``/readyz`` says its pass failed), as a probe would see it, until flex.plane answers."""
    _kube, _identity, config_dir = neighbours
    (config_dir / "cloud-token").write_text("not-a-real-token\n")
    (config_dir / "cloud-token").chmod(0o644)
    host = address(IMAGE_SUITE, 11)
    probes, nowhere = f"{host}:{free_port(host)}", f"http://{host}:{free_port(host)}"
    env = [
        f"FLEXPLANE_PROBES_LISTEN={probes}",
        "FLEXPLANE_CLOUD_KUBECONFIG=/run/kubeconfig",
        f"FLEXPLANE_URL={nowhere}",
        "FLEXPLANE_CLOUD_TOKEN_FILE=/run/cloud-token",
        "FLEXPLANE_CLOUD_CLUSTER=web",
        "FLEXPLANE_CLOUD_VDC=demo",
        "FLEXPLANE_CLOUD_INTERVAL=1",
        image_path(oci_config),
    ]
    command = ["/usr/bin/env", "-i", *env, "/opt/flexplane/venv/bin/python", "-m", "providers.cloud"]
    with image_process(rootfs, config_dir, USER, command) as process:
        assert serving(process, f"http://{probes}/healthz").json() == {"status": "ok"}
        deadline = time.monotonic() + START_TIMEOUT
        ready = requests.get(f"http://{probes}/readyz", timeout=5)
        while "the last pass failed" not in ready.text and time.monotonic() < deadline:
            time.sleep(0.5)
            ready = requests.get(f"http://{probes}/readyz", timeout=5)
        assert ready.status_code == 503, ready.text
        assert "the last pass failed" in ready.json()["detail"], ready.text


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
    oci_config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
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
        image_path(oci_config),
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
                pytest.fail(f"the image's mesh hub did not serve its proxy:\n{output(process)}")
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
