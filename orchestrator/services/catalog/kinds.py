"""Each catalog kind: its inputs validated by their declaration (``orchestrator.models.catalog``),
the rules between them, and how the generic create/update/delete build and store it."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from agentclient.identity import LOWER_DNS_LABEL
from orchestrator.models import ComputeProfile, Host, Image, StorageProfile, Zone
from orchestrator.models.catalog import (
    COMPUTE_PROFILE_INPUTS,
    HOST_INPUTS,
    IMAGE_INPUTS,
    MAX_DESCRIPTION_LENGTH,
    MAX_NAME_LENGTH,
    STORAGE_PROFILE_INPUTS,
    ZONE_INPUTS,
    Kind,
)
from orchestrator.models.clusters import KUBERNETES_VERSION, KUBERNETES_VERSION_INPUTS, KubernetesVersion
from orchestrator.models.gateways import pool_problem
from orchestrator.models.specs import Spec
from orchestrator.models.zones import MAX_VLAN_TAG, MAX_VXLAN_ID, host_ident
from orchestrator.services.catalog.fields import (
    CPU_TYPE,
    STORAGE_ID,
    USER_NAME,
    Fields,
    checksum,
    endpoint,
    label,
    source_url,
)
from orchestrator.services.catalog.snapshot import IMAGE, ZONE, ZONE_LABEL, entries
from orchestrator.services.context import Context

M = TypeVar("M", bound=Spec)

# A Linux bridge's name as Proxmox allows it (vmbr0, vmbr100, br-tenant).
BRIDGE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,14}")


def _made(fields: Fields, model: type[M], **values: Any) -> M:
    """The model of checked values. A limit that only the finished value breaks (a list that joins
    longer than it was given) is a ``ValidationFailed`` naming its field, as every other."""
    try:
        return model(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0])
        if error["type"] == "string_too_long":
            message = f"{label(field)} is longer than {error['ctx']['max_length']} characters"
        else:
            message = f"{label(field)}: {error['msg']}"
        raise fields.fail(field, message) from None


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
                raise fields.fail(field, f"{label(field)} must list {{zone, storage}} pairs")
            pairs.append((item.get("zone"), item.get("storage")))
    else:
        raise fields.fail(field, f"{label(field)} must list {{zone, storage}} pairs")
    out: dict[str, str] = {}
    for zone_id, storage in pairs:
        if not isinstance(zone_id, str) or not isinstance(storage, str):
            raise fields.fail(field, f"{label(field)}: each entry needs a zone and a storage")
        if zone_id in out:
            raise fields.fail(field, f"{label(field)}: zone {zone_id!r} is listed twice")
        _known_zone(ctx, fields, field, zone_id)
        if not STORAGE_ID.fullmatch(storage):
            raise fields.fail(field, f"{label(field)}: {storage!r} is not a Proxmox storage id")
        out[zone_id] = storage
    if not out:
        raise fields.fail(field, f"{label(field)} must name the storage of at least one zone")
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- kinds: validate, build


def _description(f: Fields, declared: Kind) -> str:
    return f.text("description", declared["description"].max_length or MAX_DESCRIPTION_LENGTH)


def _compute_profile(ctx: Context, values: Mapping[str, Any]) -> ComputeProfile:
    f, d = Fields(values), COMPUTE_PROFILE_INPUTS
    cpu_type = f.declared(d["cpu_type"])
    if not CPU_TYPE.fullmatch(cpu_type):
        raise f.fail("cpu_type", f"cpuType {cpu_type!r} is not a QEMU CPU model name")
    return _made(
        f,
        ComputeProfile,
        name=f.name("name"),
        vcpus=f.declared(d["vcpus"]),
        memory_mib=f.declared(d["memory_mib"]),
        cpu_type=cpu_type,
        description=_description(f, d),
    )


def _storage_profile(ctx: Context, values: Mapping[str, Any]) -> StorageProfile:
    f, d = Fields(values), STORAGE_PROFILE_INPUTS
    name = f.name("name")
    storages = _storages(ctx, f, "storages")
    min_gb = f.declared(d["min_gb"])
    max_gb = f.declared(d["max_gb"])
    default_gb = f.declared(d["default_gb"])
    if min_gb > max_gb:
        raise f.fail("min_gb", f"minGb ({min_gb}) must not be above maxGb ({max_gb})")
    if not min_gb <= default_gb <= max_gb:
        raise f.fail(
            "default_gb", f"defaultGb ({default_gb}) must be between minGb ({min_gb}) and maxGb ({max_gb})"
        )
    return _made(
        f,
        StorageProfile,
        name=name,
        storages=storages,
        default_gb=default_gb,
        min_gb=min_gb,
        max_gb=max_gb,
        bus=f.declared(d["bus"]),
        format=f.declared(d["format"]),
        read_mbps=f.declared(d["read_mbps"]),
        write_mbps=f.declared(d["write_mbps"]),
        read_iops=f.declared(d["read_iops"]),
        write_iops=f.declared(d["write_iops"]),
        description=_description(f, d),
    )


def _image(ctx: Context, values: Mapping[str, Any]) -> Image:
    f, d = Fields(values), IMAGE_INPUTS
    default_user = f.declared(d["default_user"])
    if not USER_NAME.fullmatch(default_user):
        raise f.fail("default_user", f"defaultUser {default_user!r} is not a valid login name")
    return _made(
        f,
        Image,
        name=f.name("name"),
        os_family=f.declared(d["os_family"]),
        source_url=source_url(f, d["source_url"]),
        checksum=checksum(f, d["checksum"]),
        default_user=default_user,
        min_disk_gb=f.declared(d["min_disk_gb"]),
        description=_description(f, d),
    )


def _addresses(f: Fields, field: str, parse: Callable[[str], Any], what: str) -> list[str]:
    """A comma-separated list (or a list) of addresses or networks, each as ``parse`` normalises it."""
    value = f.values.get(field)
    items = value if isinstance(value, list) else str(value or "").split(",")
    out: list[str] = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        try:
            parsed = str(parse(item))
        except ValueError:
            raise f.fail(field, f"{label(field)}: {item[:60]!r} is not {what}") from None
        if parsed not in out:
            out.append(parsed)
    return out


def _zone(ctx: Context, values: Mapping[str, Any]) -> Zone:
    f, d = Fields(values), ZONE_INPUTS
    ident = f.slug("id")
    network_type = f.declared(d["network_type"])
    first, last = f.declared(d["network_id_first"]), f.declared(d["network_id_last"])
    highest = MAX_VLAN_TAG if network_type == "vlan" else MAX_VXLAN_ID
    if last > highest:
        raise f.fail("network_id_last", f"networkIdLast: a {network_type} id is at most {highest}")
    if first > last:
        raise f.fail("network_id_first", "networkIdFirst must not be above networkIdLast")
    bridge = f.declared(d["network_bridge"])
    if not BRIDGE_NAME.fullmatch(bridge):
        raise f.fail("network_bridge", f"networkBridge {bridge[:40]!r} is not a bridge name")
    return _made(
        f,
        Zone,
        id=ident,
        name=f.title("name", ident),
        description=_description(f, d),
        network_type=network_type,
        network_bridge=bridge,
        network_id_first=first,
        network_id_last=last,
        network_mtu=f.declared(d["network_mtu"]),
        network_ranges=", ".join(
            _addresses(
                f, "network_ranges", lambda r: ipaddress.IPv4Network(r, strict=True), "an IPv4 network (CIDR)"
            )
        ),
        network_dns=", ".join(_addresses(f, "network_dns", ipaddress.IPv4Address, "an IPv4 address")),
        network_routed=f.declared(d["network_routed"]),
        **_external(f, d),
    )


def _external(f: Fields, d: Kind) -> dict[str, Any]:
    """The zone's external network (edge gateways): all of bridge, CIDR, gateway and pool, or none."""
    bridge = f.declared(d["external_bridge"]).strip()
    cidr = f.declared(d["external_cidr"]).strip()
    gateway = f.declared(d["external_gateway"]).strip()
    pool_text, nodes_text = f.declared(d["external_pool"]), f.declared(d["gateway_nodes"])
    pool = _addresses(
        Fields({"external_pool": pool_text}), "external_pool", lambda r: r.replace(" ", ""), "a range"
    )
    nodes = _node_names(f, nodes_text)
    if bridge or cidr or gateway or pool:
        if not BRIDGE_NAME.fullmatch(bridge):
            raise f.fail("external_bridge", f"externalBridge {bridge[:40]!r} is not a bridge name")
        problem = pool_problem(pool, cidr, gateway)
        if problem is not None:
            raise f.fail(*problem)
    return {
        "external_bridge": bridge,
        "external_vlan": f.declared(d["external_vlan"]),
        "external_cidr": cidr,
        "external_gateway": gateway,
        "external_pool": ", ".join(pool),
        "gateway_nodes": ", ".join(nodes),
    }


