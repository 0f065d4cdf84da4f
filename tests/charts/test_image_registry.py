"""Air-gapped and pinned: one value per chart, ``global.imageRegistry``, moves every image the chart runs
(each image's registry replaced, its path and tag kept); our images' tags are the project's version;
a digest, when given, is pinned after the tag; a tag without a digest is pulled ``Always``.

Every rendered manifest is walked generically: any ``containers``, ``initContainers`` or
``ephemeralContainers`` list anywhere in it (Deployments, StatefulSets, Jobs, hooks, CronJobs alike).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from tests.charts.kit import Manifest, containers, manifests, merged

ROOT = Path(__file__).resolve().parents[2]
CHARTS = ROOT / "charts"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
ZITADEL = yaml.safe_load((CHARTS / "identity" / "Chart.yaml").read_text())["appVersion"]
MIRROR = "registry.example.internal"
MOVED = {"global": {"imageRegistry": MIRROR}}
DIGEST = "sha256:" + "ab" * 32

# What each chart must be given to render (the Secrets made once; the hub's endpoint), and the
# example values plus what turns every optional workload on, so that every workload is walked.
REQUIRED: dict[str, dict[str, Any]] = {
    "flextenant": {
        "secretKey": {"existingSecret": "flexplane-secret-key"},
        "agentCA": {"secretName": "flexplane-agent-ca"},
        "mesh": {"hubEndpoint": "203.0.113.7:51820"},
        "doctor": {"enabled": True},
    },
    "identity": {
        "external": {"domain": "id.example.com"},
        "portal": {"url": "https://cloud.example.com"},
        "masterkey": {"existingSecret": "identity-secrets"},
        "firstInstance": {"admin": {"existingSecret": "identity-secrets", "key": "admin-password"}},
        "database": {
            "user": {"existingSecret": "identity-secrets"},
            "admin": {"existingSecret": "identity-secrets"},
        },
    },
    "providers": {
        "secretKey": {"existingSecret": "flexplane-secret-key"},
        "sni": {"enabled": True, "domain": "k8s.example.com"},
    },
}


def example(chart: str) -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHARTS / chart / "ci" / "example-values.yaml").read_text())
    return values


@pytest.fixture(scope="module")
def loaded() -> Iterator[dict[str, helm_python.Chart]]:
    charts = {name: helm_python.Chart.load(str(CHARTS / name)) for name in REQUIRED}
    yield charts
    for chart in charts.values():
        chart.close()


def render(charts: dict[str, helm_python.Chart], chart: str, *layers: dict[str, Any]) -> list[Manifest]:
    values = REQUIRED[chart]
    for layer in layers:
        values = merged(values, layer)
    return manifests(charts[chart].render(values, name="fp", namespace="flexplane", is_install=True))


def images(rendered: list[Manifest]) -> dict[str, str]:
    """Every container's image, by ``kind/name/container``."""
    return {
        f"{m['kind']}/{m['metadata']['name']}/{c['name']}": c["image"]
        for m in rendered
        for c in containers(m)
    }


@pytest.mark.parametrize("chart", sorted(REQUIRED))
@pytest.mark.parametrize("base", ["defaults", "example"])
def test_the_registry_setting_moves_every_image_of_every_workload(
    loaded: dict[str, helm_python.Chart], chart: str, base: str
) -> None:
    layers = [example(chart)] if base == "example" else []
    found = images(render(loaded, chart, *layers, MOVED))
    assert found, f"{chart} renders no container"
    assert {where: image for where, image in found.items() if not image.startswith(MIRROR + "/")} == {}


def test_the_registry_replaces_only_the_registry_keeping_each_path_and_tag(
    loaded: dict[str, helm_python.Chart],
) -> None:
    moved = set(images(render(loaded, "identity", MOVED)).values())
    assert moved == {
        f"{MIRROR}/zitadel/zitadel:{ZITADEL}",
        f"{MIRROR}/library/postgres:17",
        f"{MIRROR}/flexplane/flexplane:{VERSION}",
    }
    assert set(images(render(loaded, "flextenant", MOVED)).values()) == {
        f"{MIRROR}/flexplane/flexplane:{VERSION}"
    }


