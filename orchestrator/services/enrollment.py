"""Host enrollment: join tokens, and the platform CA signing the agents' certificates
(:mod:`orchestrator.services.platform_ca`).

An ADMIN creates a join token for a zone and a host name. The node's bootstrap sends it, once,
with a certificate signing request and the address the orchestrator will dial; it receives a
certificate naming the host (``<node>.<zone>.agents.flexplane`` and that address), the CA bundle
and its settings, and the host enters the catalog; the images its zone offers are cached on it as soon
as its agent answers (``services.image_cache``). Later the agent renews its certificate
itself, signing the request with its current key (see ``agentclient.enrollment``).

The settings of a join carry self-update too: the release channel's URL and the platform's
release public key (FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY), with which the bootstrap installs the
channel's release and the agent later updates itself. Without a key or a channel they are left
out, and the node runs without self-update (the bootstrap says so).

Where the state lives (the stateless rule):

- The platform CA is a ``kubernetes.io/tls`` Secret (``FLEXPLANE_AGENT_CA_SECRET``), read on every
  request: rotating it needs no restart, and no replica keeps a copy.
- A join token is a Secret labelled ``flexplane.io/kind=join-token`` holding the SHA-256 of its
  secret part, its zone, host and expiry: never the token. Using it writes ``used-at`` at the
  version that was read, so of two uses racing (threads or replicas) exactly one wins. A used or
  expired token is kept for a day, so that a second use is told "already used" rather than
  "unknown"; creating a token removes those older than that.

Refusals are domain errors: ``Unauthenticated`` for a token or proof that cannot be trusted,
``ValidationFailed`` (naming the field) for a bad CSR or endpoint, ``PermissionDenied`` for a
host that left the catalog. Nothing is issued or written before every check has passed.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import ipaddress
import logging
import secrets
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.conf import settings

from agentclient.enrollment import JoinTokenParts, parse_join_token, renewal_message, verify_proof
from agentclient.identity import host_identity
from orchestrator.errors import (
    Conflict,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    ValidationFailed,
)
from orchestrator.models import Host
from orchestrator.models.zones import host_ident
from orchestrator.services import access, image_cache, mesh, releases
from orchestrator.services.catalog import HOST, MAX_NAME_LENGTH, ZONE, ZONE_LABEL, is_slug
from orchestrator.services.context import Context, Sources
from orchestrator.services.platform_ca import (
    IPAddress,
    check_csr,
    ip_names,
    platform_ca,
    presented,
    sign,
    utc_now,
    utc_text,
)
from orchestrator.sources.kube_objects import KIND_LABEL, SecretEntry
from orchestrator.sources.protocols import KubeApi

logger = logging.getLogger(__name__)

JOIN_TOKEN_KIND = "join-token"  # noqa: S105 - a label value, not a secret
HOST_LABEL = "flexplane.io/host"
# Used and expired tokens are kept this long, so that a late second use hears why it is refused.
KEEP_SPENT_TOKENS = datetime.timedelta(days=1)
RELEASE_KEY_WHERE = "release public key"
# Where agents update from: orchestrator.releases' channel (orchestrator/urls.py), beside enrollment.
CHANNEL_PATH = "/agent/releases/channel.json"

# ------------------------------------------------------------------------------------------ types


@dataclass(frozen=True)
class NewJoinToken:
    """A join token as created: the only time its secret is shown."""

    token: str
    zone: str
    host: str
    expires_at: datetime.datetime
    command: str


@dataclass(frozen=True)
class JoinTokenRecord:
    """A join token as stored (no secret): what ADMIN may list."""

    ident: str
    zone: str
    host: str
    expires_at: datetime.datetime
    created_by: str
    used_at: datetime.datetime | None
    used_by: str
    # The creator's name from their token ("" for a token made before it was kept).
    created_by_name: str = ""

    @classmethod
    def from_secret(cls, entry: SecretEntry) -> JoinTokenRecord:
        data = {key: value.decode("utf-8", "replace") for key, value in entry.data.items()}
        used = data.get("used-at")
        return cls(
            ident=entry.name.removeprefix(f"{JOIN_TOKEN_KIND}-"),
            zone=data.get("zone", ""),
            host=data.get("host", ""),
            expires_at=_from_unix(data.get("expires", "0")),
            created_by=data.get("created-by", ""),
            used_at=_from_unix(used) if used else None,
            used_by=data.get("used-by", ""),
            created_by_name=data.get("created-by-name", ""),
        )

    @property
    def spent_since(self) -> datetime.datetime:
        """When it stopped being usable: used, or expired."""
        return min(self.used_at, self.expires_at) if self.used_at else self.expires_at


@dataclass(frozen=True)
class Issued:
    """What an enrolled or renewing node receives: its certificate, the CA bundle and its settings."""

    certificate: str
    ca: str
    settings: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"certificate": self.certificate, "ca": self.ca, "settings": self.settings}


def _from_unix(value: str | int | float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(int(float(value)), datetime.UTC)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _secret_name(ident: str) -> str:
    return f"{JOIN_TOKEN_KIND}-{ident}"


def enrollment_url(origin: str) -> str:
    """The HTTPS URL nodes reach the orchestrator at: the setting, else the request's own origin."""
    return (settings.FLEXPLANE_ENROLLMENT_URL or origin).rstrip("/")


