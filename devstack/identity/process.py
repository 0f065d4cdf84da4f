"""Run the identity provider as a child process: for the devstack and for test fixtures.

with IdentityProvider.start(data_dir, "127.0.0.1", 9000, users) as identity:
    token = password_token(identity.issuer, "alice", "alice")
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from devstack.identity.config import DEVICE_CODE_LIFETIME_ENV, DEVICE_POLL_INTERVAL_ENV
from devstack.identity.keys import write_private_file
from devstack.net import free_port

READY_PREFIX = "identity listening on "
PORTAL_CLIENT_SECRET_ENV = "FLEXPLANE_IDENTITY_PORTAL_CLIENT_SECRET"
_SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the devstack package


class IdentityProviderError(RuntimeError):
    """The identity provider did not start; the message carries its output."""


@dataclass(frozen=True)
class PortalClient:
    """The ``flexplane-portal`` registration, as a relying party needs it."""

    issuer: str
    client_id: str
    client_secret: str
    redirect_uris: tuple[str, ...]
    post_logout_redirect_uris: tuple[str, ...]


class IdentityProvider:
    """A running ``python -m devstack.identity serve`` process; stop it with :meth:`stop`."""

    def __init__(self, process: subprocess.Popen[bytes], issuer: str, data_dir: Path, log_path: Path) -> None:
        self.process = process
        self.issuer = issuer
        self.data_dir = data_dir
        self.log_path = log_path

    @classmethod
    def start(
        cls,
        data_dir: Path,
        host: str,
        port: int,
        users: Path | Sequence[Mapping[str, Any]],
        project_id: str = "flexplane",
        portal_redirect_uris: Sequence[str] = (),
        portal_client_secret: str | None = None,
        *,
        portal_post_logout_redirect_uris: Sequence[str] = (),
        startup_timeout: float = 30.0,
        device_code_lifetime: int | None = None,
        device_poll_interval: int | None = None,
    ) -> IdentityProvider:
        """Start the provider on ``host:port`` (a loopback address) and wait until it serves.

        A ``port`` of 0 picks a free one. ``users`` is a USERS.json file or the list it would
        hold. ``device_code_lifetime`` and ``device_poll_interval`` replace the device authorization
        grant's (Zitadel's 300 and 5 seconds), for a test that cannot wait that long. The provider's output
        goes to ``data_dir/identity.log``. Raises
        :class:`IdentityProviderError` if the process exits or is not ready within
        ``startup_timeout`` seconds.
        """
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if port == 0:
            port = free_port(host)
        issuer = f"http://{_url_host(host)}:{port}/o"
        if not isinstance(users, Path):
            users_path = data_dir / "users.json"
            write_private_file(users_path, json.dumps(list(users), indent=2) + "\n")
        else:
            users_path = users
        command = [
            sys.executable,
            "-m",
            "devstack.identity",
            "serve",
            "--data-dir",
            str(data_dir),
            "--bind",
            f"{_url_host(host)}:{port}",
            "--issuer",
            issuer,
            "--project-id",
            project_id,
            "--users",
            str(users_path),
        ]
        for uri in portal_redirect_uris:
            command += ["--portal-redirect-uri", uri]
        for uri in portal_post_logout_redirect_uris:
            command += ["--portal-post-logout-redirect-uri", uri]

        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_SOURCE_ROOT), environment.get("PYTHONPATH")])
        )
        environment.pop(PORTAL_CLIENT_SECRET_ENV, None)
        if portal_client_secret:
            # Through the environment rather than the command line, which every local user can read.
            environment[PORTAL_CLIENT_SECRET_ENV] = portal_client_secret

        device_grant = {
            DEVICE_CODE_LIFETIME_ENV: device_code_lifetime,
            DEVICE_POLL_INTERVAL_ENV: device_poll_interval,
        }
        for name, seconds in device_grant.items():
            environment.pop(name, None)
            if seconds is not None:
                environment[name] = str(seconds)

        log_path = data_dir / "identity.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=environment
            )
        provider = cls(process, issuer, data_dir, log_path)
        provider._wait_until_ready(startup_timeout)
        return provider

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def api_url(self) -> str:
        """Where the Zitadel-shaped management API is served: the issuer's origin, as Zitadel's."""
        return self.issuer.removesuffix("/o")

    @property
    def zitadel_key_path(self) -> Path:
        """The orchestrator's service user key file (Zitadel's JSON key format)."""
        return self.data_dir / "zitadel-service-key.json"

    @property
    def portal_client(self) -> PortalClient:
        """The portal's client id and plaintext secret, as the provider recorded them."""
        recorded = json.loads((self.data_dir / "portal-client.json").read_text(encoding="utf-8"))
        return PortalClient(
            issuer=recorded["issuer"],
            client_id=recorded["client_id"],
            client_secret=recorded["client_secret"],
            redirect_uris=tuple(recorded["redirect_uris"]),
            post_logout_redirect_uris=tuple(recorded["post_logout_redirect_uris"]),
        )

    def output(self) -> str:
        """Everything the process wrote to stdout and stderr so far."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, grace_period: float = 10.0) -> None:
        """SIGTERM the process, and SIGKILL it if it has not exited after ``grace_period`` seconds."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=grace_period)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_until_ready(self, timeout: float) -> None:
        ready_line = f"{READY_PREFIX}{self.issuer}"
        deadline = time.monotonic() + timeout
        while True:
            if ready_line in self.output().splitlines():
                return
            code = self.process.poll()
            if code is not None:
                raise IdentityProviderError(
                    f"the identity provider exited with code {code} before it was ready; "
                    f"its output ({self.log_path}):\n{self.output()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise IdentityProviderError(
                    f"the identity provider was not ready within {timeout:g}s; "
                    f"its output ({self.log_path}):\n{self.output()}"
                )
            time.sleep(0.05)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
