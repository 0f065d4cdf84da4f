"""The declaration of every third-party image (packaging/images.py) against what the product runs, and the
image lock the wheel ships (providers/images.lock.json) against the identity chart's values.

The declaration is held to the providers' own renders: for each declared Kubernetes version, with either
network plugin, the CSI driver, etcd's snapshots and restores, the cloud controller and the SNI mode's
node-local proxy, the images the provider renders are exactly those declared for that version, flex.plane's
own image aside. A component, sidecar or release added to the providers without a pin fails here.
"""

from __future__ import annotations

import base64
import dataclasses
import fnmatch
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack import seed
from providers import images as image_lock
from providers.controlplane import model, pki, render, storage, tenant
from providers.images import ImageLock
from tests.charts.kit import containers

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))
import images  # noqa: E402
import pin_images  # noqa: E402

FLEXPLANE = f"{model.FLEXPLANE_IMAGE}:"
CLOUD = model.CloudController(
    url="https://flexplane.example.com", identity_url="https://id.example.com", project_id="42"
)
BACKUP = model.EtcdBackup(s3_url="s3://snapshots/etcd", key=base64.b64encode(b"k" * 32).decode())


def rendered_images(version: str, files: dict[str, bytes]) -> set[str]:
    """Every image the control-plane provider renders for a cluster of ``version``, whatever its options."""
    base = model.ControlPlane(
        vdc="demo",
        cluster="web",
        version=version,
        endpoint_host="10.20.0.7",
        zone="zone-a",
        storage_profiles=("standard",),
        images=ImageLock(),
    )
    manifests: list[Any] = []
    for plugin in ("cilium", "calico"):
        cp = dataclasses.replace(base, network_plugin=plugin)
        manifests += [
            *render.management_manifests(cp, files, BACKUP),
            *tenant.tenant_manifests(cp, files["ca.crt"]),
            *storage.render_controller(cp, CLOUD, files, b"{}", "https://10.20.0.7:6443"),
            *render.render_cloud_controller(cp, CLOUD, files, b"{}"),
            render.render_etcd_restore_job(cp, BACKUP, 0),
        ]
    sni = dataclasses.replace(base, service_type=model.SNI, konnectivity_host="konnectivity.web.example")
    manifests += tenant.tenant_manifests(sni, files["ca.crt"])
    return {c["image"] for c in containers(manifests) if not c["image"].startswith(FLEXPLANE)}


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return pki.ensure_pki({}, model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2").names)


@pytest.mark.parametrize("version", images.KUBERNETES_VERSIONS)
def test_the_declared_images_are_exactly_those_the_provider_renders(
    version: str, files: dict[str, bytes]
) -> None:
    assert rendered_images(version, files) == images.provider_images(version)


def test_every_version_the_devstacks_catalog_offers_is_pinned() -> None:
    offered = {entry["version"] for entry in seed.KUBERNETES_VERSIONS}
    assert offered <= set(images.KUBERNETES_VERSIONS)


def test_the_declaration_holds_the_identity_charts_images_and_every_providers_image() -> None:
    declared = images.declared()
    assert declared == sorted(set(declared))
    assert {
        "ghcr.io/zitadel/zitadel:"
        + yaml.safe_load((images.IDENTITY_CHART / "Chart.yaml").read_text())["appVersion"],
        "docker.io/library/postgres:17",
    } <= set(declared)
    for version in images.KUBERNETES_VERSIONS:
        assert images.provider_images(version) <= set(declared)
    # More versions pin more components, and the command takes them.
    more = set(images.declared([*images.KUBERNETES_VERSIONS, "v1.35.0"])) - set(declared)
    assert more == {f"registry.k8s.io/{component}:v1.35.0" for component in model.COMPONENTS}


def test_the_identity_charts_digests_agree_with_the_lock() -> None:
    """make pin-images writes the lock's digests into values.yaml: both empty today is agreement too."""
    lock = image_lock.shipped()
    values = yaml.safe_load(images.IDENTITY_VALUES.read_text())
    for path, ref in images.chart_digests().items():
        assert images.lookup(values, path) == lock.digests.get(ref, ""), ".".join(path)


def test_the_shipped_lock_is_what_the_command_writes_and_names_only_declared_images() -> None:
    lock = ImageLock.read(image_lock.LOCK)
    assert image_lock.LOCK.read_bytes() == pin_images.lock_document(lock)  # sorted, in the command's form
    assert bool(lock.digests) == bool(lock.resolved_at)  # a lock with digests says when and where from
    for ref in lock.digests:
        assert str(pin_images.ImageRef.parse(ref)) == ref


def test_the_wheel_ships_the_lock_as_the_providers_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    relative = image_lock.LOCK.relative_to(ROOT / "providers").as_posix()
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in config["package-data"]["providers"])
    assert "providers*" in config["packages"]["find"]["include"]


def test_docker_hub_references_are_asked_at_registry_1_with_library_for_official_images() -> None:
    ref = pin_images.ImageRef.parse
    assert str(ref("postgres:17")) == "docker.io/library/postgres:17"
    assert str(ref("index.docker.io/library/postgres:17")) == "docker.io/library/postgres:17"
    assert ref("docker.io/postgres:17").repository().url("manifests", "17") == (
        "https://registry-1.docker.io/v2/library/postgres/manifests/17"
    )
    assert ref("bitnami/postgresql:17").repository().path == "bitnami/postgresql"
    assert ref("quay.io/cilium/cilium:v1.19.3").repository().host == "quay.io"
    assert str(ref("localhost:5000/etcd:3.6.5-0").repository()) == "localhost:5000/etcd"
    # At a mirror: the same path under its own (a path prefix kept), as global.imageRegistry pulls it.
    mirrored = ref("docker.io/library/postgres:17").repository("mirror.example:5000/airgap")
    assert (mirrored.host, mirrored.path) == ("mirror.example:5000", "airgap/library/postgres")
    for wrong in ("registry.k8s.io/etcd", "registry.k8s.io/etcd@sha256:" + "a" * 64, "Quay.io/X:1"):
        with pytest.raises(ValueError, match="not"):
            ref(wrong)
