"""Readiness: can this replica reach the neighbours it needs to answer anything?"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from orchestrator.auth import token_validator
from orchestrator.errors import FlexPlaneError
from orchestrator.sources.protocols import KubeApi


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _kube(source: KubeApi) -> Check:
    try:
        source.ping()
    except FlexPlaneError as exc:
        return Check("management-cluster", False, exc.message)
    return Check("management-cluster", True, "reachable")


def _identity() -> Check:
    try:
        token_validator().keys.discovery()
    except FlexPlaneError as exc:
        return Check("identity", False, exc.message)
    except ValueError as exc:  # no issuer configured
        return Check("identity", False, str(exc))
    return Check("identity", True, "reachable")


def readiness(source: KubeApi) -> list[Check]:
    """Both checks, in parallel (each bounded by its own client timeout): ``source``, the management
    cluster, and the identity provider."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda check: check(), (lambda: _kube(source), _identity)))
