"""The platform catalog: compute and storage profiles, images, zones and hosts (VDCs: ``services.vdcs``).

Every catalog object is a ConfigMap of the platform namespace (``orchestrator.sources.kube``).
A request reads the whole catalog with one list call the first time it needs any of it, and
keeps that snapshot for the rest of the request (and only for it: the stateless rule).

Who may do what, decided here once: reading profiles, images, zones and hosts needs USER or
ADMIN; every write needs ADMIN. Every value is validated, and a bad one is a
``ValidationFailed`` naming its input field. Removing a profile or an image only removes it
from the catalog: the VMs made from it keep running, and keep what they were made from in
their own Proxmox config.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.conf import settings

from agentclient.urlpolicy import UrlRefused, check_url, parse_checksum
from orchestrator.errors import Conflict, NotFound, ValidationFailed
from orchestrator.models import ComputeProfile, Host, Image, StorageProfile, Zone
from orchestrator.models.catalog import BUSES, DEFAULT_CPU_TYPE, FORMATS, OS_FAMILIES
from orchestrator.models.zones import DEFAULT_CPU_OVERCOMMIT, DEFAULT_MEMORY_OVERCOMMIT, host_ident
from orchestrator.services import access
from orchestrator.services.context import Context
from orchestrator.sources.kube import CatalogEntry, kube
from orchestrator.sources.proxmox import ZoneTargets

logger = logging.getLogger(__name__)

COMPUTE_PROFILE = "compute-profile"
STORAGE_PROFILE = "storage-profile"
IMAGE = "image"
ZONE = "zone"
HOST = "host"
VDC = "vdc"
KINDS = (COMPUTE_PROFILE, STORAGE_PROFILE, IMAGE, ZONE, HOST, VDC)
ZONE_LABEL = "flexplane.io/zone"

M = TypeVar("M")


# ---------------------------------------------------------------------------------------- reading


class _Snapshot:
    """The catalog as this request read it: one list call for every kind, on first use.

    The request's own writes are applied to it, so that what it reads afterwards includes them.
    """

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, CatalogEntry]] | None = None
        self._built: dict[str, list[Any]] = {}

    def entries(self, kind: str) -> dict[str, CatalogEntry]:
        if self._entries is None:
            loaded: dict[str, dict[str, CatalogEntry]] = {k: {} for k in KINDS}
            for entry in kube().list_catalog(KINDS):
                loaded.setdefault(entry.kind, {})[entry.ident] = entry
            self._entries = loaded
        return self._entries.setdefault(kind, {})

    def built(self, kind: str, build: Callable[[Mapping[str, Any]], M]) -> list[M]:
        """The kind's objects as models, sorted by id; specs that do not parse are skipped and logged."""
        if kind not in self._built:
            models: list[M] = []
            for ident, entry in sorted(self.entries(kind).items()):
                try:
                    models.append(build(entry.spec))
                except (KeyError, TypeError, ValueError) as exc:
                    logger.warning("catalog: skipping %s %r, whose spec does not parse: %r", kind, ident, exc)
            self._built[kind] = models
        built: list[M] = self._built[kind]
        return built

    def put(self, entry: CatalogEntry) -> None:
        self.entries(entry.kind)[entry.ident] = entry
        self._built.pop(entry.kind, None)

    def drop(self, kind: str, ident: str) -> None:
        self.entries(kind).pop(ident, None)
        self._built.pop(kind, None)


def _snapshot(ctx: Context) -> _Snapshot:
    return ctx.memoize(("catalog", "snapshot"), _Snapshot)


def entries(ctx: Context, kind: str) -> dict[str, CatalogEntry]:
    """The stored entries of one kind, by id (no authorization: for services, not callers)."""
    return _snapshot(ctx).entries(kind)


def objects(ctx: Context, kind: str, build: Callable[[Mapping[str, Any]], M]) -> list[M]:
    """The objects of one kind, built as models, sorted by id (no authorization)."""
    return _snapshot(ctx).built(kind, build)


def remember(ctx: Context, entry: CatalogEntry) -> None:
    """Apply a write this request made to its snapshot."""
    _snapshot(ctx).put(entry)


def forget(ctx: Context, kind: str, ident: str) -> None:
    _snapshot(ctx).drop(kind, ident)