# ------------------------------------------------------------------------------------ join tokens


def create_join_token(ctx: Context, zone: str, host: str, origin: str) -> NewJoinToken:
    """A single-use join token for host ``host`` of ``zone`` (ADMIN), valid FLEXPLANE_JOIN_TOKEN_TTL.

    The answer carries the token and the command to run on the node; only its hash is stored.
    """
    access.require_admin(ctx)
    if not isinstance(zone, str) or not is_slug(zone):
        raise ValidationFailed("zone", f"zone {zone!r} is not a zone id")
    if not isinstance(host, str) or not is_slug(host):
        raise ValidationFailed(
            "host",
            f"host {host!r} is not a DNS label (lowercase letters, digits and inner '-', "
            "at most 63 characters): use the node's name in Proxmox",
        )
    if len(host_ident(zone, host)) > MAX_NAME_LENGTH:
        raise ValidationFailed(
            "host", f"zone and host names together must be at most {MAX_NAME_LENGTH - 1} characters"
        )
    source = ctx.kube
    if source.get_catalog(ZONE, zone) is None:
        raise ValidationFailed("zone", f"there is no zone {zone!r}")
    _remove_spent_tokens(source)
    now = utc_now()
    expires = int((now + datetime.timedelta(seconds=settings.FLEXPLANE_JOIN_TOKEN_TTL)).timestamp())
    parts = JoinTokenParts(zone, host, expires, secrets.token_hex(8), secrets.token_urlsafe(32))
    source.create_secret(
        _secret_name(parts.ident),
        {
            "hash": _hash(parts.secret).encode(),
            "zone": zone.encode(),
            "host": host.encode(),
            "expires": str(expires).encode(),
            "created-at": str(int(now.timestamp())).encode(),
            "created-by": ctx.principal.subject.encode(),
            "created-by-name": (ctx.principal.name or ctx.principal.email).encode(),
        },
        labels={KIND_LABEL: JOIN_TOKEN_KIND, ZONE_LABEL: zone, HOST_LABEL: host},
    )
    token = str(parts)
    url = enrollment_url(origin)
    command = f"flexplane-agent bootstrap --orchestrator {shlex.quote(url)} --token {shlex.quote(token)}"
    return NewJoinToken(token, zone, host, parts.expires_at, command)


def list_join_tokens(ctx: Context) -> list[JoinTokenRecord]:
    """Every stored join token, newest expiry first (ADMIN); their secrets are not stored, so not shown."""
    access.require_admin(ctx)
    records = [
        JoinTokenRecord.from_secret(e) for e in ctx.kube.list_secrets(f"{KIND_LABEL}={JOIN_TOKEN_KIND}")
    ]
    return sorted(records, key=lambda r: (r.expires_at, r.ident), reverse=True)


def _remove_spent_tokens(source: KubeApi) -> None:
    """Delete tokens used or expired over KEEP_SPENT_TOKENS ago (a lost race is someone else's delete)."""
    horizon = utc_now() - KEEP_SPENT_TOKENS
    for entry in source.list_secrets(f"{KIND_LABEL}={JOIN_TOKEN_KIND}"):
        if JoinTokenRecord.from_secret(entry).spent_since < horizon:
            try:
                source.delete_secret(entry)
            except Conflict:
                continue


def _token_entry(source: KubeApi, token: str) -> tuple[SecretEntry, JoinTokenRecord]:
    """The stored token this one is, if its secret matches and it is still usable; else Unauthenticated."""
    try:
        parts = parse_join_token(token)
    except ValueError as exc:
        raise Unauthenticated(f"the join token is malformed: {exc}") from None
    entry = source.get_secret(_secret_name(parts.ident))
    stored = entry.data.get("hash", b"").decode("ascii", "replace") if entry is not None else ""
    if entry is None or not hmac.compare_digest(stored, _hash(parts.secret)):
        raise Unauthenticated(
            "unknown join token: it was never issued here, or was removed; "
            "create one with createHostJoinToken"
        )
    record = JoinTokenRecord.from_secret(entry)
    if (parts.zone, parts.host, parts.expires_at) != (record.zone, record.host, record.expires_at):
        raise Unauthenticated("unknown join token: its zone, host or expiry were changed")
    if record.used_at is not None:
        by = f" by {record.used_by}" if record.used_by else ""
        raise Unauthenticated(
            f"this join token was already used at {utc_text(record.used_at)}{by}: a join token works once; "
            "create a new one with createHostJoinToken"
        )
    if utc_now() >= record.expires_at:
        raise Unauthenticated(
            f"this join token expired at {utc_text(record.expires_at)}: "
            "create a new one with createHostJoinToken"
        )
    return entry, record


