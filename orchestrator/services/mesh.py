"""The WireGuard mesh's state in the management cluster: the hub, and one peer per enrolled node.

Nodes reach the management cluster outbound only: each dials the hub (the mesh control server,
``orchestrator.mesh``) and keeps the path open with keepalives; the orchestrator dials every
agent at its mesh address through the hub. The mTLS of the agents' gRPC is unchanged.

Where the state lives (the stateless rule):

- The hub's key is a Secret (``FLEXPLANE_MESH_HUB_SECRET``: ``private-key``, ``public-key``), made
  by the mesh control server on its first start; its public address is FLEXPLANE_MESH_HUB_ENDPOINT.
- A peer is a catalog object of kind ``meshpeer`` whose id is its mesh address (``10-99-0-2``):
  ``{zone, node, publicKey, address}``, and the hub's ``lastHandshake`` once seen. Allocating an
  address is *creating* that object: of two enrollments racing for one address the API server
  lets exactly one create succeed, the other tries the next address. No lock, no counter.
- The host's catalog ``endpoint`` is ``<mesh address>:<port>``: the agent pool dials it as before,
  and the agent's certificate names that address.

A peer whose host left the catalog (``removeHost``) is dropped by the hub on its next pass (every
second) and its object deleted: the node's key is refused from then on, its address freed.
"""

from __future__ import annotations

import datetime
import ipaddress
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Annotated, Any

from django.conf import settings
from pydantic import Field
from pydantic.dataclasses import dataclass as stored

from agentclient.wireguard import check_public_key, new_private_key, public_key
from orchestrator.errors import Conflict, NotFound, Unavailable, ValidationFailed
from orchestrator.models.specs import SPEC_CONFIG, Stored
from orchestrator.models.zones import host_ident
from orchestrator.services.catalog import HOST, ZONE_LABEL
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import CatalogEntry, SecretEntry
from orchestrator.sources.protocols import KubeApi

PEER = "meshpeer"
WHERE = "mesh"
KEY_FIELD = "mesh_public_key"

# ------------------------------------------------------------------------------------------ types


@dataclass(frozen=True)
class Hub:
    """What a node needs to dial the hub."""

    public_key: str
    endpoint: str
    address: str  # the hub's own mesh address
    network: str  # the mesh range, CIDR

    def settings(self, peer: MeshPeer) -> dict[str, Any]:
        """The ``mesh`` settings an enrolling node receives."""
        return {
            "address": f"{peer.address}/{ipaddress.ip_network(self.network).prefixlen}",
            "hub_public_key": self.public_key,
            "hub_endpoint": self.endpoint,
            "hub_address": self.address,
            "network": self.network,
            "keepalive": settings.FLEXPLANE_MESH_KEEPALIVE,
        }


@stored(frozen=True, config=SPEC_CONFIG)
class MeshPeer(Stored):
    """A node's place in the mesh: its address, its WireGuard public key, its last handshake. Stored in
    camelCase (``publicKey``); its handshake and endpoint only once the hub has seen it."""

    zone: str = ""
    node: str = ""
    address: str = ""
    public_key: str = ""
    last_handshake: int = 0
    # Where the hub last saw the node (its NAT's address): a restarted hub dials it at once.
    endpoint: str = ""
    resource_version: Annotated[str, Field(exclude=True)] = ""

    @classmethod
    def from_entry(cls, entry: CatalogEntry) -> MeshPeer:
        return replace(cls.from_spec(entry.spec), resource_version=entry.resource_version)

    def to_spec(self) -> dict[str, Any]:
        seen = ("lastHandshake", "endpoint")
        return {key: value for key, value in super().to_spec().items() if value or key not in seen}

    @property
    def ident(self) -> str:
        return peer_ident(self.address)

    @property
    def handshake_at(self) -> datetime.datetime | None:
        """The hub's last handshake with the node (None: never)."""
        return (
            datetime.datetime.fromtimestamp(self.last_handshake, datetime.UTC)
            if self.last_handshake
            else None
        )

    @property
    def host_key(self) -> str:
        return f"{self.zone}/{self.node}"


def peer_ident(address: str) -> str:
    return address.replace(".", "-").replace(":", "-")


def enabled() -> bool:
    """Whether the platform runs a mesh (FLEXPLANE_MESH_RANGE is set)."""
    return bool(settings.FLEXPLANE_MESH_RANGE.strip())


