"""Initial placement: which host of a zone takes a new VM, and why.

Pure: fed the zone's hosts from the catalog and the zone's ``/cluster/resources`` (nodes, storage and
guests, one call), it answers a decision and its reasons, or ``NoCapacity`` saying what was short.

A host is a candidate when Proxmox reports its node online, it is not cordoned, the storage the VM's
disk goes to (and, for a VM that moves, every other storage its disks are on) is available on it, and it
has room:

- memory: the node's memory times the host's ``memory_overcommit``, less the memory of every guest on it;
- vCPUs: the node's CPU threads times the host's ``cpu_overcommit``, less the vCPUs of every guest on it;
- disk: the free space of the storage on that node.

Guests count whether they run or not (a stopped VM may start at any time); templates do not count.
Among candidates the one with the most free capacity wins: the share of its tightest resource that stays
free once the VM is placed. Hosts within ``SPREAD_BAND`` of each other count as equally free, and the one
with the fewest VMs of the VDC wins among them, so that one VDC's VMs spread across hosts.

Before all that, a host that has the VM's image cached (its template on the VM's storage, ready, as the
zone's ``/cluster/resources`` lists it) wins over one that does not, however much freer that one is: a
create on a host without it cannot clone before the image's download and import end, and is refused
until then (``services.vms.create``), so the room elsewhere would be a refusal now. The hosts without it
are chosen among, as above, only when no host that fits has it; the reasons say which it was. Images are
cached ahead on every host of the zones that offer them, as they are offered and as hosts join
(``services.image_cache``), so the preference only decides while a download is under way or a host could
not take one.

A create that names no zone is placed across the zones its VDC may use (``place_in_zones``): each zone's
best host, as above, and the zone whose best host stays the most free wins, by the same rule (a zone
whose best host has the image cached first; within the band, the zone with the fewest VMs of the VDC).
A zone that did not answer is skipped, and said so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from orchestrator.errors import FlexPlaneError
from orchestrator.models.vms import VDC_TAG_PREFIX
from orchestrator.sources.proxmox import ClusterResources, Guest

MIB = 1024**2
GIB = 1024**3
# Hosts whose free capacity differs by less than this share are equally free: the spread decides.
SPREAD_BAND = 0.05


class PlacementHost(Protocol):
    """What placement needs of a catalog host."""

    @property
    def zone(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def cordoned(self) -> bool: ...
    @property
    def memory_overcommit(self) -> float: ...
    @property
    def cpu_overcommit(self) -> float: ...


@dataclass(frozen=True)
class PlacementRequest:
    """What the new VM needs."""

    zone: str
    vdc: str
    vcpus: int
    memory_mib: int
    disk_gb: int
    storage: str
    # Other storages the VM's disks are on (a migration's): the host needs them too, room is not counted.
    other_storages: tuple[str, ...] = ()
    # The image a new VM is cloned from: hosts holding its template on ``storage`` come first.
    image: str | None = None

    def describe(self) -> str:
        vcpus = _count(self.vcpus, "vCPU")
        return f"{vcpus}, {self.memory_mib} MiB of memory and {self.disk_gb} GiB on storage {self.storage}"


@dataclass(frozen=True)
class Rejection:
    """A host that did not get the VM, and why."""

    host: str
    reason: str


@dataclass(frozen=True)
class Placement:
    """The decision: the chosen host (``None`` when none fits), why, and why not the others."""

    zone: str
    host: str | None
    reasons: list[str] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


class NoCapacity(FlexPlaneError):
    """No host of the zone can take the VM; ``placement`` says why each one could not."""

    code = "NO_CAPACITY"

    def __init__(self, message: str, placement: Placement) -> None:
        super().__init__(message)
        self.placement = placement


@dataclass(frozen=True)
class HostRoom:
    """A host's capacity and what is already allocated on it, in the units placement reasons in."""

    host: str
    memory_capacity_mib: float
    memory_allocated_mib: float
    cpu_capacity: float
    cpu_allocated: float
    disk_free_gb: float
    disk_total_gb: float
    memory_overcommit: float
    cpu_overcommit: float
    vdc_vms: int

    def memory_free_mib(self) -> float:
        return self.memory_capacity_mib - self.memory_allocated_mib

    def cpu_free(self) -> float:
        return self.cpu_capacity - self.cpu_allocated

    def shortages(self, request: PlacementRequest) -> list[str]:
        """What this host lacks for the request, in words; empty when it fits."""
        short = []
        if self.memory_free_mib() < request.memory_mib:
            free = _num(max(self.memory_free_mib(), 0))
            short.append(
                f"not enough memory: needs {request.memory_mib} MiB, {free} MiB "
                f"free ({_num(self.memory_capacity_mib)} MiB at {_num(self.memory_overcommit)}x overcommit, "
                f"{_num(self.memory_allocated_mib)} MiB allocated)"
            )
        if self.cpu_free() < request.vcpus:
            short.append(
                f"not enough vCPUs: needs {request.vcpus}, {_num(max(self.cpu_free(), 0))} free "
                f"({_num(self.cpu_capacity)} at {_num(self.cpu_overcommit)}x overcommit, "
                f"{_num(self.cpu_allocated)} allocated)"
            )
        if self.disk_free_gb < request.disk_gb:
            short.append(
                f"not enough disk on storage {request.storage}: needs {request.disk_gb} GiB, "
                f"{_num(max(self.disk_free_gb, 0))} GiB free"
            )
        return short

    def free_share(self, request: PlacementRequest) -> tuple[float, str]:
        """The share of the tightest resource that stays free once the VM is placed, and which one it is."""
        shares = [
            ("memory", _share(self.memory_free_mib() - request.memory_mib, self.memory_capacity_mib)),
            ("vCPUs", _share(self.cpu_free() - request.vcpus, self.cpu_capacity)),
            ("disk", _share(self.disk_free_gb - request.disk_gb, self.disk_total_gb)),
        ]
        name, share = min(shares, key=lambda item: item[1])
        return share, name