def zones(ctx: Context) -> list[Zone]:
    """Every zone (no authorization: other services read it on behalf of an authorized caller)."""
    return objects(ctx, ZONE, Zone.from_spec)


def hosts(ctx: Context) -> list[Host]:
    """Every host, by zone then node (no authorization, as ``zones``)."""
    return sorted(objects(ctx, HOST, Host.from_spec), key=lambda h: (h.zone, h.node))


def zone_targets(ctx: Context) -> list[ZoneTargets]:
    """Every zone with the agents that can answer for it."""
    by_zone: dict[str, list[Host]] = {}
    for host in hosts(ctx):
        by_zone.setdefault(host.zone, []).append(host)
    return [ZoneTargets(z.id, tuple(h.target for h in by_zone.get(z.id, []))) for z in zones(ctx)]


def _one(ctx: Context, k: _Kind[M], ident: str) -> M:
    for obj in objects(ctx, k.kind, k.build):
        if k.ident(obj) == ident:
            return obj
    raise NotFound(k.noun, ident)


# --- the reads callers make (USER or ADMIN) ---------------------------------------------------------


def list_compute_profiles(ctx: Context) -> list[ComputeProfile]:
    access.require_self_service(ctx)
    return objects(ctx, COMPUTE_PROFILE, ComputeProfile.from_spec)


def compute_profile(ctx: Context, name: str) -> ComputeProfile:
    """One compute profile; ``NotFound`` if there is none of that name."""
    access.require_self_service(ctx)
    return _one(ctx, _COMPUTE_PROFILE, name)


def list_storage_profiles(ctx: Context) -> list[StorageProfile]:
    access.require_self_service(ctx)
    return objects(ctx, STORAGE_PROFILE, StorageProfile.from_spec)


def storage_profile(ctx: Context, name: str) -> StorageProfile:
    access.require_self_service(ctx)
    return _one(ctx, _STORAGE_PROFILE, name)


def list_images(ctx: Context) -> list[Image]:
    access.require_self_service(ctx)
    return objects(ctx, IMAGE, Image.from_spec)


def image(ctx: Context, name: str) -> Image:
    access.require_self_service(ctx)
    return _one(ctx, _IMAGE, name)


def list_zones(ctx: Context) -> list[Zone]:
    access.require_self_service(ctx)
    return zones(ctx)


def zone(ctx: Context, zone_id: str) -> Zone:
    access.require_self_service(ctx)
    return _one(ctx, _ZONE, zone_id)


def list_hosts(ctx: Context, zone_id: str | None = None) -> list[Host]:
    access.require_self_service(ctx)
    return [h for h in hosts(ctx) if zone_id is None or h.zone == zone_id]


def host(ctx: Context, zone_id: str, node: str) -> Host:
    access.require_self_service(ctx)
    return _one(ctx, _HOST, host_ident(zone_id, node))


def host_endpoint(ctx: Context, host: Host) -> str | None:
    """A host's agent address: infrastructure detail that ADMIN sees and others do not (None)."""
    return host.endpoint if ctx.principal.is_admin else None


# ------------------------------------------------------------------------------------- validation

# Catalog names: lowercase DNS names (labels joined by dots, e.g. ubuntu-24.04), at most 63 characters.
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*")
# Ids of zones and VDCs, and Proxmox node names: DNS labels.
_SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_STORAGE_ID = re.compile(r"[a-zA-Z][a-zA-Z0-9._-]{0,62}[a-zA-Z0-9]")  # Proxmox's pve-storage-id
_CPU_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
_USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
_DNS_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_DNS_LABEL}(?:\.{_DNS_LABEL})*")
MAX_NAME_LENGTH = 63
MAX_TITLE_LENGTH = 200
MAX_DESCRIPTION_LENGTH = 2000

NAME_RULE = "a lowercase name of letters, digits, '-' and '.' (at most 63 characters)"
SLUG_RULE = "a lowercase slug of letters, digits and '-' (at most 63 characters, no leading or trailing '-')"


