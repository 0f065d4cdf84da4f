"""Fixtures for the development identity provider's tests: real provider processes on loopback; and how the
fake zones' tests call a fake Proxmox's API."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import requests

from devstack import seed
from devstack.fakezones import TOKEN_ID, FakeZones
from devstack.identity.process import IdentityProvider
from devstack.net import free_port
from tests import addresses

IDENTITY_HOST = addresses.address(addresses.IDENTITY_SUITE, 2)
PORTAL_REDIRECT_URI = "http://localhost:8765/oidc/callback/"
PORTAL_POST_LOGOUT_REDIRECT_URI = "http://localhost:8765/signed-out/"
PORTAL_CLIENT_SECRET = "portal-secret-for-tests"

# The devstack's own users: the identity provider is tested with what it serves in make dev.
USERS: list[dict[str, Any]] = seed.USERS

StartIdentity = Callable[..., IdentityProvider]


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
    """One provider with the devstack's users and a portal client, shared by a test module."""
    provider = IdentityProvider.start(
        tmp_path_factory.mktemp("identity"),
        IDENTITY_HOST,
        free_port(IDENTITY_HOST),
        USERS,
        portal_redirect_uris=[PORTAL_REDIRECT_URI],
        portal_client_secret=PORTAL_CLIENT_SECRET,
        portal_post_logout_redirect_uris=[PORTAL_POST_LOGOUT_REDIRECT_URI],
    )
    with provider:
        yield provider


@pytest.fixture
def start_identity() -> Iterator[StartIdentity]:
    """Start providers of a test's own (on a data dir and port of its choice); all stop at the end."""
    started: list[IdentityProvider] = []

    def start(
        data_dir: Path, port: int, users: Sequence[Mapping[str, Any]] = USERS, **options: Any
    ) -> IdentityProvider:
        provider = IdentityProvider.start(data_dir, IDENTITY_HOST, port, users, **options)
        started.append(provider)
        return provider

    yield start
    for provider in started:
        provider.stop()


def pve_api(
    fakes: FakeZones, zone: str, method: str, path: str, node: str = "pve1", /, **data: Any
) -> requests.Response:
    """A call to the API of a fake zone's node, as the agent makes it (a GET's data in the query)."""
    return requests.request(
        method,
        f"{fakes[zone].url(node)}/api2/json{path}",
        params=data if method == "GET" else None,
        data=data if method != "GET" else None,
        headers={"Authorization": f"PVEAPIToken={TOKEN_ID}=s3cret"},
        verify=fakes.certfile,
        timeout=10,
    )
