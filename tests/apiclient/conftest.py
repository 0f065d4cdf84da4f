"""The client against the API in this process: the light world's fixtures (tests/orchestrator/api/light),
with the client's HTTP carried to Django's WSGI application in this process (``httpx.WSGITransport``)
rather than over a socket: every layer of the API runs, from the view and token validation down."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler

from apiclient import FlexPlane
from tests.orchestrator.api.light.conftest import api, issuer, kube, light, tenant_clusters, vm_name, zitadel
from tests.orchestrator.inprocess import InProcessApi

__all__ = ["api", "issuer", "kube", "light", "tenant_clusters", "vm_name", "zitadel"]

# The origin the client is given: the transport answers for any, the API's view sees this host.
ORIGIN = "http://testserver"


@pytest.fixture(scope="module")
def transport() -> httpx.WSGITransport:
    return httpx.WSGITransport(app=WSGIHandler())


@pytest.fixture
def client_of(api: InProcessApi, transport: httpx.WSGITransport) -> Iterator[Callable[..., FlexPlane]]:
    """``client_of("alice", vdc="demo")``: a client as one of the devstack's users (a token of the light
    world's issuer), in a VDC or none; closed after the test."""
    made: list[FlexPlane] = []

    def make(user: str, vdc: str | None = None) -> FlexPlane:
        client = FlexPlane(ORIGIN, api.token(user), vdc=vdc, transport=transport, poll_interval=0.05)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
