"""The API in this process on the light world (tests/orchestrator/lightworld.py): the devstack's fake Proxmox
clusters served from the test's process, reached by the orchestrator's own Proxmox source through agents
in this process; and Zitadel in memory (tests/orchestrator/fakezitadel.py), whose roles the tokens carry.
A module's tests share one light world and one Zitadel, as a session's share the devstack's."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from orchestrator.models.clusters import namespace_of
from orchestrator.services.clusters import objects
from tests.orchestrator.fakekube import FakeClusterApi, FakeKube
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer, in_process
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import vm_names


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightWorld]:
    with LightWorld(tmp_path_factory.mktemp("light")) as running:
        yield running


@pytest.fixture(scope="module")
def kube(light: LightWorld) -> FakeKube:
    """The light world's management cluster, where the API stores what it makes."""
    return light.kube


@pytest.fixture(scope="module")
def tenant_clusters() -> FakeClusterApi:
    return FakeClusterApi()


@pytest.fixture(scope="module")
def zitadel() -> FakeZitadel:
    """Zitadel as the devstack's identity provider is seeded: its users, organizations and their roles."""
    return FakeZitadel.seeded()


@pytest.fixture(scope="module")
def issuer(zitadel: FakeZitadel) -> Iterator[LocalIssuer]:
    """Tokens with the roles ``zitadel`` holds when each is minted."""
    running = LocalIssuer(roles=zitadel)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def api(
    issuer: LocalIssuer, light: LightWorld, tenant_clusters: FakeClusterApi, zitadel: FakeZitadel
) -> Iterator[InProcessApi]:
    with in_process(issuer, light.kube, light.proxmox, tenant_clusters, zitadel) as running:
        yield running


@pytest.fixture
def vm_name(api: InProcessApi, light: LightWorld) -> Iterator[Callable[[str], str]]:
    with vm_names(api, light) as name:
        yield name


@pytest.fixture
def cluster(tenant_clusters: FakeClusterApi) -> Iterator[str]:
    """A cluster of VDC demo as a create writes it (the services' own builders: no provider runs here),
    its objects gone afterwards."""
    name = f"c{uuid.uuid4().hex[:8]}"
    made = objects.all_objects(objects.ClusterPlan("demo", name, "v1.34.2", "debian-12", "net-1", 2, ()))
    for resource, body in made:
        tenant_clusters.create(resource, namespace_of("demo"), body)
    yield name
    for resource, body in made:
        tenant_clusters.delete(resource, namespace_of("demo"), body["metadata"]["name"])