def _share(free: float, total: float) -> float:
    return max(free, 0.0) / total if total > 0 else 0.0


def _num(value: float) -> str:
    """A figure for a message: whole numbers without decimals, others with one."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _count(n: float, noun: str) -> str:
    return f"{_num(n)} {noun}" if n == 1 else f"{_num(n)} {noun}s"


def _percent(share: float) -> str:
    return f"{math.floor(share * 100)}%"


def host_rooms(
    hosts: Sequence[PlacementHost],
    resources: ClusterResources,
    storage: str,
    vdc: str,
    other_storages: Sequence[str] = (),
) -> tuple[dict[str, HostRoom], list[Rejection]]:
    """Each host's room from ``/cluster/resources``; hosts that are out of the question are rejected."""
    nodes = {n.node: n for n in resources.nodes}
    storages = {s.node: s for s in resources.storages if s.storage == storage}
    available = {(s.node, s.storage) for s in resources.storages if s.available}
    guests: dict[str, list[Guest]] = {}
    for guest in resources.guests:
        # A holder (of a volume or a volume snapshot) never runs: its memory and vCPUs are no host's.
        if guest.node and not guest.template and not guest.is_holder:
            guests.setdefault(guest.node, []).append(guest)
    vdc_tag = f"{VDC_TAG_PREFIX}{vdc}"

    rooms: dict[str, HostRoom] = {}
    rejected: list[Rejection] = []
    for host in hosts:
        node = nodes.get(host.node)
        store = storages.get(host.node)
        if node is None:
            rejected.append(Rejection(host.node, "Proxmox does not report this node in the zone's cluster"))
        elif not node.online:
            rejected.append(Rejection(host.node, f"the node is {node.status or 'not online'}"))
        elif host.cordoned:
            rejected.append(Rejection(host.node, "the host is cordoned: it takes no new VMs"))
        elif store is None:
            rejected.append(Rejection(host.node, f"storage {storage} is not configured on this node"))
        elif not store.available:
            rejected.append(
                Rejection(host.node, f"storage {storage} is {store.status or 'not available'} here")
            )
        elif missing := [s for s in other_storages if (host.node, s) not in available]:
            rejected.append(Rejection(host.node, f"storage {', '.join(missing)} is not available here"))
        elif not node.maxmem or not node.maxcpu:
            rejected.append(Rejection(host.node, "Proxmox reports no memory or CPU figures for this node"))
        else:
            on_node = guests.get(host.node, [])
            rooms[host.node] = HostRoom(
                host=host.node,
                memory_capacity_mib=node.maxmem / MIB * host.memory_overcommit,
                memory_allocated_mib=sum(g.memory for g in on_node) / MIB,
                cpu_capacity=float(node.maxcpu) * host.cpu_overcommit,
                cpu_allocated=float(sum(g.cpus for g in on_node)),
                disk_free_gb=(store.total - store.used) / GIB,
                disk_total_gb=store.total / GIB,
                memory_overcommit=host.memory_overcommit,
                cpu_overcommit=host.cpu_overcommit,
                vdc_vms=sum(1 for g in on_node if vdc_tag in g.tag_list),
            )
    return rooms, rejected


