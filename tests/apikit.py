"""Helpers for talking to the orchestrator under test over HTTP, as any API client would, and for waiting
on a state (``eventually``) rather than for a fixed time."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol, TypeVar

import requests

from devstack.fakezones import FakeZones
from devstack.world import World

T = TypeVar("T")


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    headers: requests.structures.CaseInsensitiveDict[str]

    @property
    def data(self) -> Any:
        return self.body.get("data")

    @property
    def errors(self) -> list[dict[str, Any]]:
        return list(self.body.get("errors") or [])

    @property
    def codes(self) -> list[str]:
        return [e.get("extensions", {}).get("code") for e in self.errors]


class Zones(Protocol):
    """Where the tests read fake Proxmox's own state: the devstack's world, or the light world in the test's
    own process (``tests.orchestrator.lightworld.LightWorld``)."""

    @property
    def fakes(self) -> FakeZones: ...


class Api(Protocol):
    """What the tests ask of the API: ``GraphQL`` over HTTP to the world's orchestrator, or the API in the
    test's own process (``tests.orchestrator.inprocess.InProcessApi``)."""

    def token(self, user: str) -> str: ...

    def raw(
        self,
        query: str,
        *,
        headers: dict[str, str] | None = None,
        variables: dict[str, Any] | None = None,
        timeout: float = 30,
    ) -> Answer: ...

    def __call__(
        self, query: str, *, user: str, vdc: str | None = None, variables: dict[str, Any] | None = None
    ) -> Answer: ...


class AsUser(ABC):
    """An ``Api`` from its ``token`` and ``raw``: a query as one of the devstack's users, in a VDC or none."""

    @abstractmethod
    def token(self, user: str) -> str: ...

    @abstractmethod
    def raw(
        self,
        query: str,
        *,
        headers: dict[str, str] | None = None,
        variables: dict[str, Any] | None = None,
        timeout: float = 30,
    ) -> Answer: ...

    def __call__(
        self, query: str, *, user: str, vdc: str | None = None, variables: dict[str, Any] | None = None
    ) -> Answer:
        headers = {"Authorization": f"Bearer {self.token(user)}"}
        if vdc is not None:
            headers["FlexPlane-VDC-ID"] = vdc
        return self.raw(query, headers=headers, variables=variables)


class GraphQL(AsUser):
    """POSTs queries to the orchestrator's /graphql with a user's token."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.url = f"{world.url}/graphql"
        self._token = cache(world.token)

    def token(self, user: str) -> str:
        return self._token(user)

    def raw(
        self,
        query: str,
        *,
        headers: dict[str, str] | None = None,
        variables: dict[str, Any] | None = None,
        timeout: float = 30,
    ) -> Answer:
        response = requests.post(
            self.url,
            json={"query": query, "variables": variables or {}},
            headers=headers or {},
            timeout=timeout,
        )
        return Answer(response.status_code, response.json(), response.headers)


def eventually(
    check: Callable[[], T], timeout: float, what: str | Callable[[], str], interval: float = 0.05
) -> T:
    """Poll ``check`` until it returns something true, and return that; after ``timeout`` seconds fail,
    saying that ``what`` did not happen (a callable: what to say then, e.g. the last state seen)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"{said} did not happen within {timeout:g} s")
        time.sleep(interval)


def vdc_namespace(core: Any, vdc: str) -> None:
    """The management cluster's namespace of a VDC's Kubernetes clusters (``vdc-<vdc>``, labelled with the
    VDC), as the orchestrator makes it with the VDC's first cluster; kept if it exists. ``core``: the
    official client's CoreV1Api."""
    from kubernetes import client

    # orchestrator.models.clusters' namespace_of and VDC_LABEL, written out: importing the models needs
    # Django set up, which a benchmark's process is not.
    meta = client.V1ObjectMeta(name=f"vdc-{vdc}", labels={"flexplane.io/vdc": vdc})
    try:
        core.create_namespace(client.V1Namespace(metadata=meta))
    except client.ApiException as error:
        if error.status != 409:
            raise
