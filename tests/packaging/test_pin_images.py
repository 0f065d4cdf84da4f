"""``make pin-images`` (packaging/pin_images.py) against a real registry: Debian's docker-registry on
loopback (devstack/registry.py: TLS, basic auth) standing in for an air-gapped site's mirror, under a path
prefix, holding copies of a few of the declared images: a multi-arch OCI index over two platforms'
manifests (the SIG Storage provisioner), a Docker v2 manifest (etcd), Zitadel's and PostgreSQL's.

The command runs as an operator runs it (``--mirror``, ``--ca-file``, the nodes' read-only account);
each digest is computed here from the bytes pushed. Then the providers read the lock it wrote and render
the control plane and the CSI controller with it, and the pinned reference is pulled back from the mirror
by its digest. The bearer-token flows of public registries are tests/agent/test_agent_registry_digests.py's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import requests
import yaml

from agent.update.registry import (
    DOCKER_MANIFEST_MEDIA_TYPE,
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    Access,
    Client,
    Repository,
)
from devstack.pki import CertificateAuthority
from devstack.registry import NODES, PUBLISHER, Registry
from providers.controlplane import model, pki, render, storage
from providers.images import ImageLock
from tests import addresses

ROOT = Path(__file__).resolve().parents[2]
PIN_IMAGES = ROOT / "packaging" / "pin_images.py"
IDENTITY = ROOT / "charts" / "identity"
ZITADEL_TAG = yaml.safe_load((IDENTITY / "Chart.yaml").read_text())["appVersion"]
# The mirror's path prefix: FLEXPLANE_PROVIDERS_IMAGE_REGISTRY and global.imageRegistry may carry one.
PREFIX = "airgap"
PROVISIONER = f"registry.k8s.io/{storage.PROVISIONER}"
ETCD = f"registry.k8s.io/{model.ETCD_IMAGE}"
ZITADEL = f"ghcr.io/zitadel/zitadel:{ZITADEL_TAG}"
POSTGRESQL = "docker.io/library/postgres:17"
KONNECTIVITY = f"registry.k8s.io/{model.KONNECTIVITY_SERVER_IMAGE}"
ATTACHER = f"registry.k8s.io/{storage.ATTACHER}"
OLD = "sha256:" + "0" * 64
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclasses.dataclass(frozen=True)
class Mirror:
    registry: Registry
    digests: dict[str, str]  # what was pushed: the reference as published -> the digest of its bytes
    children: tuple[str, ...]  # the index's two manifests' digests

    @property
    def address(self) -> str:
        return f"{self.registry.address}/{PREFIX}"


def path_at_mirror(ref: str) -> tuple[str, str]:
    """A published reference's repository path and tag under the mirror (its registry replaced)."""
    name, _, tag = ref.rpartition(":")
    return f"{PREFIX}/{name.partition('/')[2]}", tag


class Pusher:
    """Pushes as the publisher, through the project's registry client, onto the mirror."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.access = Access(
            registry.address, PUBLISHER, registry.passwords[PUBLISHER], registry.ca.cert_pem.decode()
        )

    def run(self, coroutine: Any) -> Any:
        with ThreadPoolExecutor(max_workers=1) as pool:  # the caller may be a coroutine test
            return pool.submit(asyncio.run, coroutine).result()

    def image(self, ref: str, body_of: Any) -> bytes:
        async def pushing() -> bytes:
            path, tag = path_at_mirror(ref)
            async with aiohttp.ClientSession() as session:
                client = Client(session, Repository.parse(f"{self.registry.address}/{path}"), self.access)
                return bytes(await body_of(client, tag))

        body: bytes = self.run(pushing())
        return body


async def oci_image(client: Client, architecture: str) -> bytes:
    """One platform's OCI image manifest (a config and a layer), pushed by its digest; its bytes."""
    config = json.dumps({"architecture": architecture, "os": "linux", "rootfs": {"type": "layers"}}).encode()
    layer = f"the {architecture} layer".encode()
    document = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": await client.push_blob(config, media_type=OCI_CONFIG),
        "layers": [await client.push_blob(layer, media_type=OCI_LAYER)],
    }
    body = json.dumps(document).encode()
    await client.push_manifest(sha256(body), body)
    return body