def place(
    request: PlacementRequest, hosts: Sequence[PlacementHost], resources: ClusterResources
) -> Placement:
    """The host of ``request.zone`` that takes the VM, with the reasons; ``NoCapacity`` when none fits."""
    return _decide(request, hosts, resources).placement


@dataclass(frozen=True)
class _Decision:
    """A zone's placement, with the chosen host's room and the share of its tightest resource left free."""

    placement: Placement
    room: HostRoom
    share: float
    # Whether the chosen host has the request's image cached (False too when the request names none).
    cached: bool


def _decide(
    request: PlacementRequest, hosts: Sequence[PlacementHost], resources: ClusterResources
) -> _Decision:
    zone_hosts = sorted((h for h in hosts if h.zone == request.zone), key=lambda h: h.node)
    rooms, rejected = host_rooms(zone_hosts, resources, request.storage, request.vdc, request.other_storages)

    fitting: list[tuple[HostRoom, float, str]] = []
    for node, room in rooms.items():
        short = room.shortages(request)
        if short:
            rejected.append(Rejection(node, "; ".join(short)))
        else:
            share, tightest = room.free_share(request)
            fitting.append((room, share, tightest))

    if not fitting:
        placement = Placement(zone=request.zone, host=None, rejected=_ordered(rejected))
        raise NoCapacity(_no_capacity_message(request, placement, bool(zone_hosts)), placement)

    cached = resources.nodes_with_template(request.image, request.storage) if request.image else frozenset()
    # Hosts that have the image cached come first; the others only when none that fits has it.
    holding = [item for item in fitting if item[0].host in cached]
    pool = holding or fitting
    best_share = max(share for _, share, _ in pool)
    # Equally free (within the band of the best): fewest VMs of the VDC, then the most free, then by name.
    contenders = [item for item in pool if best_share - item[1] < SPREAD_BAND]
    contenders.sort(key=lambda item: (item[0].vdc_vms, -item[1], item[0].host))
    chosen, chosen_share, tightest = contenders[0]
    has_image = chosen.host in cached

    among = f" of the hosts that have image {request.image} cached" if len(pool) < len(fitting) else ""
    reasons = [
        f"online, not cordoned, and storage {request.storage} is available on it",
        f"room for {request.describe()}: {_num(chosen.memory_free_mib())} MiB of memory, "
        f"{_count(chosen.cpu_free(), 'vCPU')} and {_num(chosen.disk_free_gb)} GiB of disk free",
        f"the most free capacity{among}: {_percent(chosen_share)} of its tightest resource ({tightest}) "
        "stays free",
    ]
    if len(contenders) > 1:
        reasons.append(
            f"among hosts within {_percent(SPREAD_BAND)} of the most free, it has the fewest VMs of VDC "
            f"{request.vdc} ({chosen.vdc_vms})"
        )
    if request.image and has_image:
        reasons.append(
            f"has image {request.image} cached: its template is ready on storage {request.storage} here, "
            "so the VM is cloned without a download"
        )
    elif request.image:
        reasons.append(
            f"would download image {request.image} first: no host that fits has its template on storage "
            f"{request.storage} yet"
        )
    for room, share, _ in fitting:
        if room is chosen:
            continue
        if has_image and room.host not in cached:
            why = f"fits, but would download image {request.image} first; {chosen.host} has it cached"
        elif best_share - share >= SPREAD_BAND:
            why = (
                f"fits, but less free capacity: {_percent(share)} would stay free, against "
                f"{_percent(chosen_share)} on {chosen.host}"
            )
        elif room.vdc_vms > chosen.vdc_vms:
            why = (
                f"fits and is about as free ({_percent(share)}), but has {_count(room.vdc_vms, 'VM')} of VDC "
                f"{request.vdc} against {chosen.vdc_vms} on {chosen.host}"
            )
        else:
            why = (
                f"fits, as free ({_percent(share)}) and with as many VMs of VDC {request.vdc}; "
                f"{chosen.host} has slightly more free capacity or comes first by name"
            )
        rejected.append(Rejection(room.host, why))
    placement = Placement(zone=request.zone, host=chosen.host, reasons=reasons, rejected=_ordered(rejected))
    return _Decision(placement, chosen, chosen_share, has_image)


