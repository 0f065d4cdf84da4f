"""What one identity provider process is configured with, and where it keeps its files.

``serve`` builds an :class:`IdentityConfig` from its command line and hands it to the Django
settings module through the environment (:meth:`IdentityConfig.to_environ`), so that
``devstack.identity.settings`` stays an ordinary settings module with no side effects.
"""

from __future__ import annotations

import functools
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

ENV_DATA_DIR = "FLEXPLANE_IDENTITY_DATA_DIR"
ENV_ISSUER = "FLEXPLANE_IDENTITY_ISSUER"
ENV_PROJECT_ID = "FLEXPLANE_IDENTITY_PROJECT_ID"
ENV_BIND_HOST = "FLEXPLANE_IDENTITY_BIND_HOST"
# Optional: the device authorization grant's code lifetime and poll interval, in seconds.
DEVICE_CODE_LIFETIME_ENV = "FLEXPLANE_IDENTITY_DEVICE_CODE_LIFETIME"
DEVICE_POLL_INTERVAL_ENV = "FLEXPLANE_IDENTITY_DEVICE_POLL_INTERVAL"

SETTINGS_MODULE = "devstack.identity.settings"


@dataclass(frozen=True)
class IdentityConfig:
    """The settings of one identity provider process; its files all live in ``data_dir``."""

    data_dir: Path
    issuer: str
    project_id: str
    bind_host: str
    # The device authorization grant's (devstack/identity/device.py), in seconds: Zitadel's defaults.
    device_code_lifetime: int = 300
    device_poll_interval: int = 5

    def __post_init__(self) -> None:
        parts = urlsplit(self.issuer)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ImproperlyConfigured(f"the issuer must be an http(s) URL, not {self.issuer!r}")
        if parts.query or parts.fragment or self.issuer.endswith("/"):
            raise ImproperlyConfigured(
                f"the issuer must have no query, fragment or trailing slash: {self.issuer!r}"
            )
        if not self.project_id:
            raise ImproperlyConfigured("the project id must not be empty")

    @property
    def issuer_host(self) -> str:
        hostname = urlsplit(self.issuer).hostname
        assert hostname is not None  # checked in __post_init__
        return hostname

    @property
    def origin(self) -> str:
        """The issuer's scheme, host and port: where Zitadel's own paths (``/oauth/v2/...``) are served."""
        parts = urlsplit(self.issuer)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def url_prefix(self) -> str:
        """The issuer's path as a Django URL prefix: ``"o/"`` for ``http://host/o``, ``""`` for the root."""
        path = urlsplit(self.issuer).path.strip("/")
        return f"{path}/" if path else ""

    @property
    def allowed_hosts(self) -> list[str]:
        return sorted({self.issuer_host, _unbracket(self.bind_host)})

    @property
    def database_path(self) -> Path:
        return self.data_dir / "identity.sqlite3"

    @property
    def signing_key_path(self) -> Path:
        return self.data_dir / "oidc-signing-key.pem"

    @property
    def secret_key_path(self) -> Path:
        return self.data_dir / "django-secret-key"

    @property
    def zitadel_key_path(self) -> Path:
        """The orchestrator's service user key, in the format of Zitadel's JSON key files."""
        return self.data_dir / "zitadel-service-key.json"

    @property
    def portal_client_path(self) -> Path:
        return self.data_dir / "portal-client.json"

    def to_environ(self) -> dict[str, str]:
        return {
            ENV_DATA_DIR: str(self.data_dir),
            ENV_ISSUER: self.issuer,
            ENV_PROJECT_ID: self.project_id,
            ENV_BIND_HOST: self.bind_host,
        }

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> IdentityConfig:
        missing = [
            name
            for name in (ENV_DATA_DIR, ENV_ISSUER, ENV_PROJECT_ID, ENV_BIND_HOST)
            if not environ.get(name)
        ]
        if missing:
            raise ImproperlyConfigured(
                f"{', '.join(missing)} not set: start the identity provider with "
                "`python -m devstack.identity serve`"
            )
        return cls(
            data_dir=Path(environ[ENV_DATA_DIR]),
            issuer=environ[ENV_ISSUER],
            project_id=environ[ENV_PROJECT_ID],
            bind_host=environ[ENV_BIND_HOST],
            device_code_lifetime=int(environ.get(DEVICE_CODE_LIFETIME_ENV) or 300),
            device_poll_interval=int(environ.get(DEVICE_POLL_INTERVAL_ENV) or 5),
        )


@functools.cache
def current_config() -> IdentityConfig:
    """The configuration of this process, from the environment that ``serve`` set up."""
    return IdentityConfig.from_environ(os.environ)


def parse_bind(bind: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6) and refuse anything but a loopback address.

    This provider hands out tokens for well-known development passwords: it must never be
    reachable from another machine.
    """
    host, separator, port_text = bind.rpartition(":")
    if not separator or not host or not port_text.isdigit():
        raise ValueError(f"--bind must be HOST:PORT, not {bind!r}")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ValueError(f"--bind has no valid port: {bind!r}")
    host = _unbracket(host)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"--bind needs an IP address, not {host!r}") from None
    if not address.is_loopback:
        raise ValueError(f"--bind must be a loopback address, not {host}")
    return host, port


def _unbracket(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host
