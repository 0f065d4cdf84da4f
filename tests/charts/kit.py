"""What the chart tests share: a rendered chart's manifests, as the documents of its YAML templates."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from tests.kubeschema import schema_version

Manifest = dict[str, Any]


def manifests(templates: dict[str, str]) -> list[Manifest]:
    """Every document of the rendered YAML templates, in the templates' order (empty ones left out)."""
    return [
        doc
        for path, text in sorted(templates.items())
        if path.endswith((".yaml", ".yml"))
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def kinds(rendered: list[Manifest]) -> set[str]:
    return {m["kind"] for m in rendered}


CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def containers(node: Any) -> Iterator[dict[str, Any]]:
    """Every container of a manifest, wherever a pod spec sits in it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONTAINER_LISTS and isinstance(value, list):
                yield from value
            else:
                yield from containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from containers(item)


def sole_container(spec: dict[str, Any]) -> dict[str, Any]:
    """The container of a pod spec that must have exactly one."""
    (container,) = spec["containers"]
    return dict(container)


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """A container's environment: plain values as strings, references as their valueFrom."""
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in container["env"]}


def mounted(
    spec: dict[str, Any], container: dict[str, Any], name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The volume ``name`` of a pod spec, and its one mount in the container: (mount, volume)."""
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == name]
    (volume,) = [v for v in spec["volumes"] if v["name"] == name]
    return mount, volume


def read_only_secret(spec: dict[str, Any], container: dict[str, Any], name: str) -> tuple[str, set[str]]:
    """The Secret volume ``name`` of a pod spec, mounted read-only in the container: the Secret's name,
    and the paths of the files it puts there."""
    mount, volume = mounted(spec, container, name)
    assert mount["readOnly"] is True
    return volume["secret"]["secretName"], {
        f"{mount['mountPath']}/{i['path']}" for i in volume["secret"]["items"]
    }


def loaded(chart: Path) -> Any:
    """A module's ``chart`` fixture: the chart at ``chart``, loaded once for the module."""

    @pytest.fixture(scope="module", name="chart")
    def fixture() -> Iterator[helm_python.Chart]:
        with helm_python.Chart.load(chart) as chart_loaded:
            yield chart_loaded

    return fixture


def rendered_once(
    values: dict[str, dict[str, Any]], render: Callable[[helm_python.Chart, dict[str, Any]], dict[str, str]]
) -> Any:
    """A module's ``renders`` fixture: every set of ``values``, rendered by ``render`` once for the module."""

    @pytest.fixture(scope="module", name="renders")
    def fixture(chart: helm_python.Chart) -> dict[str, list[Manifest]]:
        return {name: manifests(render(chart, each)) for name, each in values.items()}

    return fixture


def rendering(values: dict[str, dict[str, Any]]) -> Any:
    """A module's ``rendered`` fixture: the manifests of each set of ``values`` in turn (each test that asks
    for it runs once a set), from the module's ``renders`` (every set, rendered once for the module)."""

    @pytest.fixture(params=sorted(values), name="rendered")
    def fixture(request: pytest.FixtureRequest, renders: dict[str, list[Manifest]]) -> list[Manifest]:
        return renders[request.param]

    return fixture


def assert_lints_clean(chart: Path, values: dict[str, Any], namespace: str) -> None:
    """``helm lint --strict`` of the chart with these values: no error, and no warning or worse."""
    report = helm_python.lint(
        chart, values, strict=True, namespace=namespace, kube_version=f"v{schema_version()}.0"
    )
    assert report["errors"] == [], report
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def assert_schema_is_exactly_the_values(chart: helm_python.Chart) -> None:
    """The chart's values.schema.json describes every value of its values.yaml, and no other."""
    schema = chart.schema
    assert schema is not None
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(chart.values)


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base`` as Helm lays values on values: maps merge key by key, anything else
    (a list, a scalar) replaces."""
    out = dict(base)
    for key, value in over.items():
        current = out.get(key)
        out[key] = merged(current, value) if isinstance(current, dict) and isinstance(value, dict) else value
    return out