def place_in_zones(
    requests: Mapping[str, PlacementRequest],
    hosts: Sequence[PlacementHost],
    resources: Mapping[str, ClusterResources],
    unanswered: Mapping[str, str] | None = None,
) -> Placement:
    """The zone and host that take the VM when the create named no zone: every zone of ``requests`` (one
    request per zone, as the storage the disk goes to may differ) is placed in, and the zone whose
    chosen host keeps the most free capacity wins (within ``SPREAD_BAND``: the zone with the fewest VMs
    of the VDC, then by name). A zone missing from ``resources`` did not answer: it is skipped, and the
    reasons name it (``unanswered`` may say why). ``NoCapacity`` when no zone has a host with room.

    With one zone, this is ``place``: its decision, its reasons.
    """
    if len(requests) == 1:
        [(zone, request)] = requests.items()
        if zone in resources:
            return place(request, hosts, resources[zone])
    skipped: list[str] = []
    full: list[tuple[str, NoCapacity]] = []
    decided: list[tuple[str, _Decision, int]] = []
    for zone in sorted(requests):
        request = requests[zone]
        if zone not in resources:
            why = (unanswered or {}).get(zone) or "it did not answer"
            skipped.append(f"zone {zone} was skipped: {why}")
            continue
        try:
            decision = _decide(request, hosts, resources[zone])
        except NoCapacity as exc:
            full.append((zone, exc))
            continue
        tag = f"{VDC_TAG_PREFIX}{request.vdc}"
        vdc_vms = sum(1 for g in resources[zone].vms if tag in g.tag_list)
        decided.append((zone, decision, vdc_vms))

    considered = ", ".join(sorted(requests))
    if not decided:
        rejected = [
            Rejection(f"{zone}/{r.host}", r.reason) for zone, exc in full for r in exc.placement.rejected
        ]
        placement = Placement(zone=considered, host=None, reasons=skipped, rejected=rejected)
        details = "; ".join([*(exc.message for _, exc in full), *skipped])
        raise NoCapacity(f"no zone of {considered} has a host with room: {details}", placement)

    # Zones whose best host has the image cached come first, as hosts do within a zone.
    holding = [item for item in decided if item[1].cached]
    pool = holding or decided
    best_share = max(d.share for _, d, _ in pool)
    contenders = [item for item in pool if best_share - item[1].share < SPREAD_BAND]
    contenders.sort(key=lambda item: (item[2], -item[1].share, item[0]))
    zone, chosen, chosen_vms = contenders[0]
    where = f"{zone}/{chosen.room.host}"
    image = requests[zone].image
    cached = f"has image {image} cached and " if len(pool) < len(decided) else ""
    reasons = [
        f"zone {zone}, of the zones {considered}: its best host {cached}keeps the most free capacity "
        f"({_percent(chosen.share)} of its tightest resource)"
    ]
    if len(contenders) > 1:
        reasons.append(
            f"among zones within {_percent(SPREAD_BAND)} of the most free, it has the fewest VMs of VDC "
            f"{requests[zone].vdc} ({chosen_vms})"
        )
    for other, decision, vms in decided:
        if other == zone:
            continue
        host = f"{other}/{decision.room.host}"
        if chosen.cached and not decision.cached:
            reasons.append(
                f"zone {other}: its best host {host} fits, but would download image {image} first; "
                f"{where} has it cached"
            )
        elif best_share - decision.share >= SPREAD_BAND:
            reasons.append(
                f"zone {other}: its best host {host} fits, but less free capacity: "
                f"{_percent(decision.share)} would stay free, against {_percent(chosen.share)} on {where}"
            )
        else:
            reasons.append(
                f"zone {other}: its best host {host} is about as free ({_percent(decision.share)}), but "
                f"the zone has {_count(vms, 'VM')} of VDC {requests[zone].vdc} against {chosen_vms}, or "
                "comes later by name"
            )
    reasons += [f"zone {other}: no host has room" for other, _ in full]
    reasons += skipped
    reasons += chosen.placement.reasons
    rejected = list(chosen.placement.rejected)
    for other, decision, _ in decided:
        if other != zone:
            host = f"{other}/{decision.room.host}"
            rejected.append(Rejection(host, "fits, but its zone was not chosen"))
            rejected += [Rejection(f"{other}/{r.host}", r.reason) for r in decision.placement.rejected]
    rejected += [
        Rejection(f"{other}/{r.host}", r.reason) for other, exc in full for r in exc.placement.rejected
    ]
    return Placement(zone=zone, host=chosen.room.host, reasons=reasons, rejected=rejected)


def _ordered(rejected: list[Rejection]) -> list[Rejection]:
    return sorted(rejected, key=lambda r: r.host)


def _no_capacity_message(request: PlacementRequest, placement: Placement, any_hosts: bool) -> str:
    if not any_hosts:
        return f"zone {request.zone} has no hosts to place a VM on"
    details = "; ".join(f"{r.host}: {r.reason}" for r in placement.rejected)
    return f"no host in zone {request.zone} has room for {request.describe()}: {details}"
