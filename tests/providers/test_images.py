"""The image lock as the providers read it (providers/images.py): an image the lock names is rendered at its
digest, from its own registry or a moved one (a mirror's copy has the same digest); one it does not name
stays a tag; flex.plane's own image is never pinned by it; a malformed lock is refused, naming what is
wrong. tests/packaging/test_pin_images.py renders with a lock the command wrote from a real registry."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from providers.controlplane import calico, model, network
from providers.images import ImageLock

ETCD = "sha256:" + "e" * 64
CILIUM = "sha256:" + "c" * 64
APISERVER = "sha256:" + "a" * 64
MIRROR = "registry.example.internal/airgap"
LOCK = ImageLock(
    {
        f"registry.k8s.io/{model.ETCD_IMAGE}": ETCD,
        "quay.io/cilium/cilium:v1.19.3": CILIUM,
        "registry.k8s.io/kube-apiserver:v1.34.2": APISERVER,
        # What a control plane's version does not run, whose pin changes nothing.
        "registry.k8s.io/kube-apiserver:v1.33.4": "sha256:" + "b" * 64,
    }
)
CP = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", images=LOCK)


def test_an_image_the_lock_names_is_pulled_by_its_digest_and_the_rest_by_their_tags() -> None:
    assert CP.image(model.ETCD_IMAGE) == f"registry.k8s.io/{model.ETCD_IMAGE}@{ETCD}"
    assert CP.component_image("kube-apiserver") == f"registry.k8s.io/kube-apiserver:v1.34.2@{APISERVER}"
    assert CP.component_image("kube-scheduler") == "registry.k8s.io/kube-scheduler:v1.34.2"
    cilium = network.cilium_images(CP)
    assert cilium.agent == f"quay.io/cilium/cilium:v1.19.3@{CILIUM}"
    assert cilium.operator == "quay.io/cilium/operator-generic:v1.19.3"
    assert calico.calico_images(CP).node == f"quay.io/calico/node:{calico.calico_release(CP.version)}"
    assert "@" not in CP.flexplane_image()


def test_a_moved_registry_keeps_each_pinned_images_digest_after_its_own_reference() -> None:
    moved = dataclasses.replace(CP, registry=MIRROR)
    assert moved.image(model.ETCD_IMAGE) == f"{MIRROR}/{model.ETCD_IMAGE}@{ETCD}"
    assert network.cilium_images(moved).agent == f"{MIRROR}/cilium/cilium:v1.19.3@{CILIUM}"
    assert moved.image(model.KONNECTIVITY_SERVER_IMAGE) == f"{MIRROR}/{model.KONNECTIVITY_SERVER_IMAGE}"


def test_a_control_plane_reads_the_lock_the_package_ships_unless_given_one() -> None:
    shipped = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2").images
    assert shipped == ImageLock.read()
    assert ImageLock.read().pin("registry.k8s.io/pause:3.10") == "registry.k8s.io/pause:3.10"


@pytest.mark.parametrize(
    ("images", "refused"),
    [
        ({"registry.k8s.io/etcd:3.6.5-0": "sha256:abc"}, "is not sha256:<64 hex digits>"),
        ({"registry.k8s.io/etcd:3.6.5-0": "sha512:" + "a" * 128}, "is not sha256:<64 hex digits>"),
        ({"etcd:3.6.5-0": ETCD}, "is not an image reference"),
        ({f"registry.k8s.io/etcd@{ETCD}": ETCD}, "is not an image reference"),
    ],
)
def test_a_malformed_lock_is_refused_naming_what_is_wrong(
    images: dict[str, str], refused: str, tmp_path: Path
) -> None:
    path = tmp_path / "images.lock.json"
    path.write_text(json.dumps({"images": images, "resolved": None}))
    with pytest.raises(ValueError, match=refused):
        ImageLock.read(path)
