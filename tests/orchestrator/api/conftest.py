"""The API in this process, on a management cluster and zones in memory seeded as the devstack's world
is (its catalog, VDCs and VMs): fresh for every test, so that no test sees another's writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.orchestrator.fakekube import FakeKube, seeded
from tests.orchestrator.fakeproxmox import FakeProxmox, seeded_zones
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer, in_process


@pytest.fixture(scope="session")
def issuer() -> Iterator[LocalIssuer]:
    running = LocalIssuer()
    yield running
    running.stop()


@pytest.fixture
def kube() -> FakeKube:
    return seeded()


@pytest.fixture
def zones() -> FakeProxmox:
    return seeded_zones()


@pytest.fixture
def api(issuer: LocalIssuer, kube: FakeKube, zones: FakeProxmox) -> Iterator[InProcessApi]:
    with in_process(issuer, kube, zones) as running:
        yield running