def _use(source: KubeApi, entry: SecretEntry, endpoint: str) -> None:
    """Mark the token used, at the version read: exactly one of two concurrent uses gets here."""
    data = {
        **entry.data,
        "used-at": str(int(time.time())).encode(),
        "used-by": endpoint.encode(),
    }
    try:
        source.replace_secret(entry, data)
    except Conflict:
        raise Unauthenticated(
            "this join token was already used (by a request at the same moment): create a new one"
        ) from None


# ------------------------------------------------------------------------------ endpoint, settings


def _endpoint(value: Any) -> tuple[str, IPAddress]:
    """``address:port`` with an IP (``[v6]:port``): where the agent listens, as its certificate says."""
    bad = ValidationFailed(
        "endpoint", f"endpoint {value!r} must be address:port with an IP address, e.g. 10.0.0.11:7443"
    )
    if not isinstance(value, str):
        raise bad
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        raise bad
    bracketed = host.startswith("[") and host.endswith("]")
    try:
        address = ipaddress.ip_address(host[1:-1] if bracketed else host)
    except ValueError:
        raise bad from None
    if isinstance(address, ipaddress.IPv6Address) != bracketed:
        raise bad
    if address.is_unspecified or address.is_multicast:
        raise ValidationFailed("endpoint", f"endpoint {value!r} is not an address the orchestrator can dial")
    return (f"[{address}]:{port}" if bracketed else f"{address}:{port}"), address


def release_public_key() -> str | None:
    """The platform's release public key, PEM (FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY), or None if unset.

    Read on every join, as the CA is. A key that is set but unusable is ``Unavailable``: a node
    enrolled without it would never update, and nobody would be told.
    """
    configured = settings.FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY.strip()
    if not configured:
        return None
    source = "FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY"
    if configured.startswith("-----BEGIN"):
        data = configured.encode("ascii", "replace")
    else:
        source = f"{configured} ({source})"
        try:
            data = Path(configured).read_bytes()
        except OSError as exc:
            raise Unavailable(
                RELEASE_KEY_WHERE, f"cannot read the release public key {source}: {exc.strerror or exc}"
            ) from None
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        key = None
    if not isinstance(key, Ed25519PublicKey):
        raise Unavailable(
            RELEASE_KEY_WHERE,
            f"the release public key {source} is not an Ed25519 public key in PEM "
            "(the one `flexplane-agent release keygen` writes)",
        )
    pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return pem.decode("ascii")


def update_settings(origin: str) -> dict[str, str]:
    """Where an enrolled node updates itself from and the key releases must verify with; none (and
    said so in the log) when the platform has no release key or serves no channel."""
    key = release_public_key()
    if key is None or not releases.configured():
        missing = (
            "FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY"
            if key is None
            else "FLEXPLANE_AGENT_REGISTRY or FLEXPLANE_AGENT_RELEASES_DIR"
        )
        logger.info("enrolled nodes get no self-update: %s is not set", missing)
        return {}
    return {
        "update_channel_url": enrollment_url(origin) + CHANNEL_PATH,
        "release_public_key": key,
        **registry_settings(),
    }


def registry_settings() -> dict[str, Any]:
    """The registry's read-only access, when releases come from one: with every join and renewal."""
    site = releases.registry()
    return {"update_registry": site.node_access()} if site is not None else {}


def _settings(zone: str, host: str, endpoint: str, origin: str) -> dict[str, Any]:
    """What the agent's configuration needs from the platform (the agent calls its host ``node``)."""
    return {
        "zone": zone,
        "node": host,
        "listen": endpoint,
        "allowed_clients": list(settings.FLEXPLANE_AGENT_ALLOWED_CLIENTS),
        "orchestrator_url": enrollment_url(origin),
        "image_allow_hosts": list(settings.FLEXPLANE_IMAGE_ALLOW_HOSTS),
    }


# ---------------------------------------------------------------------------------- the catalog


def _put_host(source: KubeApi, zone: str, host: str, endpoint: str) -> None:
    """The host in the catalog with this endpoint: created with the defaults, or its endpoint updated."""
    ident = host_ident(zone, host)
    for _ in range(3):
        entry = source.get_catalog(HOST, ident)
        try:
            if entry is None:
                entered = Host(key=f"{zone}/{host}", zone=zone, node=host, endpoint=endpoint)
                source.create_catalog(HOST, ident, entered.to_spec(), labels={ZONE_LABEL: zone})
            elif entry.spec.get("endpoint") != endpoint:
                spec = {**entry.spec, "endpoint": endpoint}
                source.replace_catalog(HOST, ident, spec, entry.resource_version, labels=entry.labels)
            return
        except (Conflict, NotFound):
            continue  # created, changed or removed meanwhile: read it again
    raise Conflict(f"host {zone}/{host} kept changing while it was enrolled; run the bootstrap again")


