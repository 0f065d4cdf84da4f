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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
# Keys whose environment variable is a comma-separated list.
_LIST_KEYS = (
    "allowed_clients",
    "console_clients",
    "gateway_clients",
    "image_allow_hosts",
    "service_restart_command",
    "update_apply_launcher",
)

# user@realm!tokenname, as Proxmox names API tokens.
_TOKEN_ID = re.compile(r"[^\s@!:=]+@[A-Za-z][A-Za-z0-9._-]*![A-Za-z][A-Za-z0-9._-]*")

_STRING_KEYS = (
    "listen",
    "zone",
    "node",
    "tls_cert",
    "tls_key",
    "ca",
    "proxmox_url",
    "proxmox_token_id",
    "proxmox_token_secret",
    "proxmox_token_secret_file",
    "proxmox_ca",
    "log_level",
    "orchestrator_url",
    "orchestrator_ca",
    "image_cache",
    "image_staging_storage",
    "image_ca",
    "snippets_dir",
    "snippets_storage",
    "update_channel_url",
    "update_channel_ca",
    "release_public_key",
    "install_dir",
    "update_state_file",
    "update_registry_credentials",
    "metrics_listen",
    "gateway_dir",
)
KNOWN_KEYS = frozenset(
    (*_STRING_KEYS, *_LIST_KEYS, "proxmox_timeout", "image_max_bytes", "update_interval", "health_deadline")
)


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


@dataclass(frozen=True)
class AgentConfig:
    """The validated configuration of one agent."""

    listen: str
    zone: str
    node: str
    tls_cert: Path
    tls_key: Path
    ca: Path
    proxmox_url: str
    proxmox_token_id: str
    proxmox_token_secret: str = field(repr=False)
    allowed_clients: frozenset[str] = frozenset(DEFAULT_ALLOWED_CLIENTS)
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
    update: UpdateConfig | None = None
    console_clients: frozenset[str] = frozenset(DEFAULT_ORCHESTRATOR_CLIENTS)
    metrics_listen: str | None = None
    gateway_clients: frozenset[str] = frozenset(DEFAULT_ORCHESTRATOR_CLIENTS)
    gateway_dir: Path = DEFAULT_GATEWAY_DIR

    @property
    def identity(self) -> str:
        """The host identity this agent's certificate must name."""
        return host_identity(self.zone, self.node)

    @property
    def log_level_number(self) -> int:
        return int(getattr(logging, self.log_level.upper()))


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
    raw.update(environment_overrides(os.environ if environ is None else environ))
    return validate(raw, base=path.parent, source=str(path))


def environment_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """The FLEXPLANE_AGENT_<KEY> variables, as configuration keys and values."""
    overrides: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        key = name[len(ENV_PREFIX) :].lower()
        if key in _LIST_KEYS:
            overrides[key] = [item.strip() for item in value.split(",") if item.strip()]
        else:
            overrides[key] = value
    return overrides


class _Checker:
    """Collects problems so that one run reports all of them."""

    def __init__(self, raw: Mapping[str, Any], base: Path) -> None:
        self.raw = raw
        self.base = base
        self.problems: list[str] = []

    def problem(self, key: str, message: str) -> None:
        self.problems.append(f"{key}: {message}")

    def string(self, key: str, default: str | None = None) -> str:
        value = self.raw.get(key, default)
        if value is None:
            self.problem(key, "missing")
            return ""
        if not isinstance(value, str) or not value.strip():
            self.problem(key, "must be a non-empty string")
            return ""
        return value.strip()

    def readable_file(self, key: str, *, optional: bool = False) -> Path | None:
        if optional and not self.raw.get(key):
            return None
        value = self.string(key)
        if not value:
            return None
        path = self.base / Path(value).expanduser()
        if not path.is_file():
            self.problem(key, f"{path} is not a file")
        elif not os.access(path, os.R_OK):
            self.problem(key, f"{path} is not readable")
        return path