def network(value: str | None = None) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    raw = (value if value is not None else settings.FLEXPLANE_MESH_RANGE).strip()
    try:
        net = ipaddress.ip_network(raw, strict=True)
    except ValueError as exc:
        raise Unavailable(
            WHERE, f"FLEXPLANE_MESH_RANGE {raw!r} is not a network in CIDR form: {exc}"
        ) from None
    if net.num_addresses < 4:
        raise Unavailable(WHERE, f"FLEXPLANE_MESH_RANGE {raw} is too small: the hub and one node need a /30")
    return net


def hub_address(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str:
    """The hub's mesh address: the range's first usable address."""
    return str(net.network_address + 1)


def node_addresses(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> Iterator[str]:
    """The addresses nodes may have, in order: every usable address after the hub's."""
    hub = net.network_address + 1
    for address in net.hosts():
        if address != hub:
            yield str(address)


# -------------------------------------------------------------------------------------------- hub


def hub_secret(source: KubeApi) -> SecretEntry | None:
    return source.get_secret(settings.FLEXPLANE_MESH_HUB_SECRET)


def ensure_hub_key(source: KubeApi) -> tuple[str, str]:
    """The hub's (private, public) key, made and stored on first use; a racing maker's key wins."""
    for _ in range(3):
        entry = hub_secret(source)
        if entry is not None:
            private = entry.data.get("private-key", b"").decode("ascii", "replace").strip()
            try:
                return private, public_key(private)
            except ValueError:
                raise Unavailable(
                    WHERE, f"Secret {entry.name} holds no usable WireGuard private-key: delete it to make one"
                ) from None
        private = new_private_key()
        try:
            source.create_secret(
                settings.FLEXPLANE_MESH_HUB_SECRET,
                {"private-key": private.encode(), "public-key": public_key(private).encode()},
            )
        except Conflict:
            continue
        return private, public_key(private)
    raise Conflict("the hub's key Secret kept changing while it was made")


def hub(source: KubeApi) -> Hub:
    """The hub as nodes see it; ``Unavailable`` when the mesh control server has not made its key yet
    or no public endpoint is configured (said at enrollment, before anything is written)."""
    net = network()
    endpoint = settings.FLEXPLANE_MESH_HUB_ENDPOINT.strip()
    if not endpoint:
        raise Unavailable(
            WHERE, "FLEXPLANE_MESH_HUB_ENDPOINT is not set: nodes would not know where the hub is"
        )
    entry = hub_secret(source)
    key = entry.data.get("public-key", b"").decode("ascii", "replace").strip() if entry else ""
    if not key:
        raise Unavailable(
            WHERE,
            f"the mesh hub has no key yet (Secret {settings.FLEXPLANE_MESH_HUB_SECRET}): "
            "start the mesh control server first",
        )
    return Hub(public_key=key, endpoint=endpoint, address=hub_address(net), network=str(net))


# ------------------------------------------------------------------------------------------ peers


def peers(source: KubeApi) -> list[MeshPeer]:
    """Every recorded peer, by address."""
    entries = source.list_catalog([PEER])
    return sorted((MeshPeer.from_entry(e) for e in entries), key=lambda p: ipaddress.ip_address(p.address))


def peer_of(zone: str, node: str, known: list[MeshPeer]) -> MeshPeer | None:
    return next((p for p in known if (p.zone, p.node) == (zone, node)), None)


def check_key(source: KubeApi, value: Any, zone: str, node: str, known: list[MeshPeer]) -> str:
    """A node's public key, valid and not recorded for any other host; else ``ValidationFailed``."""
    try:
        key = check_public_key(value)
    except ValueError as exc:
        raise ValidationFailed(KEY_FIELD, str(exc)) from None
    entry = hub_secret(source)
    if entry is not None and entry.data.get("public-key", b"").decode("ascii", "replace").strip() == key:
        raise ValidationFailed(KEY_FIELD, "this WireGuard public key is the hub's: each node makes its own")
    for peer in known:
        if peer.public_key == key and (peer.zone, peer.node) != (zone, node):
            raise ValidationFailed(
                KEY_FIELD,
                f"this WireGuard public key is already {peer.host_key}'s: each node makes its own key "
                "(`flexplane-agent bootstrap` does); a copied key is refused",
            )
    return key


def check_room(known: list[MeshPeer], zone: str, node: str) -> None:
    """``Unavailable`` now, before a token is used, when the range has no address left for this node."""
    if peer_of(zone, node, known) is not None:
        return
    net = network()
    taken = {p.address for p in known}
    if all(address in taken for address in node_addresses(net)):
        raise Unavailable(
            WHERE,
            f"the mesh range {net} is exhausted: all {len(taken)} node addresses are given; "
            "widen FLEXPLANE_MESH_RANGE or remove hosts that left",
        )


def allocate(source: KubeApi, zone: str, node: str, key: str) -> MeshPeer:
    """This node's peer with ``key``: its existing address kept (the key replaced), else the first free one.

    Race-free: an address is taken by creating its object, which exactly one creator can do.
    """
    net = network()
    for _ in range(5):
        known = peers(source)
        mine = peer_of(zone, node, known)
        if mine is not None:
            if mine.public_key == key:
                return mine
            updated = MeshPeer(zone, node, mine.address, key)
            try:
                source.replace_catalog(
                    PEER, mine.ident, updated.to_spec(), mine.resource_version, labels={ZONE_LABEL: zone}
                )
            except (Conflict, NotFound):
                continue
            return updated
        taken = {p.address for p in known}
        for address in node_addresses(net):
            if address in taken:
                continue
            peer = MeshPeer(zone, node, address, key)
            try:
                created = source.create_catalog(PEER, peer.ident, peer.to_spec(), labels={ZONE_LABEL: zone})
            except Conflict:
                continue  # another enrollment took it a moment ago: the next one
            return MeshPeer.from_entry(created)
        raise Unavailable(WHERE, f"the mesh range {net} is exhausted: no address is left for {zone}/{node}")
    raise Conflict(
        f"the mesh peer of {zone}/{node} kept changing while it was enrolled; run the bootstrap again"
    )


def rotate(source: KubeApi, zone: str, node: str, value: Any) -> MeshPeer:
    """Replace a node's key (its certificate renewal carries the new one); its address stays."""
    known = peers(source)
    if peer_of(zone, node, known) is None:
        raise ValidationFailed(KEY_FIELD, f"host {zone}/{node} has no place in the mesh: bootstrap it again")
    return allocate(source, zone, node, check_key(source, value, zone, node, known))


def endpoint_of(peer: MeshPeer, port: int) -> str:
    """Where the agent serves once on the mesh (what the host's catalog endpoint becomes)."""
    ip = ipaddress.ip_address(peer.address)
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def drop(source: KubeApi, peer: MeshPeer) -> None:
    """Forget a peer whose host is gone (its address is free again); a concurrent change keeps it."""
    try:
        source.delete_catalog(PEER, peer.ident, peer.resource_version or None)
    except Conflict:
        return


def forget(source: KubeApi, zone: str, node: str) -> None:
    """A removed host's peer deleted at once: its address is free, the hub removes its key."""
    if not enabled():
        return
    peer = peer_of(zone, node, peers(source))
    if peer is not None:
        drop(source, peer)


def record_handshake(source: KubeApi, peer: MeshPeer, at: int, endpoint: str | None) -> None:
    """Note the hub's last handshake with a peer and where it came from (written when either moved on)."""
    spec = {**peer.to_spec(), "lastHandshake": at, "endpoint": endpoint or peer.endpoint}
    try:
        source.replace_catalog(PEER, peer.ident, spec, peer.resource_version, labels={ZONE_LABEL: peer.zone})
    except (Conflict, NotFound):
        return


def hosts_present(source: KubeApi) -> dict[str, str]:
    """The ``zone/node`` of every host in the catalog, and its endpoint (where its agent is dialled)."""
    found = {}
    for entry in source.list_catalog([HOST]):
        zone, node = entry.spec.get("zone"), entry.spec.get("node")
        if isinstance(zone, str) and isinstance(node, str) and entry.ident == host_ident(zone, node):
            found[f"{zone}/{node}"] = str(entry.spec.get("endpoint") or "")
    return found


def agent_endpoint(peer: MeshPeer, endpoint: str) -> tuple[str, int] | None:
    """The (address, port) a host's agent serves on at its mesh address; None when its catalog
    endpoint is elsewhere (an admin changed it, or it is not a mesh address)."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit():
        return None
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    return (str(ip), int(port)) if ip == ipaddress.ip_address(peer.address) else None


def peer_of_host(ctx: Context, zone: str, node: str) -> MeshPeer | None:
    """A host's place in the mesh as ADMIN sees it (None for others, and off the mesh): its address
    and the hub's last handshake with it. One read of the peers per request, however many hosts."""
    if not ctx.principal.is_admin or not enabled():
        return None
    by_host = ctx.memoize(("mesh", "peers"), lambda: {p.host_key: p for p in peers(ctx.kube)})
    return by_host.get(f"{zone}/{node}")


def now() -> int:
    return int(time.time())
