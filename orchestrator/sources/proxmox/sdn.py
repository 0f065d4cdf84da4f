"""A zone's Proxmox SDN in flex.plane's terms: the SDN zone tenant networks live in, VNets, subnets,
and applying what is pending.

Proxmox keeps SDN writes as pending changes of the cluster's configuration until ``PUT /cluster/sdn``
applies them on every node; a VNet is a bridge a VM can use only once applied. Reads ask for the
pending view (``pending=1``), so a VNet written but not applied yet is seen (and its id and tag are
not handed out twice). Everything goes through the zone's agents like the rest of ``ZoneApi``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# The zone's read (path, params) and write (node, method, path, params), failed over as ``ZoneApi``'s.
Read = Callable[..., Any]
Write = Callable[..., Any]


def _pending_view(item: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """An SDN object as it will be once applied, and whether anything of it is pending.

    With ``pending=1`` Proxmox answers the running values at the top and the pending ones under
    ``pending``, with a ``state`` of ``new``, ``changed`` or ``deleted``.
    """
    values = {k: v for k, v in item.items() if k not in ("pending", "state")}
    pending = item.get("pending")
    if isinstance(pending, Mapping):
        values.update(pending)
    state = item.get("state")
    return values, bool(state) or isinstance(pending, Mapping)


@dataclass(frozen=True)
class SdnZone:
    id: str
    type: str
    bridge: str | None
    mtu: int | None
    pending: bool
    deleted: bool

    @classmethod
    def parse(cls, item: Mapping[str, Any]) -> SdnZone:
        values, pending = _pending_view(item)
        mtu = values.get("mtu")
        return cls(
            id=str(values.get("zone", "")),
            type=str(values.get("type", "")),
            bridge=str(values["bridge"]) if values.get("bridge") else None,
            mtu=int(mtu) if mtu not in (None, "") else None,
            pending=pending,
            deleted=item.get("state") == "deleted",
        )


@dataclass(frozen=True)
class VNet:
    id: str
    zone: str
    tag: int | None
    alias: str
    pending: bool
    deleted: bool

    @classmethod
    def parse(cls, item: Mapping[str, Any]) -> VNet:
        values, pending = _pending_view(item)
        tag = values.get("tag")
        return cls(
            id=str(values.get("vnet", "")),
            zone=str(values.get("zone", "")),
            tag=int(tag) if tag not in (None, "") else None,
            alias=str(values.get("alias") or ""),
            pending=pending,
            deleted=item.get("state") == "deleted",
        )


@dataclass(frozen=True)
class Subnet:
    id: str
    cidr: str
    gateway: str | None

    @classmethod
    def parse(cls, item: Mapping[str, Any]) -> Subnet:
        values, _pending = _pending_view(item)
        return cls(
            id=str(values.get("subnet", "")),
            cidr=str(values.get("cidr") or ""),
            gateway=str(values["gateway"]) if values.get("gateway") else None,
        )


def parse_vnets(answer: Any) -> tuple[VNet, ...]:
    """``GET /cluster/sdn/vnets?pending=1``'s VNets, those being deleted left out."""
    found = (VNet.parse(v) for v in answer or [] if isinstance(v, dict))
    return tuple(v for v in found if not v.deleted)


VNETS_PATH = "/cluster/sdn/vnets"
PENDING = {"pending": "1"}


class Sdn:
    """The SDN of one zone's Proxmox cluster."""

    def __init__(self, read: Read, write: Write) -> None:
        self._read = read
        self._write = write

    def zones(self) -> list[SdnZone]:
        return [SdnZone.parse(z) for z in self._read("/cluster/sdn/zones") or [] if isinstance(z, dict)]

    def node_addresses(self) -> list[str]:
        """The cluster's nodes' addresses (a VXLAN zone's peers)."""
        status = self._read("/cluster/status") or []
        return sorted(
            str(item["ip"])
            for item in status
            if isinstance(item, dict) and item.get("type") == "node" and item.get("ip")
        )

    def create_zone(
        self, zone: str, kind: str, *, mtu: int, bridge: str | None = None, peers: list[str] | None = None
    ) -> None:
        params: dict[str, Any] = {"zone": zone, "type": kind, "mtu": mtu, "ipam": "pve"}
        if kind == "vlan":
            params["bridge"] = bridge
        else:
            params["peers"] = ",".join(peers or [])
        self._write(None, "POST", "/cluster/sdn/zones", params)

    def delete_zone(self, zone: str) -> None:
        self._write(None, "DELETE", f"/cluster/sdn/zones/{zone}")

    def vnets(self) -> list[VNet]:
        """Every VNet of the cluster, pending ones included (those being deleted left out)."""
        return list(parse_vnets(self._read(VNETS_PATH, PENDING)))

    def create_vnet(self, vnet: str, zone: str, tag: int, alias: str) -> None:
        self._write(None, "POST", VNETS_PATH, {"vnet": vnet, "zone": zone, "tag": tag, "alias": alias})

    def delete_vnet(self, vnet: str) -> None:
        self._write(None, "DELETE", f"/cluster/sdn/vnets/{vnet}")

    def subnets(self, vnet: str) -> list[Subnet]:
        answer = self._read(f"/cluster/sdn/vnets/{vnet}/subnets")
        return [Subnet.parse(s) for s in answer or [] if isinstance(s, dict)]

    def create_subnet(self, vnet: str, cidr: str, gateway: str) -> None:
        self._write(
            None,
            "POST",
            f"/cluster/sdn/vnets/{vnet}/subnets",
            {"subnet": cidr, "type": "subnet", "gateway": gateway},
        )

    def delete_subnet(self, vnet: str, subnet: str) -> None:
        self._write(None, "DELETE", f"/cluster/sdn/vnets/{vnet}/subnets/{subnet}")

    def apply(self) -> str | None:
        """Apply every pending SDN change on the cluster's nodes; answers the task (if Proxmox made one)."""
        answer = self._write(None, "PUT", "/cluster/sdn")
        return answer if isinstance(answer, str) and answer else None
