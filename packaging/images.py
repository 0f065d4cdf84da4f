"""Every third-party image flex.plane runs, declared once: what ``make pin-images`` (pin_images.py) resolves
to digests and writes into the image lock (providers/images.lock.json).

Gathered from where the product names them, never written out again here:

- the hosted control planes and what the control-plane provider installs in tenant clusters
  (providers/controlplane): etcd, Konnectivity's server and agent, CoreDNS, the CSI driver's SIG Storage
  sidecars, and the Cilium and Calico releases pinned per Kubernetes minor, each as the provider renders
  it (a ControlPlane at the default registry with no lock renders exactly the reference as published);
- the Kubernetes components (kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy), whose
  tag is the tenant cluster's version: pinned for :data:`KUBERNETES_VERSIONS`, the versions the devstack's
  catalog offers (devstack/seed.py; tests/packaging/test_images.py holds the two together), and for more
  with ``--kubernetes``;
- the identity chart's Zitadel (its tag the chart's appVersion) and PostgreSQL, from its values.yaml, where
  ``make pin-images`` writes their digests back (:data:`CHART_DIGESTS`).

flex.plane's own image is not here: its tag is the release's, and its digest is the build's.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from providers.controlplane import calico, model, network, storage, tenant  # noqa: E402
from providers.images import ImageLock  # noqa: E402

# The tenant clusters' versions whose component images are pinned: the devstack catalog's.
KUBERNETES_VERSIONS = ("v1.33.4", "v1.34.2")
IDENTITY_CHART = ROOT / "charts" / "identity"
IDENTITY_VALUES = IDENTITY_CHART / "values.yaml"
# The identity chart's images and where its values.yaml holds each one's digest (a path of keys).
ZITADEL_DIGEST = ("zitadel", "image", "digest")
POSTGRESQL_DIGEST = ("database", "postgresql", "image", "digest")


def _unpinned(version: str) -> model.ControlPlane:
    """A control plane at the default registry with an empty lock: it renders references as published."""
    return model.ControlPlane(vdc="images", cluster="images", version=version, images=ImageLock())


def provider_images(version: str) -> set[str]:
    """What the control-plane provider runs for a tenant cluster of ``version``."""
    cp = _unpinned(version)
    fixed = [model.ETCD_IMAGE, model.KONNECTIVITY_SERVER_IMAGE, model.KONNECTIVITY_AGENT_IMAGE]
    return {
        *(cp.image(path) for path in [*fixed, tenant.COREDNS_IMAGE, *storage.IMAGES]),
        *(cp.component_image(component) for component in model.COMPONENTS),
        *dataclasses.astuple(network.cilium_images(cp)),
        *dataclasses.astuple(calico.calico_images(cp)),
    }


def _values(path: Path) -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return values


def chart_digests(values_path: Path = IDENTITY_VALUES) -> dict[tuple[str, ...], str]:
    """The identity chart's third-party images by where values.yaml holds their digests: Zitadel's at the
    chart's appVersion (unless values.yaml names a tag), PostgreSQL's at its tag."""
    values = _values(values_path)
    chart = yaml.safe_load((values_path.parent / "Chart.yaml").read_text(encoding="utf-8"))
    zitadel = values["zitadel"]["image"]
    postgresql = values["database"]["postgresql"]["image"]
    return {
        ZITADEL_DIGEST: f"{zitadel['repository']}:{zitadel['tag'] or chart['appVersion']}",
        POSTGRESQL_DIGEST: f"{postgresql['repository']}:{postgresql['tag']}",
    }


def declared(
    kubernetes: Iterable[str] = KUBERNETES_VERSIONS, values_path: Path = IDENTITY_VALUES
) -> list[str]:
    """Every third-party image, sorted: the providers' for each Kubernetes version, and the identity
    chart's."""
    images: set[str] = set(chart_digests(values_path).values())
    for version in kubernetes:
        images |= provider_images(version)
    return sorted(images)


def lookup(values: dict[str, Any], path: tuple[str, ...]) -> Any:
    """The value at a path of keys (None where the path ends early)."""
    node: Any = values
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node
