"""The orchestrator's side of a world: its settings (environment) and its processes
(``python -m flexplane.serve``).

The world runs one orchestrator (HTTP, and HTTPS where nodes enroll and renew); a test may run
another replica beside it with :meth:`WorldOrchestrator.spawn_orchestrator`. Its client certificate for
the agents is the only one the world issues by hand, from the world's CA.
"""

from __future__ import annotations

import contextlib
import sys
import time

import requests

from devstack import seed
from devstack.processes import Process, spawn
from devstack.world.config import ORCHESTRATOR_CLIENT_CN
from devstack.world.parts import WorldParts


class WorldOrchestrator(WorldParts):
    """The orchestrator's environment, and starting it (or another replica) until it answers."""

    def orchestrator_env(self) -> dict[str, str]:
        assert self.ca is not None
        assert self.kubeconfig is not None
        client_dir = self.cfg.scratch / "pki" / "orchestrator"
        cert, key = self.ca.issue_client(ORCHESTRATOR_CLIENT_CN, client_dir, "orchestrator")
        return {
            "DJANGO_SETTINGS_MODULE": "flexplane.settings",
            "FLEXPLANE_ALLOWED_HOSTS": f"{self.cfg.orchestrator_host},localhost,127.0.0.1",
            "FLEXPLANE_SECRET_KEY": self.secret_key,
            "FLEXPLANE_KUBECONFIG": str(self.kubeconfig),
            "FLEXPLANE_NAMESPACE": seed.NAMESPACE,
            "FLEXPLANE_OIDC_ISSUER": self.identity.issuer,
            "FLEXPLANE_OIDC_AUDIENCE": seed.PROJECT_ID,
            "FLEXPLANE_OIDC_PROJECT_ID": seed.PROJECT_ID,
            # The dev issuer types its access tokens (devstack.identity.oauth.ACCESS_TOKEN_TYPE).
            "FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE": "at+jwt",
            # The portal's login: the confidential client the identity provider registered for it.
            "FLEXPLANE_OIDC_CLIENT_ID": self.identity.portal_client.client_id,
            "FLEXPLANE_OIDC_CLIENT_SECRET": self.identity.portal_client.client_secret,
            # Zitadel's management API (the identity provider's stand-in of it) and the service user's key.
            "FLEXPLANE_ZITADEL_URL": self.identity.api_url,
            "FLEXPLANE_ZITADEL_KEY_FILE": str(self.identity.zitadel_key_path),
            "FLEXPLANE_AGENT_CA": str(self.ca.cert_path),
            "FLEXPLANE_AGENT_CERT": str(cert),
            "FLEXPLANE_AGENT_KEY": str(key),
            # Where nodes enroll and renew: this orchestrator's HTTPS endpoint.
            "FLEXPLANE_ENROLLMENT_URL": self.https_url,
            # The release channel agents install from at enrollment and update from afterwards.
            "FLEXPLANE_AGENT_RELEASES_DIR": str(self.releases),
            "FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY": str(self.release_keys[1]),
            **(self.registry.orchestrator_env() if self.registry is not None else {}),
            "FLEXPLANE_IMAGE_ALLOW_HOSTS": self.images.netloc,
            **{f"FLEXPLANE_{name}": value for name, value in self.cfg.orchestrator_settings},
            **(self.mesh.env() if self.mesh is not None else {}),
        }

    def start_orchestrator(self, extra_env: dict[str, str] | None = None) -> None:
        self.orchestrator = self.spawn_orchestrator(
            "orchestrator", self.cfg.orchestrator_port, self.enrollment_port, extra_env
        )

    def spawn_orchestrator(
        self,
        name: str,
        port: int,
        https_port: int,
        extra_env: dict[str, str] | None = None,
        *,
        wait: bool = True,
    ) -> Process:
        """An orchestrator process (HTTP on port, HTTPS on https_port), once it answers /healthz (at
        once with ``wait=False``: :meth:`wait_orchestrator` then waits, so that replicas start together).

        The world runs one; a test may run another replica beside it, e.g. with other settings.
        """
        assert self.ca is not None
        host = self.cfg.orchestrator_host
        cert, key = self.ca.issue_server([host], self.pki / "orchestrator-https", "https")
        process = spawn(
            name,
            [
                sys.executable,
                "-m",
                "flexplane.serve",
                "--host",
                host,
                "--port",
                str(port),
                "--https-port",
                str(https_port),
                "--certfile",
                str(cert),
                "--keyfile",
                str(key),
            ],
            self.cfg.scratch / "logs" / f"{name}.log",
            env={**self.orchestrator_env(), **(extra_env or {})},
        )
        self._processes.append(process)
        if wait:
            self.wait_orchestrator(process, port)
        return process

    def wait_orchestrator(self, process: Process, port: int) -> None:
        """Until the orchestrator ``process`` answers /healthz on ``port``; RuntimeError, with its output,
        if it exits or does not answer within 30 s."""
        url = f"http://{self.cfg.orchestrator_host}:{port}/healthz"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                break
            with contextlib.suppress(requests.RequestException):
                if requests.get(url, timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{process.name} did not start:\n{process.output()[-4000:]}")
