"""The chart deploys, by default, the image ``make image`` builds: the same repository and tag.

``make image`` names the image after the Containerfile's ``ARG IMAGE`` and tags it with the project's
version (pyproject.toml, and the build's own version as a second tag); the chart's default is
``image.repository`` with ``image.tag`` empty, meaning the chart's appVersion.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import helm_python
import yaml

from tests.charts.test_flextenant_chart import REQUIRED

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "flextenant"
CONTAINERFILE = ROOT / "packaging" / "image" / "orchestrator" / "Containerfile"


def built_image() -> str:
    """The reference ``make image`` gives the image: the Containerfile's IMAGE and the project's version."""
    found = re.search(r"(?m)^ARG IMAGE=(\S+)$", CONTAINERFILE.read_text(encoding="utf-8"))
    assert found, "the Containerfile declares ARG IMAGE=<repository>"
    with (ROOT / "pyproject.toml").open("rb") as handle:
        version = tomllib.load(handle)["project"]["version"]
    return f"{found.group(1)}:{version}"


def test_the_charts_default_image_is_the_one_make_image_builds() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))

    assert f"{values['image']['repository']}:{values['image']['tag'] or chart['appVersion']}" == built_image()


def test_the_rendered_deployment_runs_the_image_make_image_builds() -> None:
    templates = helm_python.Chart.load(str(CHART)).render(
        REQUIRED, name="fp", namespace="cloud-system", is_install=True
    )
    documents = [
        doc
        for name, text in templates.items()
        if name.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    ]
    deployments = [doc for doc in documents if doc["kind"] == "Deployment"]
    (deployment,) = [
        d for d in deployments if d["metadata"]["labels"]["app.kubernetes.io/component"] == "orchestrator"
    ]

    containers = deployment["spec"]["template"]["spec"]["containers"]
    (container,) = [c for c in containers if c["name"] == "orchestrator"]
    assert container["image"] == built_image()
    # Every process of the chart runs that image (the gateway reconciler too).
    assert {c["image"] for d in deployments for c in d["spec"]["template"]["spec"]["containers"]} == {
        built_image()
    }
    assert container["command"] == ["flexplane-serve"]
