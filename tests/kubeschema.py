"""Kubernetes' own schemas (kubernetes-validate's copies, strict: no unknown fields) for the manifests the
tests render. Each schema is read and compiled once per process: ``kubernetes_validate.validate`` reads and
parses the schema and its definitions file again on every call, which made validating a chart's manifests
cost seconds."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import jsonschema
import kubernetes_validate
from kubernetes_validate.utils import all_versions, major_minor, schema_contents
from referencing import Registry, Resource


def schema_version() -> str:
    """Kubernetes 1.33, or the newest schema kubernetes-validate ships when it has none for 1.33."""
    shipped = {major_minor(version) for version in all_versions()}
    return "1.33" if "1.33" in shipped else major_minor(kubernetes_validate.latest_version())


def shipped(kubernetes: str) -> bool:
    """Whether kubernetes-validate ships the schemas of a Kubernetes minor version (``1.34``)."""
    return kubernetes in {major_minor(version) for version in all_versions()}


@functools.cache
def _schema_dir(wanted: str) -> str:
    version = [v for v in all_versions() if major_minor(v) <= wanted][-1]
    return f"kubernetes-json-schema/v{version}-local-strict"


@functools.cache
def _definitions(wanted: str) -> Registry:
    definitions = schema_contents(f"{_schema_dir(wanted)}/_definitions.json", wanted)
    registry: Registry = Resource.from_contents(definitions) @ Registry()
    return registry


@functools.cache
def _validator(kind: str, api_version: str, wanted: str) -> jsonschema.protocols.Validator | None:
    """The validator of one kind, as kubernetes-validate finds its file; None when it has none."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = schema_contents(f"{_schema_dir(wanted)}/{kind.lower()}-{group_version}.json", wanted)
    except FileNotFoundError:
        return None
    registry = Resource.from_contents(schema) @ _definitions(wanted)
    validator: jsonschema.protocols.Validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return validator


def invalid(manifests: Iterable[dict[str, Any]], kubernetes: str | None = None) -> list[str]:
    """What Kubernetes' schemas refuse, one line per manifest refused: those of ``kubernetes`` (a minor
    version, ``1.34``) when given, else of :func:`schema_version`."""
    wanted = kubernetes or schema_version()
    failures = []
    for manifest in manifests:
        name = f"{manifest['kind']}/{manifest['metadata']['name']}"
        validator = _validator(manifest["kind"], manifest["apiVersion"], wanted)
        if validator is None:
            failures.append(f"{name}: no schema for {manifest['apiVersion']} {manifest['kind']}")
            continue
        error = jsonschema.exceptions.best_match(validator.iter_errors(manifest))
        if error is not None:
            failures.append(f"{name} at {'.'.join(map(str, error.path))}: {error.message}")
    return failures