class Fields:
    """Typed, validated reads of an input's values: each bad value is a ``ValidationFailed`` naming it.

    Field names are the inputs' own (snake_case; the API shows them in camelCase). A nested input
    (``quota``) names its fields ``quota.<field>``.
    """

    def __init__(self, values: Mapping[str, Any], prefix: str = "") -> None:
        self.values = values
        self.prefix = prefix

    def path(self, field: str) -> str:
        return f"{self.prefix}{field}"

    def fail(self, field: str, message: str) -> ValidationFailed:
        return ValidationFailed(self.path(field), message)

    def present(self, field: str) -> Any:
        value = self.values.get(field)
        if value is None:
            raise self.fail(field, f"{_label(field)} is required")
        return value

    def string(self, field: str) -> str:
        value = self.present(field)
        if not isinstance(value, str):
            raise self.fail(field, f"{_label(field)} must be a string")
        return value

    def name(self, field: str) -> str:
        value = self.string(field)
        if len(value) > MAX_NAME_LENGTH or not _NAME.fullmatch(value):
            raise self.fail(field, f"{_label(field)} {value!r} is not {NAME_RULE}")
        return value

    def slug(self, field: str) -> str:
        value = self.string(field)
        if not _SLUG.fullmatch(value):
            raise self.fail(field, f"{_label(field)} {value!r} is not {SLUG_RULE}")
        return value

    def title(self, field: str, default: str) -> str:
        """A display name: trimmed, one line, defaulting to ``default`` when empty."""
        value = self.values.get(field)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(field, f"{_label(field)} must be a string")
        value = value.strip()
        if len(value) > MAX_TITLE_LENGTH:
            raise self.fail(field, f"{_label(field)} is longer than {MAX_TITLE_LENGTH} characters")
        if not value.isprintable():
            raise self.fail(field, f"{_label(field)} must be one line of printable characters")
        return value or default

    def text(self, field: str, max_length: int = MAX_DESCRIPTION_LENGTH) -> str:
        value = self.values.get(field)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(field, f"{_label(field)} must be a string")
        if len(value) > max_length:
            raise self.fail(field, f"{_label(field)} is longer than {max_length} characters")
        if any(not (char.isprintable() or char in "\n\t") for char in value):
            raise self.fail(field, f"{_label(field)} contains control characters")
        return value.strip()

    def integer(self, field: str, low: int, high: int, unit: str = "") -> int:
        value = self.present(field)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"{_label(field)} must be a whole number")
        if not low <= value <= high:
            raise self.fail(field, f"{_label(field)} must be between {low} and {high}{unit}, not {value}")
        return value

    def optional_integer(self, field: str, low: int, high: int, unit: str = "") -> int | None:
        return None if self.values.get(field) is None else self.integer(field, low, high, unit)

    def number(self, field: str, low: float, high: float) -> float:
        value = self.present(field)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(field, f"{_label(field)} must be a number")
        if not low <= value <= high:
            raise self.fail(field, f"{_label(field)} must be between {low:g} and {high:g}, not {value:g}")
        return float(value)

    def boolean(self, field: str) -> bool:
        value = self.present(field)
        if not isinstance(value, bool):
            raise self.fail(field, f"{_label(field)} must be true or false")
        return value

    def choice(self, field: str, choices: Iterable[str]) -> str:
        value = self.string(field)
        allowed = tuple(choices)
        if value not in allowed:
            raise self.fail(field, f"{_label(field)} must be one of {', '.join(allowed)}, not {value!r}")
        return value

    def names(self, field: str, rule: Callable[[str], bool], what: str) -> list[str]:
        """A list of names, without duplicates, in the order given; each must pass ``rule``."""
        value = self.values.get(field)
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise self.fail(field, f"{_label(field)} must be a list of names")
        out: list[str] = []
        for item in value:
            if not isinstance(item, str) or not rule(item):
                raise self.fail(field, f"{_label(field)}: {item!r} is not {what}")
            if item not in out:
                out.append(item)
        return out

    def nested(self, field: str) -> Fields:
        value = self.present(field)
        if not isinstance(value, Mapping):
            raise self.fail(field, f"{_label(field)} must be an object")
        return Fields(value, prefix=f"{self.path(field)}.")


def _label(field: str) -> str:
    """How a message names a field: ``memory_mib`` -> ``memoryMib``, as the API spells it."""
    head, *rest = field.split("_")
    return head + "".join(part.capitalize() for part in rest)