_NODE = re.compile(LOWER_DNS_LABEL)


def _node_names(f: Fields, text: str) -> list[str]:
    out: list[str] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        if not _NODE.fullmatch(item):
            raise f.fail("gateway_nodes", f"gatewayNodes: {item[:60]!r} is not a host name")
        if item not in out:
            out.append(item)
    return out


def _host(ctx: Context, values: Mapping[str, Any]) -> Host:
    f, d = Fields(values), HOST_INPUTS
    zone_id = f.slug("zone")
    _known_zone(ctx, f, "zone", zone_id)
    node = f.slug("node")
    if len(host_ident(zone_id, node)) > MAX_NAME_LENGTH:
        raise f.fail("node", f"zone and node names together must be at most {MAX_NAME_LENGTH - 1} characters")
    return _made(
        f,
        Host,
        zone=zone_id,
        node=node,
        endpoint=endpoint(f, d["endpoint"]),
        cordoned=f.declared(d["cordoned"]),
        memory_overcommit=f.declared(d["memory_overcommit"]),
        cpu_overcommit=f.declared(d["cpu_overcommit"]),
    )


def _kubernetes_version(ctx: Context, values: Mapping[str, Any]) -> KubernetesVersion:
    f, d = Fields(values), KUBERNETES_VERSION_INPUTS
    version = f.declared(d["version"])
    if not KUBERNETES_VERSION.fullmatch(version):
        raise f.fail("version", f"version {version[:20]!r} is not a Kubernetes release like v1.34.2")
    image = f.declared(d["image"])
    if image not in entries(ctx, IMAGE):
        raise f.fail("image", f"there is no image {image[:70]!r} in the catalog")
    return _made(f, KubernetesVersion, version=version, image=image)


