"""The agent's configuration: a TOML file, with FLEXPLANE_AGENT_<KEY> environment overrides.

Example (``/etc/flexplane/agent.toml``)::

    listen = "10.0.0.11:7443"              # host:port the control plane dials ([v6]:port for IPv6)
    zone = "zone1"                         # the Proxmox cluster, a DNS label
    node = "pve1"                          # this Proxmox node, a DNS label
    tls_cert = "/etc/flexplane/agent.crt"  # names pve1.zone1.agents.flexplane (SAN DNSName)
    tls_key = "/etc/flexplane/agent.key"
    ca = "/etc/flexplane/platform-ca.crt"  # signs the callers' client certificates
    allowed_clients = ["flexplane-orchestrator"]
    console_clients = ["flexplane-orchestrator"]   # of those, who may open a VM's console (Console.Open)
    gateway_clients = ["flexplane-orchestrator"]   # of those, who may run edge gateways here (Gateways)
    gateway_dir = "/var/lib/flexplane/gateways"    # the last spec applied per gateway, restored on start
    metrics_listen = "127.0.0.1:9464"      # Prometheus metrics (agent.metrics), loopback only; unset: off
    proxmox_url = "https://127.0.0.1:8006"
    proxmox_token_id = "root@pam!flexplane"
    proxmox_token_secret_file = "/etc/flexplane/proxmox-token"   # or proxmox_token_secret
    proxmox_ca = "/etc/pve/pve-root-ca.pem"  # optional: the system store otherwise
    proxmox_timeout = 10                   # seconds
    log_level = "info"
    # Certificate renewal (agent.renewal): off unless orchestrator_url is set; bootstrap writes both.
    orchestrator_url = "https://flexplane.example.com"   # where the agent renews its certificate
    orchestrator_ca = "/etc/flexplane/orchestrator-ca.crt"   # optional: the system store otherwise
    # Images (EnsureTemplate):
    image_allow_hosts = ["mirror.internal", "10.0.0.5:8080"]  # exempt from the URL policy's address checks
    image_cache = "/var/lib/flexplane/images"   # downloads in progress; created when first needed
    image_max_bytes = 68719476736          # 64 GiB: larger images are refused
    image_staging_storage = "local"        # file storage the verified image is uploaded to for the import
    image_ca = "/etc/flexplane/mirror-ca.crt"   # optional: trusted for https images besides the system store
    # Cloud-init snippets (WriteSnippet): the snippets folder of a storage with the snippets content type.
    snippets_dir = "/var/lib/vz/snippets"  # where snippets are written; created when first needed
    snippets_storage = "local"             # the storage whose snippets folder that is (its volume ids)
    # Self-update (agent.update): off unless update_channel_url is set; the bootstrap writes these four
    # when the platform offers a release channel and key (and the service runs the installed release).
    update_channel_url = "https://flexplane.example.com/agent/releases/channel.json"
    update_channel_ca = "/etc/flexplane/platform-web-ca.crt"   # optional: the system store otherwise
    release_public_key = "/etc/flexplane/release-public.pem"   # Ed25519: only releases it verifies run
    install_dir = "/opt/flexplane-agent"    # versions/<version>/, current -> the one the service runs
    update_interval = 3600                 # seconds between checks; 0: never
    health_deadline = 60                   # seconds the new version has to answer, else rollback
    service_restart_command = ["systemctl", "restart", "flexplane-agent"]
    update_apply_launcher = ["systemd-run", "--collect", "--quiet", "--unit=flexplane-agent-update"]
    update_state_file = "/opt/flexplane-agent/update-state.json"   # default: in install_dir
    update_registry_credentials = "/etc/flexplane/registry.json"   # read-only pulls from the site's
                                           # registry (agent.update.registry); enrollment writes it

Every key can be overridden by an environment variable of its name in upper case,
e.g. ``FLEXPLANE_AGENT_LISTEN``; ``FLEXPLANE_AGENT_ALLOWED_CLIENTS``,
``FLEXPLANE_AGENT_IMAGE_ALLOW_HOSTS`` and the two commands are comma-separated lists. Relative
paths are read relative to the configuration file's folder.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from agentclient.identity import host_identity, is_dns_label
from agentclient.templates import check_storage_id
from agentclient.urlpolicy import normalize_allow_host

ENV_PREFIX = "FLEXPLANE_AGENT_"
# The orchestrator, and the Cluster API infrastructure provider (providers/: it creates and deletes its
# machines' VMs through the proxy and snippets).
DEFAULT_ALLOWED_CLIENTS = ("flexplane-orchestrator", "flexplane-capi")
# Consoles and edge gateways: the orchestrator's alone.
DEFAULT_ORCHESTRATOR_CLIENTS = ("flexplane-orchestrator",)
DEFAULT_PROXMOX_URL = "https://127.0.0.1:8006"
DEFAULT_TOKEN_ID = "root@pam!flexplane"  # noqa: S105 - a token id, not its secret
DEFAULT_PROXMOX_TIMEOUT = 10.0
LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_IMAGE_CACHE = Path("/var/lib/flexplane/images")
DEFAULT_IMAGE_MAX_BYTES = 64 * 1024**3
DEFAULT_IMAGE_STAGING_STORAGE = "local"
# The snippets folder of Proxmox's default "local" storage (path /var/lib/vz).
DEFAULT_SNIPPETS_DIR = Path("/var/lib/vz/snippets")
DEFAULT_SNIPPETS_STORAGE = "local"
DEFAULT_GATEWAY_DIR = Path("/var/lib/flexplane/gateways")
DEFAULT_INSTALL_DIR = Path("/opt/flexplane-agent")
DEFAULT_UPDATE_INTERVAL = 3600.0
DEFAULT_HEALTH_DEADLINE = 60.0
DEFAULT_RESTART_COMMAND = ("systemctl", "restart", "flexplane-agent")
# The apply step must outlive the restart of the agent's unit: a transient unit of its own.
DEFAULT_APPLY_LAUNCHER = ("systemd-run", "--collect", "--quiet", "--unit=flexplane-agent-update")
UPDATE_STATE_FILE = "update-state.json"
_NAMES = "must be a list of client certificate common names"
_COMMAND = 'must be a list of arguments, e.g. ["systemctl", "restart", "flexplane-agent"]'
_NOT_A_LABEL = "{!r} is not a DNS label (letters, digits, inner hyphens; up to 63)"

# user@realm!tokenname, as Proxmox names API tokens.
_TOKEN_ID = re.compile(r"[^\s@!:=]+@[A-Za-z][A-Za-z0-9._-]*![A-Za-z][A-Za-z0-9._-]*")


class ConfigError(Exception):
    """The configuration cannot be used; the message lists every problem found."""


@dataclass(frozen=True)
class UpdateConfig:
    """Self-update's settings (see agent.update); present when update_channel_url is set."""

    channel_url: str
    public_key: Path
    install_dir: Path
    state_file: Path
    channel_ca: Path | None = None
    interval: float = DEFAULT_UPDATE_INTERVAL
    health_deadline: float = DEFAULT_HEALTH_DEADLINE
    restart_command: tuple[str, ...] = DEFAULT_RESTART_COMMAND
    apply_launcher: tuple[str, ...] = DEFAULT_APPLY_LAUNCHER
    registry_credentials: Path | None = None