def is_name(value: str) -> bool:
    return len(value) <= MAX_NAME_LENGTH and _NAME.fullmatch(value) is not None


def is_slug(value: str) -> bool:
    return _SLUG.fullmatch(value) is not None


def check_fields(values: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse fields this kind does not have (a portal form or a client out of step)."""
    allowed = set(known)
    for field in values:
        if field not in allowed:
            raise ValidationFailed(field, f"there is no field {_label(field)!r} here")


def _endpoint(fields: Fields, field: str) -> str:
    """An agent endpoint: ``host:port`` with an IP address, ``[IPv6]`` or a DNS name."""
    value = fields.string(field).strip()
    host, sep, port = value.rpartition(":")
    bad = fields.fail(field, f"{_label(field)} {value!r} must be host:port (an address or DNS name)")
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        raise bad
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise bad from None
    elif not _HOST_NAME.fullmatch(host):
        raise bad
    return value


def _source_url(fields: Fields, field: str) -> str:
    """An image URL flex.plane may fetch: http(s), a host, no credentials, not a private literal address.

    Names are resolved by the agent that downloads, on its node, and checked again there.
    """
    value = fields.string(field).strip()
    try:
        check_url(value, allow_hosts=settings.FLEXPLANE_IMAGE_ALLOW_HOSTS, resolve=False)
    except UrlRefused as exc:
        raise fields.fail(field, str(exc)) from None
    return value


def _checksum(fields: Fields, field: str) -> str:
    value = fields.string(field)
    try:
        algorithm, digest = parse_checksum(value)
    except ValueError as exc:
        raise fields.fail(field, f"{_label(field)}: {exc}") from None
    return f"{algorithm}:{digest}"


def _known_zone(ctx: Context, fields: Fields, field: str, zone_id: str) -> None:
    if zone_id not in entries(ctx, ZONE):
        raise fields.fail(field, f"there is no zone {zone_id!r}")


def _storages(ctx: Context, fields: Fields, field: str) -> dict[str, str]:
    """zone -> Proxmox storage, given as such a mapping or as a list of ``{zone, storage}``."""
    value = fields.present(field)
    pairs: list[tuple[Any, Any]]
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, Iterable) and not isinstance(value, str):
        pairs = []
        for item in value:
            if not isinstance(item, Mapping):
                raise fields.fail(field, f"{_label(field)} must list {{zone, storage}} pairs")
            pairs.append((item.get("zone"), item.get("storage")))
    else:
        raise fields.fail(field, f"{_label(field)} must list {{zone, storage}} pairs")
    out: dict[str, str] = {}
    for zone_id, storage in pairs:
        if not isinstance(zone_id, str) or not isinstance(storage, str):
            raise fields.fail(field, f"{_label(field)}: each entry needs a zone and a storage")
        if zone_id in out:
            raise fields.fail(field, f"{_label(field)}: zone {zone_id!r} is listed twice")
        _known_zone(ctx, fields, field, zone_id)
        if not _STORAGE_ID.fullmatch(storage):
            raise fields.fail(field, f"{_label(field)}: {storage!r} is not a Proxmox storage id")
        out[zone_id] = storage
    if not out:
        raise fields.fail(field, f"{_label(field)} must name the storage of at least one zone")
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- kinds: validate, build


def _compute_profile(ctx: Context, values: Mapping[str, Any]) -> ComputeProfile:
    f = Fields(values)
    cpu_type = f.string("cpu_type") if values.get("cpu_type") is not None else DEFAULT_CPU_TYPE
    if not _CPU_TYPE.fullmatch(cpu_type):
        raise f.fail("cpu_type", f"cpuType {cpu_type!r} is not a QEMU CPU model name")
    return ComputeProfile(
        name=f.name("name"),
        vcpus=f.integer("vcpus", 1, 512),
        memory_mib=f.integer("memory_mib", 128, 4 * 1024 * 1024, " MiB"),
        cpu_type=cpu_type,
        description=f.text("description"),
    )


def _limit(f: Fields, field: str, high: int, unit: str) -> int | None:
    return f.optional_integer(field, 1, high, unit)


def _storage_profile(ctx: Context, values: Mapping[str, Any]) -> StorageProfile:
    f = Fields(values)
    name = f.name("name")
    storages = _storages(ctx, f, "storages")
    min_gb = f.integer("min_gb", 1, 65536, " GiB")
    max_gb = f.integer("max_gb", 1, 65536, " GiB")
    default_gb = f.integer("default_gb", 1, 65536, " GiB")
    if min_gb > max_gb:
        raise f.fail("min_gb", f"minGb ({min_gb}) must not be above maxGb ({max_gb})")
    if not min_gb <= default_gb <= max_gb:
        raise f.fail(
            "default_gb", f"defaultGb ({default_gb}) must be between minGb ({min_gb}) and maxGb ({max_gb})"
        )
    return StorageProfile(
        name=name,
        storages=storages,
        default_gb=default_gb,
        min_gb=min_gb,
        max_gb=max_gb,
        bus=f.choice("bus", BUSES),
        format=f.choice("format", FORMATS),
        read_mbps=_limit(f, "read_mbps", 100_000, " MB/s"),
        write_mbps=_limit(f, "write_mbps", 100_000, " MB/s"),
        read_iops=_limit(f, "read_iops", 10_000_000, " IOPS"),
        write_iops=_limit(f, "write_iops", 10_000_000, " IOPS"),
        description=f.text("description"),
    )


def _image(ctx: Context, values: Mapping[str, Any]) -> Image:
    f = Fields(values)
    default_user = f.string("default_user")
    if not _USER_NAME.fullmatch(default_user):
        raise f.fail("default_user", f"defaultUser {default_user!r} is not a valid login name")
    return Image(
        name=f.name("name"),
        os_family=f.choice("os_family", OS_FAMILIES),
        source_url=_source_url(f, "source_url"),
        checksum=_checksum(f, "checksum"),
        default_user=default_user,
        min_disk_gb=f.integer("min_disk_gb", 1, 65536, " GiB"),
        description=f.text("description"),
    )


def _zone(ctx: Context, values: Mapping[str, Any]) -> Zone:
    f = Fields(values)
    ident = f.slug("id")
    return Zone(id=ident, name=f.title("name", ident), description=f.text("description"))


def _host(ctx: Context, values: Mapping[str, Any]) -> Host:
    f = Fields(values)
    zone_id = f.slug("zone")
    _known_zone(ctx, f, "zone", zone_id)
    node = f.slug("node")
    if len(host_ident(zone_id, node)) > MAX_NAME_LENGTH:
        raise f.fail("node", f"zone and node names together must be at most {MAX_NAME_LENGTH - 1} characters")
    return Host(
        key=f"{zone_id}/{node}",
        zone=zone_id,
        node=node,
        endpoint=_endpoint(f, "endpoint"),
        cordoned=f.boolean("cordoned"),
        memory_overcommit=f.number("memory_overcommit", 0.1, 8.0),
        cpu_overcommit=f.number("cpu_overcommit", 0.1, 64.0),
    )


@dataclass(frozen=True)
class _Kind(Generic[M]):
    """How the generic create/update/delete handle one kind."""

    kind: str
    noun: str
    build: Callable[[Mapping[str, Any]], M]
    validate: Callable[[Context, Mapping[str, Any]], M]
    # Input fields (snake_case), and those that identify the object (never changed by an update).
    fields: tuple[str, ...]
    key_fields: tuple[str, ...]
    defaults: Mapping[str, Any]
    ident: Callable[[M], str]
    spec: Callable[[M], dict[str, Any]]
    labels: Callable[[M], dict[str, str]] = lambda _obj: {}


_COMPUTE_PROFILE = _Kind[ComputeProfile](
    kind=COMPUTE_PROFILE,
    noun="compute profile",
    build=ComputeProfile.from_spec,
    validate=_compute_profile,
    fields=("name", "vcpus", "memory_mib", "cpu_type", "description"),
    key_fields=("name",),
    defaults={"cpu_type": DEFAULT_CPU_TYPE, "description": ""},
    ident=lambda p: p.name,
    spec=lambda p: p.to_spec(),
)
_STORAGE_PROFILE = _Kind[StorageProfile](
    kind=STORAGE_PROFILE,
    noun="storage profile",
    build=StorageProfile.from_spec,
    validate=_storage_profile,
    fields=(
        "name",
        "storages",
        "default_gb",
        "min_gb",
        "max_gb",
        "bus",
        "format",
        "read_mbps",
        "write_mbps",
        "read_iops",
        "write_iops",
        "description",
    ),
    key_fields=("name",),
    defaults={"bus": "scsi", "format": "raw", "description": ""},
    ident=lambda p: p.name,
    spec=lambda p: p.to_spec(),
)
_IMAGE = _Kind[Image](
    kind=IMAGE,
    noun="image",
    build=Image.from_spec,
    validate=_image,
    fields=("name", "os_family", "source_url", "checksum", "default_user", "min_disk_gb", "description"),
    key_fields=("name",),
    defaults={"description": ""},
    ident=lambda i: i.name,
    spec=lambda i: i.to_spec(),
)
_ZONE = _Kind[Zone](
    kind=ZONE,
    noun="zone",
    build=Zone.from_spec,
    validate=_zone,
    fields=("id", "name", "description"),
    key_fields=("id",),
    defaults={"description": ""},
    ident=lambda z: z.id,
    spec=lambda z: z.to_spec(),
)
_HOST = _Kind[Host](
    kind=HOST,
    noun="host",
    build=Host.from_spec,
    validate=_host,
    fields=("zone", "node", "endpoint", "cordoned", "memory_overcommit", "cpu_overcommit"),
    key_fields=("zone", "node"),
    defaults={
        "cordoned": False,
        "memory_overcommit": DEFAULT_MEMORY_OVERCOMMIT,
        "cpu_overcommit": DEFAULT_CPU_OVERCOMMIT,
    },
    ident=lambda h: h.ident,
    spec=lambda h: h.to_spec(),
    labels=lambda h: {ZONE_LABEL: h.zone},
)


# ------------------------------------------------------------------------------- generic writes


def _current(ctx: Context, k: _Kind[M], ident: str) -> tuple[CatalogEntry, M]:
    entry = entries(ctx, k.kind).get(ident)
    if entry is None:
        raise NotFound(k.noun, ident)
    return entry, k.build(entry.spec)


def _create(ctx: Context, k: _Kind[M], data: Mapping[str, Any]) -> M:
    access.require_admin(ctx)
    check_fields(data, k.fields)
    obj = k.validate(ctx, {**k.defaults, **{f: v for f, v in data.items() if v is not None}})
    ident = k.ident(obj)
    if ident in entries(ctx, k.kind):
        raise Conflict(f"{k.noun} {ident!r} already exists")
    remember(ctx, kube().create_catalog(k.kind, ident, k.spec(obj), labels=k.labels(obj)))
    return obj


def _update(ctx: Context, k: _Kind[M], ident: str, changes: Mapping[str, Any]) -> M:
    access.require_admin(ctx)
    check_fields(changes, k.fields)
    entry, current = _current(ctx, k, ident)
    for field in k.key_fields:
        if field in changes and changes[field] != getattr(current, field):
            raise ValidationFailed(field, f"{_label(field)} cannot change: create another {k.noun} instead")
    values = {f: getattr(current, f) for f in k.fields} | dict(changes)
    obj = k.validate(ctx, values)
    remember(
        ctx, kube().replace_catalog(k.kind, ident, k.spec(obj), entry.resource_version, labels=k.labels(obj))
    )
    return obj


def _delete(ctx: Context, k: _Kind[M], ident: str, check: Callable[[M], None] | None = None) -> M:
    access.require_admin(ctx)
    entry, current = _current(ctx, k, ident)
    if check is not None:
        check(current)
    if not kube().delete_catalog(k.kind, ident, entry.resource_version):
        raise NotFound(k.noun, ident)
    forget(ctx, k.kind, ident)
    return current


# --- compute profiles (ADMIN) -----------------------------------------------------------------------


def create_compute_profile(ctx: Context, data: Mapping[str, Any]) -> ComputeProfile:
    """Add a compute profile: ``name``, ``vcpus``, ``memory_mib``, ``cpu_type``, ``description``."""
    return _create(ctx, _COMPUTE_PROFILE, data)


def update_compute_profile(ctx: Context, name: str, changes: Mapping[str, Any]) -> ComputeProfile:
    """Change the given fields of a compute profile (VMs already made keep their size)."""
    return _update(ctx, _COMPUTE_PROFILE, name, changes)


def delete_compute_profile(ctx: Context, name: str) -> ComputeProfile:
    """Remove a compute profile from the catalog; VMs made from it are untouched."""
    return _delete(ctx, _COMPUTE_PROFILE, name)


# --- storage profiles (ADMIN) -----------------------------------------------------------------------


def create_storage_profile(ctx: Context, data: Mapping[str, Any]) -> StorageProfile:
    """Add a storage profile: ``storages`` maps zones to Proxmox storages (or lists ``{zone, storage}``)."""
    return _create(ctx, _STORAGE_PROFILE, data)


def update_storage_profile(ctx: Context, name: str, changes: Mapping[str, Any]) -> StorageProfile:
    """Change the given fields; a limit set to None is removed (unlimited)."""
    return _update(ctx, _STORAGE_PROFILE, name, changes)


def delete_storage_profile(ctx: Context, name: str) -> StorageProfile:
    return _delete(ctx, _STORAGE_PROFILE, name)


# --- images (ADMIN) ---------------------------------------------------------------------------------


def create_image(ctx: Context, data: Mapping[str, Any]) -> Image:
    """Add an image; its URL is checked against the image URL policy, its checksum is required."""
    return _create(ctx, _IMAGE, data)


def update_image(ctx: Context, name: str, changes: Mapping[str, Any]) -> Image:
    return _update(ctx, _IMAGE, name, changes)


def delete_image(ctx: Context, name: str) -> Image:
    """Remove an image from the catalog; VMs made from it (and templates on hosts) are untouched."""
    return _delete(ctx, _IMAGE, name)


# --- zones and hosts (ADMIN) ------------------------------------------------------------------------


def create_zone(ctx: Context, data: Mapping[str, Any]) -> Zone:
    return _create(ctx, _ZONE, data)


def update_zone(ctx: Context, zone_id: str, changes: Mapping[str, Any]) -> Zone:
    return _update(ctx, _ZONE, zone_id, changes)


def delete_zone(ctx: Context, zone_id: str) -> Zone:
    """Remove a zone; refused (``Conflict``) while it has hosts, or VDCs or storage profiles name it."""

    def check(_zone: Zone) -> None:
        in_zone = [h.node for h in hosts(ctx) if h.zone == zone_id]
        if in_zone:
            raise Conflict(
                f"zone {zone_id!r} still has {len(in_zone)} host(s) ({', '.join(in_zone)}): remove them first"
            )
        using = sorted(i for i, e in entries(ctx, VDC).items() if zone_id in (e.spec.get("zones") or []))
        if using:
            raise Conflict(
                f"zone {zone_id!r} is allowed in VDC(s) {', '.join(using)}: remove it from them first"
            )
        storing = sorted(
            p.name for p in objects(ctx, STORAGE_PROFILE, StorageProfile.from_spec) if zone_id in p.storages
        )
        if storing:
            raise Conflict(
                f"zone {zone_id!r} has a storage in storage profile(s) {', '.join(storing)}: "
                "remove it from them first"
            )

    return _delete(ctx, _ZONE, zone_id, check)


def create_host(ctx: Context, data: Mapping[str, Any]) -> Host:
    """Add a host: its ``zone``, Proxmox ``node`` name, agent ``endpoint`` (host:port), overcommit ratios."""
    return _create(ctx, _HOST, data)


def update_host(ctx: Context, zone_id: str, node: str, changes: Mapping[str, Any]) -> Host:
    """Change a host; ``cordoned`` true keeps new VMs off it while its VMs keep running."""
    return _update(ctx, _HOST, host_ident(zone_id, node), changes)


def drop_host(ctx: Context, zone_id: str, node: str, check: Callable[[Host], None] | None = None) -> Host:
    """Remove a host's catalog entry once ``check(host)`` passes: flex.plane stops reaching its agent,
    Proxmox is untouched. ``services.hosts.remove_host`` is the operation (it checks the host is empty)."""
    return _delete(ctx, _HOST, host_ident(zone_id, node), check)
