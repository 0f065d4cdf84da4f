"""The portal's pages from this process, served over HTTP on loopback (``tests/portal/served.py``) on the
light world (``tests/orchestrator/lightworld.py``): alice (VDC demo), bob (VDC other) and admin signed in as
the portal's login records them. A module's tests share one light world, as a session's share the
devstack's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer, in_process
from tests.orchestrator.lightworld import LightWorld
from tests.portal.served import LightPortal, served


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    running = LocalIssuer()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def tenant_clusters() -> FakeClusterApi:
    return FakeClusterApi()


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightWorld]:
    with LightWorld(tmp_path_factory.mktemp("light")) as running:
        yield running


@pytest.fixture(scope="module")
def api(issuer: LocalIssuer, light: LightWorld, tenant_clusters: FakeClusterApi) -> Iterator[InProcessApi]:
    with in_process(issuer, light.kube, light.proxmox, tenant_clusters) as running:
        yield running


@pytest.fixture(scope="module")
def site(api: InProcessApi, light: LightWorld) -> Iterator[LightPortal]:
    with served(light) as portal:
        yield portal


@pytest.fixture(scope="module")
def alice(site: LightPortal) -> requests.Session:
    return site.session("alice")


@pytest.fixture(scope="module")
def bob(site: LightPortal) -> requests.Session:
    return site.session("bob")


@pytest.fixture(scope="module")
def admin(site: LightPortal) -> requests.Session:
    return site.session("admin")