class AgentConfig(BaseSettings):
    """The validated configuration of one agent: the file's keys, with their defaults.

    Built by :func:`validate` and :func:`load_config`, from the values given only (the environment is
    one of :func:`load_config`'s sources, not the model's). Pydantic checks the keys in the order
    declared here, and a key's check may read the keys above it (``info.data``): update_channel_url
    comes first for listen's.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", frozen=True, validate_default=False
    )

    update_channel_url: str | None = None
    listen: str
    zone: str
    node: str
    tls_cert: Path
    tls_key: Path
    ca: Path
    proxmox_url: str = DEFAULT_PROXMOX_URL
    proxmox_token_id: str = DEFAULT_TOKEN_ID
    proxmox_token_secret_file: Path | None = None
    proxmox_token_secret: str = Field("", repr=False, validate_default=True)
    allowed_clients: frozenset[str] = frozenset(DEFAULT_ALLOWED_CLIENTS)
    console_clients: frozenset[str] = frozenset(DEFAULT_ORCHESTRATOR_CLIENTS)
    gateway_clients: frozenset[str] = frozenset(DEFAULT_ORCHESTRATOR_CLIENTS)
    proxmox_ca: Path | None = None
    proxmox_timeout: float = DEFAULT_PROXMOX_TIMEOUT
    log_level: str = "info"
    orchestrator_url: str | None = None
    orchestrator_ca: Path | None = None
    image_allow_hosts: frozenset[str] = frozenset()
    image_cache: Path = DEFAULT_IMAGE_CACHE
    image_max_bytes: int = DEFAULT_IMAGE_MAX_BYTES
    image_staging_storage: str = DEFAULT_IMAGE_STAGING_STORAGE
    image_ca: Path | None = None
    snippets_dir: Path = DEFAULT_SNIPPETS_DIR
    snippets_storage: str = DEFAULT_SNIPPETS_STORAGE
    metrics_listen: str | None = None
    gateway_dir: Path = DEFAULT_GATEWAY_DIR
    # Self-update (agent.update): read when update_channel_url is set, as :attr:`update`.
    release_public_key: Path | None = Field(None, validate_default=True)
    update_channel_ca: Path | None = None
    install_dir: Path = DEFAULT_INSTALL_DIR
    update_state_file: Path | None = None
    update_interval: float = DEFAULT_UPDATE_INTERVAL
    health_deadline: float = DEFAULT_HEALTH_DEADLINE
    service_restart_command: tuple[str, ...] = DEFAULT_RESTART_COMMAND
    update_apply_launcher: tuple[str, ...] = DEFAULT_APPLY_LAUNCHER
    update_registry_credentials: Path | None = None

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, *_: Any, **__: Any
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)

    @property
    def identity(self) -> str:
        """The host identity this agent's certificate must name."""
        return host_identity(self.zone, self.node)

    @property
    def log_level_number(self) -> int:
        return int(getattr(logging, self.log_level.upper()))

    @property
    def update(self) -> UpdateConfig | None:
        """Self-update's settings, or None when no update_channel_url is set."""
        if self.update_channel_url is None:
            return None
        return UpdateConfig(
            channel_url=self.update_channel_url,
            public_key=self.release_public_key or Path(),
            install_dir=self.install_dir,
            state_file=self.update_state_file or self.install_dir / UPDATE_STATE_FILE,
            channel_ca=self.update_channel_ca,
            interval=self.update_interval,
            health_deadline=self.health_deadline,
            restart_command=self.service_restart_command,
            apply_launcher=self.update_apply_launcher,
            registry_credentials=self.update_registry_credentials,
        )

    @field_validator(
        "listen",
        "zone",
        "node",
        "proxmox_url",
        "proxmox_token_id",
        "log_level",
        "metrics_listen",
        mode="before",
    )
    @classmethod
    def _text(cls, value: object) -> str:
        return _text(value)

    @field_validator("listen")
    @classmethod
    def _listen(cls, listen: str, info: ValidationInfo) -> str:
        _check(_listen_problem(listen))
        if _updating(info) and split_listen(listen)[1] == 0:
            raise ValueError("self-update needs a fixed port: its health check dials it after a restart")
        return listen

    @field_validator("zone", "node")
    @classmethod
    def _label(cls, name: str) -> str:
        if not is_dns_label(name):
            raise ValueError(_NOT_A_LABEL.format(name))
        return name

    @field_validator("tls_cert", "tls_key", "ca", mode="before")
    @classmethod
    def _required_file(cls, value: object) -> Path:
        return _readable(value)

    @field_validator(
        "proxmox_token_secret_file",
        "proxmox_ca",
        "orchestrator_ca",
        "image_ca",
        "update_channel_ca",
        mode="before",
    )
    @classmethod
    def _optional_file(cls, value: object) -> Path | None:
        return _readable(value) if value else None

    @field_validator("image_cache", "snippets_dir", "gateway_dir", "install_dir", mode="before")
    @classmethod
    def _folder(cls, value: object) -> Path:
        return Path(_text(value))

    @field_validator("update_state_file", "update_registry_credentials", mode="before")
    @classmethod
    def _optional_path(cls, value: object) -> Path | None:
        """A path that may not exist yet (a file the agent writes)."""
        return Path(_text(value)) if value else None

    @field_validator("proxmox_url")
    @classmethod
    def _proxmox_url(cls, url: str) -> str:
        url = url.rstrip("/")
        _check(_url_problem(url))
        return url

    @field_validator("proxmox_token_id")
    @classmethod
    def _token_id(cls, token_id: str) -> str:
        if not _TOKEN_ID.fullmatch(token_id):
            raise ValueError(f"{token_id!r} is not of the form user@realm!token")
        return token_id

    @field_validator("proxmox_token_secret", mode="before")
    @classmethod
    def _token_secret(cls, inline: object, info: ValidationInfo) -> str:
        """Given inline or in a file (exactly one of the two)."""
        if "proxmox_token_secret_file" not in info.data:
            return ""  # the file's own problem is reported
        path = info.data["proxmox_token_secret_file"]
        if inline and path:
            raise ValueError("give proxmox_token_secret or proxmox_token_secret_file, not both")
        if inline:
            return _text(inline)
        if path is None:
            raise ValueError("missing (or give proxmox_token_secret_file)")
        try:
            secret = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read proxmox_token_secret_file {path}: {exc}") from None
        if not secret:
            raise ValueError(f"proxmox_token_secret_file {path} is empty")
        return secret

    @field_validator("allowed_clients", "console_clients", "gateway_clients", mode="before")
    @classmethod
    def _names(cls, names: object, info: ValidationInfo) -> list[str]:
        if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
            raise ValueError(_NAMES)
        if not names and info.field_name == "allowed_clients":
            raise ValueError("is empty, so the agent would refuse every caller")
        return names

    @field_validator("proxmox_timeout", mode="before")
    @classmethod
    def _timeout(cls, value: object) -> float:
        timeout = _number(value)
        if not 0 < timeout <= 600:
            raise ValueError("must be more than 0 and at most 600 seconds")
        return timeout

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, level: str) -> str:
        if level.lower() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return level.lower()

    @field_validator("orchestrator_url", mode="before")
    @classmethod
    def _orchestrator_url(cls, value: object) -> str | None:
        """Where the certificate is renewed: https://host[:port][/prefix], or None (no renewal)."""
        if not value:
            return None
        url = _text(value).rstrip("/")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("must be an https:// URL (renewals carry a proof of the key)")
        if parts.query or parts.fragment or parts.username:
            raise ValueError("must be just https://host[:port][/path]")
        return url

    @field_validator("image_allow_hosts", mode="before")
    @classmethod
    def _allow_hosts(cls, entries: object) -> frozenset[str]:
        """Hosts or host:port, normalized to lowercase."""
        if not isinstance(entries, list) or not all(isinstance(entry, str) for entry in entries):
            raise ValueError("must be a list of hosts or host:port")
        allowed, problems = set(), []
        for entry in entries:
            try:
                allowed.add(normalize_allow_host(entry))
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise ValueError("; ".join(problems))
        return frozenset(allowed)

    @field_validator("image_max_bytes", mode="before")
    @classmethod
    def _image_max_bytes(cls, value: object) -> int:
        try:
            number = int(value)  # type: ignore[call-overload] # anything: what int() refuses is reported
        except (TypeError, ValueError):
            number = 0
        if isinstance(value, bool) or (isinstance(value, float | str) and str(number) != str(value).strip()):
            number = 0
        if number <= 0:
            raise ValueError(f"{value!r} is not a positive whole number of bytes")
        return number

    @field_validator("image_staging_storage", "snippets_storage", mode="before")
    @classmethod
    def _storage(cls, value: object) -> str:
        storage = _text(value)
        check_storage_id(storage)  # its ValueError names the storage
        return storage

    @field_validator("metrics_listen")
    @classmethod
    def _metrics_listen(cls, listen: str) -> str:
        """The metrics have no authentication: only a loopback address may serve them."""
        _check(_listen_problem(listen))
        if not ipaddress.ip_address(split_listen(listen)[0]).is_loopback:
            raise ValueError(
                "must be a loopback address (e.g. 127.0.0.1:9464): the metrics have no authentication"
            )
        return listen

    @field_validator("update_channel_url", mode="before")
    @classmethod
    def _channel_url(cls, value: object) -> str | None:
        if not value:
            return None
        url = _text(value)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("must be an https:// URL (the pin and downgrade rule trust it)")
        return url

    @field_validator("release_public_key", mode="before")
    @classmethod
    def _release_public_key(cls, value: object, info: ValidationInfo) -> Path | None:
        if value:
            return _readable(value)
        if _updating(info):
            raise ValueError("missing: update_channel_url needs it to verify releases")
        return None

    @field_validator("update_interval", mode="before")
    @classmethod
    def _update_interval(cls, value: object) -> float:
        interval = _seconds(value, lowest=0.0, highest=7 * 86400)
        if 0 < interval < 1:
            raise ValueError("must be 0 (never) or at least 1 second")
        return interval

    @field_validator("health_deadline", mode="before")
    @classmethod
    def _health_deadline(cls, value: object) -> float:
        return _seconds(value, lowest=1.0, highest=3600.0)

    @field_validator("service_restart_command", "update_apply_launcher", mode="before")
    @classmethod
    def _command(cls, value: object, info: ValidationInfo) -> tuple[str, ...]:
        """A command as a list of arguments (never a shell string); empty only where that means something."""
        if not isinstance(value, list) or not all(isinstance(arg, str) and arg for arg in value):
            raise ValueError(_COMMAND)
        if not value and info.field_name == "service_restart_command":
            raise ValueError("must name a command")
        return tuple(value)