def validate(raw: Mapping[str, Any], base: Path = Path(), source: str = "the configuration") -> AgentConfig:
    """Check raw configuration values and build an AgentConfig, or raise ConfigError."""
    check = _Checker(raw, base)
    for key in sorted(set(raw) - KNOWN_KEYS):
        check.problem(key, "unknown key")

    listen = check.string("listen")
    if listen and (problem := _listen_problem(listen)):
        check.problem("listen", problem)
    zone = check.string("zone")
    if zone and not is_dns_label(zone):
        check.problem("zone", f"{zone!r} is not a DNS label (letters, digits, inner hyphens; up to 63)")
    node = check.string("node")
    if node and not is_dns_label(node):
        check.problem("node", f"{node!r} is not a DNS label (letters, digits, inner hyphens; up to 63)")

    tls_cert = check.readable_file("tls_cert")
    tls_key = check.readable_file("tls_key")
    ca = check.readable_file("ca")
    proxmox_ca = check.readable_file("proxmox_ca", optional=True)

    allowed = raw.get("allowed_clients", list(DEFAULT_ALLOWED_CLIENTS))
    if not isinstance(allowed, list) or not all(isinstance(name, str) and name for name in allowed):
        check.problem("allowed_clients", "must be a list of client certificate common names")
        allowed = []
    elif not allowed:
        check.problem("allowed_clients", "is empty, so the agent would refuse every caller")

    proxmox_url = check.string("proxmox_url", DEFAULT_PROXMOX_URL).rstrip("/")
    if proxmox_url and (problem := _url_problem(proxmox_url)):
        check.problem("proxmox_url", problem)
    token_id = check.string("proxmox_token_id", DEFAULT_TOKEN_ID)
    if token_id and not _TOKEN_ID.fullmatch(token_id):
        check.problem("proxmox_token_id", f"{token_id!r} is not of the form user@realm!token")
    secret = _token_secret(check)

    timeout = raw.get("proxmox_timeout", DEFAULT_PROXMOX_TIMEOUT)
    try:
        timeout = float(timeout)
    except (TypeError, ValueError):
        check.problem("proxmox_timeout", f"{timeout!r} is not a number of seconds")
        timeout = DEFAULT_PROXMOX_TIMEOUT
    if not 0 < timeout <= 600:
        check.problem("proxmox_timeout", "must be more than 0 and at most 600 seconds")

    log_level = check.string("log_level", "info").lower()
    if log_level and log_level not in LOG_LEVELS:
        check.problem("log_level", f"must be one of {', '.join(LOG_LEVELS)}")
    orchestrator_url = _orchestrator_url(check)
    orchestrator_ca = check.readable_file("orchestrator_ca", optional=True)

    image_allow_hosts = _allow_hosts(check)
    image_cache = base / Path(check.string("image_cache", str(DEFAULT_IMAGE_CACHE))).expanduser()
    image_max_bytes = _image_max_bytes(check)
    staging = check.string("image_staging_storage", DEFAULT_IMAGE_STAGING_STORAGE)
    if staging:
        try:
            check_storage_id(staging)
        except ValueError as exc:
            check.problem("image_staging_storage", str(exc))
    image_ca = check.readable_file("image_ca", optional=True)
    snippets_dir = base / Path(check.string("snippets_dir", str(DEFAULT_SNIPPETS_DIR))).expanduser()
    snippets_storage = check.string("snippets_storage", DEFAULT_SNIPPETS_STORAGE)
    if snippets_storage:
        try:
            check_storage_id(snippets_storage)
        except ValueError as exc:
            check.problem("snippets_storage", str(exc))
    update = _update(check, listen)
    console_clients = raw.get("console_clients", list(DEFAULT_ORCHESTRATOR_CLIENTS))
    if not isinstance(console_clients, list) or not all(isinstance(n, str) and n for n in console_clients):
        check.problem("console_clients", "must be a list of client certificate common names")
        console_clients = []
    metrics_listen = check.string("metrics_listen") if "metrics_listen" in raw else None
    if metrics_listen is not None and (problem := _metrics_listen_problem(metrics_listen)):
        check.problem("metrics_listen", problem)
    gateway_clients = raw.get("gateway_clients", list(DEFAULT_ORCHESTRATOR_CLIENTS))
    if not isinstance(gateway_clients, list) or not all(isinstance(n, str) and n for n in gateway_clients):
        check.problem("gateway_clients", "must be a list of client certificate common names")
        gateway_clients = []
    gateway_dir = base / Path(check.string("gateway_dir", str(DEFAULT_GATEWAY_DIR))).expanduser()

    if check.problems:
        raise ConfigError(f"invalid agent configuration ({source}):\n  " + "\n  ".join(check.problems))
    if tls_cert is None or tls_key is None or ca is None:  # reported above; this narrows the types
        raise ConfigError(f"invalid agent configuration ({source})")
    return AgentConfig(
        listen=listen,
        zone=zone,
        node=node,
        tls_cert=tls_cert,
        tls_key=tls_key,
        ca=ca,
        proxmox_url=proxmox_url,
        proxmox_token_id=token_id,
        proxmox_token_secret=secret,
        allowed_clients=frozenset(allowed),
        proxmox_ca=proxmox_ca,
        proxmox_timeout=timeout,
        log_level=log_level,
        orchestrator_url=orchestrator_url,
        orchestrator_ca=orchestrator_ca,
        image_allow_hosts=image_allow_hosts,
        image_cache=image_cache,
        image_max_bytes=image_max_bytes,
        image_staging_storage=staging,
        image_ca=image_ca,
        snippets_dir=snippets_dir,
        snippets_storage=snippets_storage,
        update=update,
        console_clients=frozenset(console_clients),
        metrics_listen=metrics_listen,
        gateway_clients=frozenset(gateway_clients),
        gateway_dir=gateway_dir,
    )


