"""The portal's pages from this process, served over HTTP on loopback (``tests/portal/served.py``) on the
light world (``tests/orchestrator/lightworld.py``), with Zitadel in memory
(``tests/orchestrator/fakezitadel.py``): alice (VDC demo), bob (VDC other), olivia (owner of organization
acme) and admin signed in as the portal's login records them. A module's tests share one light world, as a
session's share the devstack's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from tests.orchestrator.api.light.test_organizations import (
    ALLOWANCE,
    DELETE,
    DELETE_ALLOWANCE,
    ORGANIZATIONS,
    payload,
    user,
)
from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer, in_process
from tests.orchestrator.lightworld import LightWorld
from tests.orchestrator.sources.test_zitadel import restore_seeded_organization
from tests.portal.served import LightPortal, served


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
def tenant_clusters() -> FakeClusterApi:
    return FakeClusterApi()


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightWorld]:
    with LightWorld(tmp_path_factory.mktemp("light")) as running:
        yield running


@pytest.fixture(scope="module")
def api(
    issuer: LocalIssuer, light: LightWorld, tenant_clusters: FakeClusterApi, zitadel: FakeZitadel
) -> Iterator[InProcessApi]:
    with in_process(issuer, light.kube, light.proxmox, tenant_clusters, zitadel) as running:
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


@pytest.fixture(scope="module")
def olivia(site: LightPortal) -> requests.Session:
    return site.session("olivia")


# Organization acme's allowance while a test of its pages runs: 4 vCPUs and 2 VMs in zone-a.
ACME_ALLOWANCE = {
    "zones": ["zone-a"],
    "computeProfiles": ["small"],
    "storageProfiles": ["standard"],
    "images": ["debian-12"],
    "quota": {"vcpus": 4, "memoryMib": 4096, "diskGb": 40, "vms": 2},
}


@pytest.fixture
def acme(api: InProcessApi, zitadel: FakeZitadel) -> Iterator[str]:
    """Organization acme's id, with an allowance; its VDCs and allowance removed after, and acme then as
    seeding left it (taking the allowance away takes its users' roles)."""
    org = str(user(api, "olivia")["organization"])
    given = api(ALLOWANCE, user="admin", variables={"o": org, "input": ACME_ALLOWANCE})
    assert payload(given, "setOrganizationAllowance")["errors"] == []
    yield org
    for listed in api(ORGANIZATIONS, user="admin").data["organizations"]:
        for ident in listed["vdcs"] if listed["organization"] == org else []:
            api(DELETE, user="admin", variables={"id": ident})
    api(DELETE_ALLOWANCE, user="admin", variables={"o": org})
    restore_seeded_organization(zitadel, "acme")