# Keys naming files and folders: relative to the configuration file's folder.
_PATH_KEYS = frozenset(
    name for name, f in AgentConfig.model_fields.items() if f.annotation in (Path, Path | None)
)


class _Environment(EnvSettingsSource):
    """The FLEXPLANE_AGENT_<KEY> variables of environ; those of the lists comma-separated."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__(AgentConfig, case_sensitive=False)
        self.env_vars = {name.lower(): value for name, value in environ.items()}

    def prepare_field_value(
        self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool
    ) -> Any:
        if isinstance(value, str) and self.field_is_complex(field):  # the lists: the only complex keys
            return [item.strip() for item in value.split(",") if item.strip()]
        return value


def load_config(path: Path | str, environ: Mapping[str, str] | None = None) -> AgentConfig:
    """Read the TOML file at path, apply environment overrides and validate everything.

    Raises ConfigError with one line per problem.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw: dict[str, Any] = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read the configuration file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    raw.update(_Environment(os.environ if environ is None else environ)())
    return validate(raw, base=path.parent, source=str(path))


def validate(raw: Mapping[str, Any], base: Path = Path(), source: str = "the configuration") -> AgentConfig:
    """Check raw configuration values and build an AgentConfig, or raise ConfigError."""
    values = {key: _under(base, value) if key in _PATH_KEYS else value for key, value in raw.items()}
    try:
        return AgentConfig(**values)
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, error['loc']))}: {_message(error)}" for error in exc.errors()]
        raise ConfigError(f"invalid agent configuration ({source}):\n  " + "\n  ".join(problems)) from None