def _update(check: _Checker, listen: str) -> UpdateConfig | None:
    """Self-update's settings, or None when no update_channel_url is set."""
    url = check.raw.get("update_channel_url")
    if not url:
        return None
    url = check.string("update_channel_url")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        check.problem("update_channel_url", "must be an https:// URL (the pin and downgrade rule trust it)")
    public_key = None
    if not check.raw.get("release_public_key"):
        check.problem("release_public_key", "missing: update_channel_url needs it to verify releases")
    else:
        public_key = check.readable_file("release_public_key")
    install_dir = check.base / Path(check.string("install_dir", str(DEFAULT_INSTALL_DIR))).expanduser()
    state = check.string("update_state_file", str(install_dir / UPDATE_STATE_FILE))
    interval = _seconds(check, "update_interval", DEFAULT_UPDATE_INTERVAL, lowest=0.0, highest=7 * 86400)
    if 0 < interval < 1:
        check.problem("update_interval", "must be 0 (never) or at least 1 second")
    deadline = _seconds(check, "health_deadline", DEFAULT_HEALTH_DEADLINE, lowest=1.0, highest=3600.0)
    if listen and not _listen_problem(listen) and split_listen(listen)[1] == 0:
        check.problem("listen", "self-update needs a fixed port: its health check dials it after a restart")
    return UpdateConfig(
        channel_url=url,
        public_key=public_key or Path(),
        install_dir=install_dir,
        state_file=check.base / Path(state).expanduser(),
        channel_ca=check.readable_file("update_channel_ca", optional=True),
        interval=interval,
        health_deadline=deadline,
        restart_command=_command(check, "service_restart_command", DEFAULT_RESTART_COMMAND, empty=False),
        apply_launcher=_command(check, "update_apply_launcher", DEFAULT_APPLY_LAUNCHER, empty=True),
        registry_credentials=_optional_path(check, "update_registry_credentials"),
    )


def _optional_path(check: _Checker, key: str) -> Path | None:
    """A path that may not exist yet (a file the renewal rewrites), relative to the configuration."""
    value = check.raw.get(key)
    return check.base / Path(check.string(key)).expanduser() if value else None


def _seconds(check: _Checker, key: str, default: float, *, lowest: float, highest: float) -> float:
    value = check.raw.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        check.problem(key, f"{value!r} is not a number of seconds")
        return default
    if isinstance(value, bool) or not lowest <= number <= highest:
        check.problem(key, f"must be between {lowest:g} and {highest:g} seconds")
        return default
    return number


def _command(check: _Checker, key: str, default: tuple[str, ...], *, empty: bool) -> tuple[str, ...]:
    """A command as a list of arguments (never a shell string); empty only where that means something."""
    value = check.raw.get(key, list(default))
    if not isinstance(value, list) or not all(isinstance(arg, str) and arg for arg in value):
        check.problem(key, 'must be a list of arguments, e.g. ["systemctl", "restart", "flexplane-agent"]')
        return default
    if not value and not empty:
        check.problem(key, "must name a command")
    return tuple(value)


def _orchestrator_url(check: _Checker) -> str | None:
    """Where the certificate is renewed: https://host[:port][/prefix], or None (no renewal)."""
    if not check.raw.get("orchestrator_url"):
        return None
    url = check.string("orchestrator_url").rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        check.problem("orchestrator_url", "must be an https:// URL (renewals carry a proof of the key)")
    elif parts.query or parts.fragment or parts.username:
        check.problem("orchestrator_url", "must be just https://host[:port][/path]")
    return url


def _allow_hosts(check: _Checker) -> frozenset[str]:
    """image_allow_hosts, normalized: hosts or host:port, lowercase."""
    entries = check.raw.get("image_allow_hosts", [])
    if not isinstance(entries, list) or not all(isinstance(entry, str) for entry in entries):
        check.problem("image_allow_hosts", "must be a list of hosts or host:port")
        return frozenset()
    allowed = set()
    for entry in entries:
        try:
            allowed.add(normalize_allow_host(entry))
        except ValueError as exc:
            check.problem("image_allow_hosts", str(exc))
    return frozenset(allowed)


def _image_max_bytes(check: _Checker) -> int:
    value = check.raw.get("image_max_bytes", DEFAULT_IMAGE_MAX_BYTES)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if isinstance(value, bool) or (isinstance(value, float | str) and str(number) != str(value).strip()):
        number = 0
    if number <= 0:
        check.problem("image_max_bytes", f"{value!r} is not a positive whole number of bytes")
        return DEFAULT_IMAGE_MAX_BYTES
    return number


def _token_secret(check: _Checker) -> str:
    """The token secret, given inline or in a file (exactly one of the two)."""
    inline = check.raw.get("proxmox_token_secret")
    from_file = check.raw.get("proxmox_token_secret_file")
    if inline and from_file:
        check.problem(
            "proxmox_token_secret", "give proxmox_token_secret or proxmox_token_secret_file, not both"
        )
        return ""
    if not inline and not from_file:
        check.problem("proxmox_token_secret", "missing (or give proxmox_token_secret_file)")
        return ""
    if inline:
        return check.string("proxmox_token_secret")
    path = check.readable_file("proxmox_token_secret_file")
    if path is None or not path.is_file():
        return ""
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        check.problem("proxmox_token_secret_file", f"cannot read {path}: {exc}")
        return ""
    if not secret:
        check.problem("proxmox_token_secret_file", f"{path} is empty")
    return secret


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
