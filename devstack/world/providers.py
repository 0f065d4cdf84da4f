"""The Cluster API side of a world (``WorldConfig(providers=True)``): the providers, and stand-ins they need.

On a real management cluster ``clusterctl init`` installs Cluster API core and the kubeadm bootstrap
provider, the chart installs flex.plane's providers and their CRDs, a LoadBalancer controller gives
Services addresses and the kubelet runs the hosted control planes' pods. Here:

- the CRDs: the providers' own (``charts/providers/crds/``, through ``providers.common.crds``) and Cluster
  API core's (:data:`devstack.kube.crds.CLUSTER_API_CORE_CRDS`), created in the emulator;
- :class:`devstack.capi_core.CapiCore` (core's controllers and CABPK) and
  :class:`devstack.hosted_control_plane.HostedControlPlanes` (the LoadBalancer controller, on addresses
  127.<subnet>.90.x, and the control planes' pods: a tenant API server each), as threads of this process;
- ``python -m providers`` (their real entry point) as a process of its own, with the world's kubeconfig,
  the orchestrator's settings and a ``flexplane-capi`` client certificate issued from the world's agent CA
  (the agents accept that name by default), its log ``logs/providers.log``; :meth:`kill_providers` and
  :meth:`start_providers_process` let a test kill and restart it.
"""

from __future__ import annotations

import os
import signal
import sys

from devstack.capi_core import CapiCore
from devstack.hosted_control_plane import HostedControlPlanes
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.net import free_port
from devstack.processes import Process, spawn
from devstack.world.config import PROVIDERS_CLIENT_CN, PROVIDERS_LB_OCTET
from devstack.world.orchestrator import WorldOrchestrator
from providers.common.crds import load_crds

# The providers' retry delays here (FLEXPLANE_PROVIDERS_*, production's in their docstrings): the stand-ins
# answer in milliseconds. What the providers wait for mostly wakes them at once (watches); these are what
# is left: a wait with no event to wake it (a namespace going), and the backoff after a real failure.
WORLD_TIMINGS = {
    "RETRY_DELAY": "0.5",
    "CONVERGING_DELAY": "0.5",
    "DELETING_DELAY": "0.2",
    "BACKOFF_FIRST": "0.2",
    "MAX_BACKOFF": "5",
}


class WorldProviders(WorldOrchestrator):
    """The providers' process and the Cluster API stand-ins."""

    capi_core: CapiCore | None = None
    hosted_control_planes: HostedControlPlanes | None = None
    providers: Process | None = None
    # Where the providers' process serves its probes (/healthz, /readyz), as the kubelet would read them.
    providers_probes: str | None = None

    providers_settings: dict[str, str] | None = None

    def start_cluster_api(
        self, settings: dict[str, str] | None = None, *, watch_filter: str | None = None
    ) -> None:
        """The CRDs, the stand-ins, then the providers' process (``settings``: more FLEXPLANE_PROVIDERS_*
        settings, without the prefix, beside the world's ``providers_settings``; ``watch_filter``: core's
        stand-in sees only objects so labelled, see :class:`~devstack.capi_core.CapiCore`)."""
        assert self.kubeconfig is not None
        self.providers_settings = {**WORLD_TIMINGS, **dict(self.cfg.providers_settings), **(settings or {})}
        self.install_crds()
        self.capi_core = CapiCore(self.kubeconfig, watch_filter=watch_filter).start()
        self.hosted_control_planes = HostedControlPlanes(
            self.kubeconfig, f"127.{self.cfg.subnet}.{PROVIDERS_LB_OCTET}."
        ).start()
        self.start_providers_process()

    def install_crds(self) -> None:
        """The providers' CRDs (the chart's files) and Cluster API core's, as the chart and clusterctl do."""
        self.kube.install_crds([*load_crds(), *CLUSTER_API_CORE_CRDS])

    def providers_env(self) -> dict[str, str]:
        """The orchestrator's settings, with the providers' own client certificate for the agents."""
        assert self.ca is not None
        cert, key = self.ca.issue_client(PROVIDERS_CLIENT_CN, self.pki / "providers", "providers")
        return {
            **self.orchestrator_env(),
            "FLEXPLANE_AGENT_CERT": str(cert),
            "FLEXPLANE_AGENT_KEY": str(key),
            "FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS": self.cfg.kube_host,
            "FLEXPLANE_PROBES_LISTEN": self.providers_probes_address(),
            "POD_NAME": "providers-0",
            **{
                f"FLEXPLANE_PROVIDERS_{name}": value
                for name, value in (self.providers_settings or {}).items()
            },
        }

    def providers_probes_address(self) -> str:
        """HOST:PORT of the providers' probes, chosen once (a restarted process serves them there again)."""
        if self.providers_probes is None:
            host = self.cfg.orchestrator_host
            self.providers_probes = f"{host}:{free_port(host)}"
        return self.providers_probes

    def start_providers_process(self) -> Process:
        """``python -m providers``, its output appended to ``logs/providers.log`` (earlier runs' kept)."""
        process = spawn(
            "providers",
            [sys.executable, "-m", "providers"],
            self.cfg.scratch / "logs" / "providers.log",
            env=self.providers_env(),
            append=True,
        )
        self._processes.append(process)
        self.providers = process
        return process

    def kill_providers(self) -> None:
        """SIGKILL the providers' process (no cleanup, no Lease released), as a crash or an OOM kill would."""
        process = self.providers
        if process is None:
            return
        if process.popen.poll() is None:
            os.kill(process.popen.pid, signal.SIGKILL)
            process.popen.wait(10)
        self._processes.remove(process)
        self.providers = None

    def stop_cluster_api(self) -> None:
        if self.providers is not None:
            self.providers.stop(grace=15.0)  # kopf ends its watches and handlers first
            if self.providers in self._processes:
                self._processes.remove(self.providers)
            self.providers = None
        if self.capi_core is not None:
            self.capi_core.stop()
            self.capi_core = None
        if self.hosted_control_planes is not None:
            self.hosted_control_planes.stop()
            self.hosted_control_planes = None
