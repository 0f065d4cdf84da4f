"""Service tests: the service functions called in this process, their sources wired to the test world.

The sources are the product's own (the kube source with the world's kubeconfig, the Proxmox source
with the orchestrator's client certificate); only their process-wide instances are pointed at the
world, as the orchestrator's settings point them in its own process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from agentclient import AgentPool, ClientTLS
from devstack.world import World
from orchestrator.auth import Principal
from orchestrator.errors import Conflict
from orchestrator.services import catalog, locks, networks, vdcs
from orchestrator.services.context import Context
from orchestrator.sources import kube as kube_module
from orchestrator.sources import proxmox as proxmox_module
from orchestrator.sources.kube import KubeSource
from orchestrator.sources.proxmox import ProxmoxSource
from tests.kubekit import world_kube
from tests.orchestrator.clusterkit import install_crds
from tests.orchestrator.services.clusterkit import FAR, NEXT, VERSION, wipe

MakeContext = Callable[..., Context]


@contextlib.contextmanager
def wire(world: World, pool: Callable[[ClientTLS], AgentPool]) -> Iterator[tuple[KubeSource, AgentPool]]:
    """Point this process's kube and Proxmox sources at the world (the Proxmox source through ``pool``,
    made with the orchestrator's client certificate) until the block ends."""
    source = world_kube(world)
    env = world.orchestrator_env()
    agents = pool(
        ClientTLS.from_files(
            env["FLEXPLANE_AGENT_CA"], env["FLEXPLANE_AGENT_CERT"], env["FLEXPLANE_AGENT_KEY"]
        )
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", source)
        patch.setattr(proxmox_module, "_source", ProxmoxSource(agents, call_timeout=2.0, deadline=5.0))
        yield source, agents
    agents.close()
    source.core.api_client.close()


@pytest.fixture(scope="module")
def wired(world: World) -> Iterator[KubeSource]:
    """Point this process's kube and Proxmox sources at the world for the module; yields the kube source."""
    with wire(world, lambda tls: AgentPool(tls, timeout=2.0)) as (source, _):
        yield source


def context(*roles: str, subject: str = "tester") -> Context:
    """A fresh request's context for a caller of ``roles``."""
    return Context(principal=Principal(subject=subject, name=subject, email="", roles=frozenset(roles)))


@pytest.fixture
def make_context(wired: KubeSource) -> MakeContext:
    """``make_context("ADMIN")``, ``make_context("USER", "vdc:demo")``: a fresh request's context, once the
    sources are wired to the world."""
    return context


# ------------------------------------------------------------------------- tenant clusters (test_clusters*)


@pytest.fixture(scope="module")
def custom(wired: KubeSource, world: World) -> client.CustomObjectsApi:
    install_crds(world)
    return client.CustomObjectsApi(wired.core.api_client)


@pytest.fixture(scope="module")
def versions(wired: KubeSource) -> Iterator[None]:
    """Three Kubernetes versions in the catalog, the first with Debian 12 as its node image, the others
    Ubuntu 24.04."""
    admin = context("ADMIN", subject="admin")
    for version, image in ((VERSION, "debian-12"), (NEXT, "ubuntu-24.04"), (FAR, "ubuntu-24.04")):
        with contextlib.suppress(Conflict):  # made before by another module (clusterkit's: the same)
            catalog.create_kubernetes_version(admin, {"version": version, "image": image})
    yield
    for version in (VERSION, NEXT, FAR):
        catalog.delete_kubernetes_version(admin, version)


@pytest.fixture(scope="module")
def networked(wired: KubeSource) -> None:
    """VDCs demo and other have their default networks in zone-a (the world's VDCs predate networks: a
    VM create would make them)."""
    admin = context("ADMIN", subject="admin")
    for vdc in ("demo", "other"):
        with locks.vdc_lock(admin, vdc):
            networks.ensure_default_networks(admin, vdcs.get_vdc(admin, vdc), ["zone-a"])


@pytest.fixture
def clean(custom: client.CustomObjectsApi, versions: None, networked: None) -> Iterator[None]:
    """The VDCs' Cluster API objects wiped before the test and after it: a module of another suite that ran
    on this worker's world before (the isolation suites stage a cluster of demo's) leaves none to count."""
    for vdc in ("demo", "other"):
        wipe(custom, vdc)
    yield
    for vdc in ("demo", "other"):
        wipe(custom, vdc)