# ------------------------------------------------------------------------------------ use-cases


def join(
    source: KubeApi, token: Any, csr_pem: Any, endpoint: Any, origin: str, mesh_key: Any = None
) -> Issued:
    """Enroll a node: check the token, the CSR and the endpoint, use the token, add the host, sign.

    With the mesh on, the node's WireGuard public key is checked too (malformed, or another host's:
    refused) and room in the mesh's range (exhausted: said now); the host's endpoint becomes its
    mesh address, which its certificate names beside the node's own.
    """
    if not isinstance(token, str):
        raise Unauthenticated("a join token is required")
    entry, record = _token_entry(source, token)
    zone, host = record.zone, record.host
    identity = host_identity(zone, host)
    csr = check_csr(csr_pem, identity)
    address, ip = _endpoint(endpoint)
    ca = platform_ca(source)
    updates = update_settings(origin)
    if source.get_catalog(ZONE, zone) is None:
        raise ValidationFailed("token", f"zone {zone!r} was removed since this join token was made")
    hub, key = None, ""
    if mesh.enabled():
        if mesh_key is None:
            raise ValidationFailed(
                mesh.KEY_FIELD, "this platform reaches nodes over its WireGuard mesh: update flexplane-agent"
            )
        hub = mesh.hub(source)
        known = mesh.peers(source)
        key = mesh.check_key(source, mesh_key, zone, host, known)
        mesh.check_room(known, zone, host)
    _use(source, entry, address)
    ips = [ip]
    mesh_settings: dict[str, Any] = {}
    if hub is not None:
        peer = mesh.allocate(source, zone, host, key)
        address = mesh.endpoint_of(peer, int(address.rpartition(":")[2]))
        ips = [ipaddress.ip_address(peer.address), ip]
        mesh_settings = {"mesh": hub.settings(peer)}
    _put_host(source, zone, host, address)
    # Its images are cached once its agent (started after this answer) answers.
    image_cache.cache_on_new_host(Sources(kube=source), zone, host)
    certificate = sign(ca, csr, identity, ips)
    node_settings = {**_settings(zone, host, address, origin), **updates, **mesh_settings}
    return Issued(certificate, ca.bundle, node_settings)


def renew(
    source: KubeApi,
    csr_pem: Any,
    certificate_pem: Any,
    timestamp: Any,
    signature: Any,
    origin: str,
    mesh_key: Any = None,
) -> Issued:
    """Renew an agent's certificate: it proves it holds the key of its current, valid certificate.

    A ``mesh_key`` (the node rotating its WireGuard key with its certificate) replaces the node's
    recorded key once every check has passed: the hub takes the new one and refuses the old.
    """
    ca = platform_ca(source)
    current, zone, host = presented(certificate_pem, ca)
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise ValidationFailed("timestamp", "timestamp must be the request's time, whole Unix seconds")
    skew = abs(time.time() - timestamp)
    if skew > settings.FLEXPLANE_RENEWAL_MAX_SKEW:
        raise Unauthenticated(
            f"the request's timestamp is {skew:.0f} s away from the orchestrator's clock (at most "
            f"{settings.FLEXPLANE_RENEWAL_MAX_SKEW:.0f} s): check the node's clock (NTP)"
        )
    if not isinstance(csr_pem, str) or not isinstance(signature, str):
        raise ValidationFailed("csr", "csr and signature are required")
    if not verify_proof(current.public_key(), renewal_message(timestamp, csr_pem), signature):
        raise Unauthenticated(
            "the signature does not verify with the certificate's key: no proof of possession"
        )
    identity = host_identity(zone, host)
    csr = check_csr(csr_pem, identity)
    entry = source.get_catalog(HOST, host_ident(zone, host))
    if entry is None:
        raise PermissionDenied(f"host {zone}/{host} is not in the host list: its certificate is not renewed")
    endpoint = str(entry.spec.get("endpoint", ""))
    try:
        address, ip = _endpoint(endpoint)
        ips = [ip]
    except ValidationFailed:  # an admin gave it a DNS name: keep the addresses it had
        address = endpoint
        ips = ip_names(current)
    node_settings = {**_settings(zone, host, address, origin), **registry_settings()}
    if mesh_key is not None and mesh.enabled():
        hub = mesh.hub(source)
        node_settings["mesh"] = hub.settings(mesh.rotate(source, zone, host, mesh_key))
    return Issued(sign(ca, csr, identity, ips), ca.bundle, node_settings)