def _message(error: Any) -> str:
    """Pydantic's error as this module words it: our own checks' messages as they are."""
    kind = error["type"]
    if kind == "missing":
        return "missing"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "value_error":
        return str(error["ctx"]["error"])
    return str(error["msg"])


def _updating(info: ValidationInfo) -> bool:
    """update_channel_url was given (it is missing from info.data when it was given but is invalid)."""
    return info.data.get("update_channel_url", True) is not None


def _check(problem: str | None) -> None:
    if problem:
        raise ValueError(problem)


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value.strip()


def _under(base: Path, value: Any) -> Any:
    """A path of the configuration, relative to its file's folder; what is no path is left to the checks."""
    return str(base / Path(value.strip()).expanduser()) if isinstance(value, str) and value.strip() else value


def _readable(value: object) -> Path:
    path = Path(_text(value))
    if not path.is_file():
        raise ValueError(f"{path} is not a file")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{path} is not readable")
    return path


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type] # anything: what float() refuses is reported
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number of seconds") from None


def _seconds(value: object, *, lowest: float, highest: float) -> float:
    number = _number(value)
    if isinstance(value, bool) or not lowest <= number <= highest:
        raise ValueError(f"must be between {lowest:g} and {highest:g} seconds")
    return number


def split_listen(listen: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` as (host, port)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{listen!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _listen_problem(listen: str) -> str | None:
    try:
        host, port = split_listen(listen)
    except ValueError as exc:
        return str(exc)
    if not 0 <= port <= 65535:
        return f"port {port} is out of range"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"{host!r} is not an IP address"
    return None


def _metrics_listen_problem(listen: str) -> str | None:
    """The metrics have no authentication: only a loopback address may serve them."""
    if problem := _listen_problem(listen):
        return problem
    if not ipaddress.ip_address(split_listen(listen)[0]).is_loopback:
        return "must be a loopback address (e.g. 127.0.0.1:9464): the metrics have no authentication"
    return None


def _url_problem(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https":
        return "must be an https:// URL (the API token must never travel in clear)"
    if not parts.hostname:
        return "has no host"
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        return "must be just https://host:port (the agent adds /api2/json)"
    try:
        _ = parts.port
    except ValueError:
        return "has an invalid port"
    return None
