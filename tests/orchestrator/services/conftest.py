"""Service tests: the service functions called in this process, their sources wired to the test world.

The sources are the product's own (the kube source with the world's kubeconfig, the Proxmox source
with the orchestrator's client certificate); only their process-wide instances are pointed at the
world, as the orchestrator's settings point them in its own process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kubernetes import config

from agentclient import AgentPool, ClientTLS
from devstack import seed
from devstack.world import World
from orchestrator.auth import Principal
from orchestrator.services.context import Context
from orchestrator.sources import kube as kube_module
from orchestrator.sources import proxmox as proxmox_module
from orchestrator.sources.kube import KubeSource
from orchestrator.sources.proxmox import ProxmoxSource

MakeContext = Callable[..., Context]


@pytest.fixture(scope="module")
def wired(world: World) -> Iterator[KubeSource]:
    """Point this process's kube and Proxmox sources at the world for the module; yields the kube source."""
    assert world.kubeconfig is not None
    source = KubeSource(config.new_client_from_config(config_file=str(world.kubeconfig)), seed.NAMESPACE, 5.0)
    env = world.orchestrator_env()
    tls = ClientTLS.from_files(
        env["FLEXPLANE_AGENT_CA"], env["FLEXPLANE_AGENT_CERT"], env["FLEXPLANE_AGENT_KEY"]
    )
    pool = AgentPool(tls, timeout=2.0)
    pve = ProxmoxSource(pool, call_timeout=2.0, deadline=5.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", source)
        patch.setattr(proxmox_module, "_source", pve)
        yield source
    pool.close()
    source.core.api_client.close()


@pytest.fixture
def make_context(wired: KubeSource) -> MakeContext:
    """``make_context("ADMIN")``, ``make_context("USER", "vdc:demo")``: a fresh request's context."""

    def make(*roles: str, subject: str = "tester") -> Context:
        return Context(principal=Principal(subject=subject, name=subject, email="", roles=frozenset(roles)))

    return make
