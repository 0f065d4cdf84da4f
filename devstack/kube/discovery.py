"""What the cluster says about itself: ``/version``, its health checks, API discovery, and the resources it
knows.

The built-in resources are kmock's bundled list (a recent cluster's); a custom resource is known,
to discovery and to requests, while a CustomResourceDefinition declares it (:mod:`devstack.kube.crds`).
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import kmock

from devstack.kube.crds import Served

# The /version document: the Kubernetes release that the kubernetes client in use (37.x) speaks.
SERVER_VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0+flexplane-devstack",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-08-01T00:00:00Z",
    "goVersion": "go1.26.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

CUSTOM_RESOURCE_VERBS = frozenset(
    {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)


# The discovery paths and what answers each: kmock's scaffold's protected handlers (it has no public way to
# reach them), or the /version document. In kmock's order: the first that matches the path answers.
_ROUTES: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(r"/version/?"), None),
    (re.compile(r"/apis/?"), "_serve_apis"),
    (re.compile(r"/apis/[^/]+/?"), "_serve_group"),
    (re.compile(r"/apis/[^/]+/[^/]+/?"), "_serve_version"),
    (re.compile(r"/api/?"), "_serve_api"),
    (re.compile(r"/api/[^/]+/?"), "_serve_version"),
    (re.compile(r"/?"), "_serve_root"),
)

Handler = Callable[[kmock.Request], Awaitable[Any]]

# An API server's health checks: always ok here (the emulator has no etcd or informers to be unready).
HEALTH_PATHS = frozenset({"/readyz", "/livez", "/healthz"})


def is_health_check(request: kmock.Request) -> bool:
    """Whether ``request`` asks ``/readyz``, ``/livez`` or ``/healthz``: answered ``ok`` as plain text."""
    return request.method == kmock.method.GET and request.url.path.rstrip("/") in HEALTH_PATHS


def _handler(emulator: kmock.KubernetesScaffold, name: str | None) -> Handler | Mapping[str, str]:
    return SERVER_VERSION if name is None else getattr(emulator, name)


def add_discovery_routes(emulator: kmock.KubernetesScaffold) -> None:
    """Answer ``/version`` and discovery (``/``, ``/api``, ``/apis`` and below) as fallback reactions, for
    kmock's dispatch when a test added reactions of its own (:func:`answer` serves them otherwise).

    kmock's scaffold registers these routes itself along with a catch-all 404 that the emulator cannot
    have, and without trailing slashes, so they are registered here instead.
    """
    for pattern, name in _ROUTES:
        emulator.fallback["get", pattern] << _handler(emulator, name)


async def answer(emulator: kmock.KubernetesScaffold, request: kmock.Request) -> Mapping[str, Any] | None:
    """The discovery document a GET asks for, as the fallback reactions answer it; None when the path
    is none of discovery's. Straight to the handler: kmock's dispatch applies every reaction's filters to
    every request, which cost discovery's callers (kopf scans it) most of the emulator's time."""
    if request.method != kmock.method.GET:
        return None
    for pattern, name in _ROUTES:
        if pattern.fullmatch(request.url.path):
            handler = _handler(emulator, name)
            document: Mapping[str, Any] = handler if isinstance(handler, Mapping) else await handler(request)
            return document
    return None


def load_builtin_resources(resources: kmock.ResourcesArray) -> frozenset[kmock.resource]:
    """Make a real cluster's built-in resources known in ``resources``; return them."""
    bundled = _bundled_resources()
    for resource in bundled:
        resources[resource] = attrs.evolve(bundled[resource])  # a copy: each emulator may change its own
    return frozenset(kmock.resource(resource) for resource in bundled)


def register(resources: kmock.ResourcesArray, served: Served) -> None:
    """Make a custom resource known to discovery, as its CRD declares it."""
    resources[served.resource] = kmock.ResourceInfo(
        kind=served.kind,
        singular=served.singular,
        namespaced=served.namespaced,
        verbs=set(CUSTOM_RESOURCE_VERBS),
        shortnames=set(served.short_names),
        categories=set(served.categories),
        subresources=set(served.subresources),
    )


def unregister(resources: kmock.ResourcesArray, resource: kmock.resource) -> None:
    """Forget a custom resource whose CRD went away (or stopped serving its version)."""
    if resource in resources:
        del resources[resource]


def builtin(resources: kmock.ResourcesArray, resource: kmock.resource) -> Served:
    """A built-in resource as served: kind, scope, and its ``status`` subresource if it has one."""
    info = resources[resource]
    return Served(
        resource=resource,
        kind=str(info.kind),
        namespaced=bool(info.namespaced),
        subresources=frozenset(info.subresources) & {"status"},
    )


@functools.cache
def _bundled_resources() -> kmock.ResourcesArray:
    """kmock's bundled resources, read once per process."""
    bundled = kmock.ResourcesArray()
    with warnings.catch_warnings():
        # kmock reads its bundled file with importlib.resources.read_binary, which Python 3.11 and
        # 3.12 deprecate (3.13 withdraws the deprecation): a warning about kmock, nothing to act on.
        warnings.simplefilter("ignore", DeprecationWarning)
        bundled.load_bundled()
    return bundled