@dataclass(frozen=True)
class CatalogKind(Generic[M]):
    """How the generic create/update/delete handle one kind: its model (whose fields declare its inputs,
    ``declared``), the checks between them, and its id."""

    model: type[M]
    declared: Kind
    validate: Callable[[Context, Mapping[str, Any]], M]
    ident: Callable[[M], str]
    labels: Callable[[M], dict[str, str]] = lambda _obj: {}

    @property
    def kind(self) -> str:
        return self.declared.kind

    @property
    def noun(self) -> str:
        return self.declared.noun

    def build(self, spec: Mapping[str, Any]) -> M:
        """The object of a stored spec."""
        return self.model.from_spec(spec)

    def spec(self, obj: M) -> dict[str, Any]:
        return obj.to_spec()

    def values(self, obj: M) -> dict[str, Any]:
        """The object's values as inputs (snake_case), for an update to start from."""
        return {name: getattr(obj, name) for name in self.declared.names}


COMPUTE_PROFILE_KIND = CatalogKind(ComputeProfile, COMPUTE_PROFILE_INPUTS, _compute_profile, lambda p: p.name)
STORAGE_PROFILE_KIND = CatalogKind(StorageProfile, STORAGE_PROFILE_INPUTS, _storage_profile, lambda p: p.name)
IMAGE_KIND = CatalogKind(Image, IMAGE_INPUTS, _image, lambda i: i.name)
ZONE_KIND = CatalogKind(Zone, ZONE_INPUTS, _zone, lambda z: z.id)
HOST_KIND = CatalogKind(Host, HOST_INPUTS, _host, lambda h: h.ident, labels=lambda h: {ZONE_LABEL: h.zone})
KUBERNETES_VERSION_KIND = CatalogKind(
    KubernetesVersion, KUBERNETES_VERSION_INPUTS, _kubernetes_version, lambda v: v.version
)