@pytest.mark.parametrize(
    ("repository", "image"),
    [
        ("ghcr.io/flexplane/flexplane", f"{MIRROR}/mirror/flexplane/flexplane:{VERSION}"),
        ("localhost:5000/flexplane", f"{MIRROR}/mirror/flexplane:{VERSION}"),
        ("flexplane/flexplane", f"{MIRROR}/mirror/flexplane/flexplane:{VERSION}"),  # Docker Hub's
        ("postgres", f"{MIRROR}/mirror/postgres:{VERSION}"),
    ],
)
def test_a_repository_with_or_without_a_registry_lands_under_the_mirror_and_its_prefix(
    loaded: dict[str, helm_python.Chart], repository: str, image: str
) -> None:
    values = {"global": {"imageRegistry": f"{MIRROR}/mirror/"}, "image": {"repository": repository}}
    assert set(images(render(loaded, "providers", values)).values()) == {image}


def test_the_providers_move_the_hosted_control_planes_images_with_the_same_setting(
    loaded: dict[str, helm_python.Chart],
) -> None:
    def setting(rendered: list[Manifest]) -> list[str]:
        return [
            var["value"]
            for c in containers(rendered)
            for var in c.get("env", [])
            if var["name"] == "FLEXPLANE_PROVIDERS_IMAGE_REGISTRY"
        ]

    assert setting(render(loaded, "providers", MOVED)) == [MIRROR]
    assert setting(render(loaded, "providers")) == []  # the providers' default: registry.k8s.io


def test_our_images_are_tagged_with_the_projects_version() -> None:
    charts = {name: yaml.safe_load((CHARTS / name / "Chart.yaml").read_text()) for name in REQUIRED}
    assert {name: chart["version"] for name, chart in charts.items()} == dict.fromkeys(REQUIRED, VERSION)
    # The identity chart's appVersion is Zitadel's; its bootstrap job's tag defaults to the chart's version.
    assert charts["flextenant"]["appVersion"] == VERSION
    assert charts["providers"]["appVersion"] == VERSION


@pytest.mark.parametrize("chart", sorted(REQUIRED))
def test_a_tag_without_a_digest_is_pulled_always_so_a_moved_tag_is_noticed(
    loaded: dict[str, helm_python.Chart], chart: str
) -> None:
    policies = {c["image"]: c["imagePullPolicy"] for c in containers(render(loaded, chart))}
    assert policies
    assert set(policies.values()) == {"Always"}


def test_digests_are_pinned_after_the_tag_of_every_image_that_has_one(
    loaded: dict[str, helm_python.Chart],
) -> None:
    pinned: dict[str, Any] = {"image": {"digest": DIGEST}}
    identity: dict[str, Any] = {
        "zitadel": pinned,
        "bootstrap": pinned,
        "database": {"postgresql": pinned},
    }
    for chart, values in [("flextenant", pinned), ("providers", pinned), ("identity", identity)]:
        found = images(render(loaded, chart, values, MOVED))
        assert {w: i for w, i in found.items() if not i.endswith(f"@{DIGEST}")} == {}, chart
    assert set(images(render(loaded, "identity", identity)).values()) == {
        f"ghcr.io/zitadel/zitadel:{ZITADEL}@{DIGEST}",
        f"docker.io/library/postgres:17@{DIGEST}",
        f"ghcr.io/flexplane/flexplane:{VERSION}@{DIGEST}",
    }


@pytest.mark.parametrize("registry", ["https://registry.example.internal", "registry.example.internal/a b"])
def test_a_registry_that_is_no_registry_is_refused(
    loaded: dict[str, helm_python.Chart], registry: str
) -> None:
    for chart in REQUIRED:
        with pytest.raises(helm_python.HelmError, match="imageRegistry"):
            render(loaded, chart, {"global": {"imageRegistry": registry}})