async def multi_arch(client: Client, tag: str) -> bytes:
    """Two platforms' manifests and an OCI index over them, under ``tag``; the index's bytes."""
    manifests = []
    for architecture in ("amd64", "arm64"):
        body = await oci_image(client, architecture)
        manifests.append(
            {
                "mediaType": MANIFEST_MEDIA_TYPE,
                "digest": sha256(body),
                "size": len(body),
                "platform": {"architecture": architecture, "os": "linux"},
            }
        )
    index = json.dumps({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": manifests}).encode()
    await client.push_manifest(tag, index, media_type=INDEX_MEDIA_TYPE)
    return index


def docker_image(seed: str) -> Any:
    """A single Docker v2 manifest whose config says ``seed``, as older images are published."""

    async def push(client: Client, tag: str) -> bytes:
        config = json.dumps({"architecture": "amd64", "os": "linux", "seed": seed}).encode()
        document = {
            "schemaVersion": 2,
            "mediaType": DOCKER_MANIFEST_MEDIA_TYPE,
            "config": await client.push_blob(config, media_type=DOCKER_CONFIG),
            "layers": [await client.push_blob(f"{seed} layer".encode(), media_type=DOCKER_LAYER)],
        }
        body = json.dumps(document, indent=3).encode()
        await client.push_manifest(tag, body, media_type=DOCKER_MANIFEST_MEDIA_TYPE)
        return body

    return push


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    ca = CertificateAuthority.create(tmp_path_factory.mktemp("mirror-ca"))
    host = addresses.address(addresses.IMAGE_MIRROR, 1)
    with Registry.start(tmp_path_factory.mktemp("mirror"), ca, host=host) as registry:
        pusher = Pusher(registry)
        index = pusher.image(PROVISIONER, multi_arch)
        children = tuple(entry["digest"] for entry in json.loads(index)["manifests"])
        digests = {PROVISIONER: sha256(index)}
        for ref in (ETCD, ZITADEL, POSTGRESQL):
            digests[ref] = sha256(pusher.image(ref, docker_image(ref)))
        yield Mirror(registry, digests, children)


@dataclasses.dataclass
class Run:
    lock: Path
    values: Path
    result: subprocess.CompletedProcess[str]

    @property
    def digests(self) -> dict[str, str]:
        return dict(ImageLock.read(self.lock).digests)


def workdir(tmp_path: Path, lock: dict[str, Any] | None = None) -> None:
    """A copy of the identity chart's values (and Chart.yaml, for its appVersion) and a lock to start from."""
    shutil.copy(IDENTITY / "values.yaml", tmp_path / "values.yaml")
    shutil.copy(IDENTITY / "Chart.yaml", tmp_path / "Chart.yaml")
    if lock is not None:
        (tmp_path / "images.lock.json").write_text(json.dumps({"images": lock, "resolved": None}))


def pin(
    mirror: Mirror, tmp_path: Path, *args: str, lock: dict[str, Any] | None = None, password: str = ""
) -> Run:
    """The command, as an air-gapped site runs it against its mirror with its read-only account."""
    lock_path, values = tmp_path / "images.lock.json", tmp_path / "values.yaml"
    if not values.exists():  # a test's first run
        workdir(tmp_path, lock)
    secret = tmp_path / "password"
    secret.write_text(password or mirror.registry.passwords[NODES])
    secret.chmod(0o600)
    command = [
        sys.executable,
        str(PIN_IMAGES),
        f"--lock={lock_path}",
        f"--values={values}",
        f"--mirror={mirror.address}",
        f"--ca-file={mirror.registry.ca.cert_path}",
        f"--username={NODES}",
        f"--password-file={secret}",
        *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path, check=False)
    return Run(lock_path, values, result)


def only(*refs: str) -> str:
    return "--only=" + ",".join(refs)


def test_the_lock_holds_the_multi_arch_index_digest_and_a_single_manifests_digest(
    mirror: Mirror, tmp_path: Path
) -> None:
    run = pin(mirror, tmp_path, only(*mirror.digests))
    assert run.result.returncode == 0, run.result.stderr
    assert run.digests == mirror.digests
    assert run.digests[PROVISIONER] not in mirror.children  # the index's, not one platform's
    document = json.loads(run.lock.read_text())
    assert document["resolved"]["from"] == mirror.address
    assert document["resolved"]["at"].endswith("Z")
    assert list(document["images"]) == sorted(document["images"])
    assert f"+ {PROVISIONER} {mirror.digests[PROVISIONER]}" in run.result.stdout.splitlines()


def test_the_identity_charts_two_digest_lines_are_written_and_nothing_else(
    mirror: Mirror, tmp_path: Path
) -> None:
    original = (IDENTITY / "values.yaml").read_text()
    run = pin(mirror, tmp_path, only(ZITADEL, POSTGRESQL))
    assert run.result.returncode == 0, run.result.stderr
    written = run.values.read_text()
    changed = [
        line
        for line in difflib.unified_diff(original.splitlines(), written.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed == [
        '-    digest: ""',
        f'+    digest: "{mirror.digests[ZITADEL]}"',
        '-      digest: ""',
        f'+      digest: "{mirror.digests[POSTGRESQL]}"',
    ]
    values = yaml.safe_load(written)
    assert values["zitadel"]["image"]["digest"] == mirror.digests[ZITADEL]
    assert values["database"]["postgresql"]["image"]["digest"] == mirror.digests[POSTGRESQL]


def test_an_image_the_mirror_lacks_is_named_keeps_its_old_entry_and_the_command_fails(
    mirror: Mirror, tmp_path: Path
) -> None:
    run = pin(mirror, tmp_path, lock={ATTACHER: OLD})
    assert run.result.returncode == 1
    errors = run.result.stderr
    assert f"could not resolve {ATTACHER} ({mirror.address}/sig-storage/csi-attacher)" in errors
    assert "is not in the registry (404); it keeps its old digest" in errors
    apiserver = [line for line in errors.splitlines() if "registry.k8s.io/kube-apiserver:v1.34.2" in line]
    assert len(apiserver) == 1
    assert apiserver[0].endswith("it stays unpinned")
    assert run.digests == {**mirror.digests, ATTACHER: OLD}  # what resolved, and the old entry kept


def test_a_second_run_changes_nothing_and_a_moved_tag_is_reported(mirror: Mirror, tmp_path: Path) -> None:
    pusher = Pusher(mirror.registry)
    first = sha256(pusher.image(KONNECTIVITY, docker_image("first")))
    run = pin(mirror, tmp_path, only(KONNECTIVITY))
    assert run.digests == {KONNECTIVITY: first}
    written = run.lock.read_bytes()
    again = pin(mirror, tmp_path, only(KONNECTIVITY))
    assert again.result.returncode == 0
    assert again.lock.read_bytes() == written  # not even the header's time
    assert not [line for line in again.result.stdout.splitlines() if line[:1] in "+~-"]
    moved = sha256(pusher.image(KONNECTIVITY, docker_image("rebuilt")))
    third = pin(mirror, tmp_path, only(KONNECTIVITY))
    assert f"~ {KONNECTIVITY} {first} -> {moved}" in third.result.stdout.splitlines()
    assert third.digests == {KONNECTIVITY: moved}


def test_refused_credentials_are_named_and_nothing_is_written(mirror: Mirror, tmp_path: Path) -> None:
    run = pin(mirror, tmp_path, only(ETCD), password="not-the-password")
    assert run.result.returncode == 1
    assert "refused HEAD" in run.result.stderr
    assert "check the registry credentials" in run.result.stderr
    assert not run.lock.exists()


def test_the_providers_render_pinned_images_by_digest_and_the_rest_by_tag(
    mirror: Mirror, tmp_path: Path
) -> None:
    run = pin(mirror, tmp_path, only(PROVISIONER, ETCD))
    assert run.result.returncode == 0, run.result.stderr
    cp = model.ControlPlane(
        vdc="demo",
        cluster="web",
        version="v1.34.2",
        endpoint_host="10.20.0.7",
        zone="zone-a",
        storage_profiles=("standard",),
        images=ImageLock.read(run.lock),
    )
    files = pki.ensure_pki({}, cp.names)
    cloud = model.CloudController(
        url="https://flexplane.example.com", identity_url="https://id.example.com", project_id="42"
    )

    def images(at: model.ControlPlane) -> dict[str, str]:
        workloads = [
            *render.management_manifests(at, files),
            *storage.render_controller(at, cloud, files, b"{}", "https://10.20.0.7:6443"),
        ]
        return {
            c["name"]: c["image"]
            for w in workloads
            if w["kind"] in ("Deployment", "StatefulSet")
            for c in w["spec"]["template"]["spec"]["containers"]
        }

    rendered = images(cp)
    assert rendered["csi-provisioner"] == f"{PROVISIONER}@{mirror.digests[PROVISIONER]}"
    assert rendered["etcd"] == f"{ETCD}@{mirror.digests[ETCD]}"
    assert rendered["csi-attacher"] == ATTACHER  # not in the lock: its tag alone
    assert rendered["kube-apiserver"] == "registry.k8s.io/kube-apiserver:v1.34.2"

    # From the mirror (FLEXPLANE_PROVIDERS_IMAGE_REGISTRY), the same digest, which the mirror serves.
    moved = images(dataclasses.replace(cp, registry=mirror.address))
    provisioner = moved["csi-provisioner"]
    assert provisioner == f"{mirror.address}/{storage.PROVISIONER}@{mirror.digests[PROVISIONER]}"
    assert moved["csi-attacher"] == f"{mirror.address}/{storage.ATTACHER}"
    name, _, digest = provisioner.partition("@")
    host, _, path = name.rpartition(":")[0].partition("/")
    pulled = requests.get(
        f"https://{host}/v2/{path}/manifests/{digest}",
        headers={"Accept": INDEX_MEDIA_TYPE},
        auth=(NODES, mirror.registry.passwords[NODES]),
        verify=str(mirror.registry.ca.cert_path),
        timeout=10,
    )
    assert pulled.status_code == 200
    assert sha256(pulled.content) == digest
