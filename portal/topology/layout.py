"""Where each thing of a zone goes in its drawing: a pure function from what the zone holds (``ZoneFacts``)
to shapes in the SVG's own coordinates (``Drawing``), which ``templates/portal/topology/_zone.html`` draws.

From the top: the edge gateway (its uplink address, public IPs and port forwards), then each network as a
horizontal bus under its name, the VMs whose first network it is in rows below it, a tenant cluster's
nodes framed together, and last the VMs on none of the VDC's networks. A VM hangs from its bus on a short
vertical lane left of its box (a dot where the lane meets the bus); a VM on further networks reaches each
one on a lane right of its box; the gateway reaches the networks it has a leg on down a trunk at the far
left. A dot marks every attachment: a line that crosses a bus without one is not on it.

Sizes are the viewBox's units: the SVG scales to its box, so at its usual width a unit is about a pixel.
Labels are cut to what fits (``fit``), the whole text going in the element's ``<title>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

WIDTH = 506
PAD = 12
TRUNK_X = 24  # the gateway's trunk down to the networks it has a leg on
COLUMNS = 2
FIRST_X = 56  # the left edge of the first column of boxes
BOX_W, BOX_H = 196, 62
COLUMN_GAP = 34  # between two columns: the right one's lane and the left one's lane to further networks
ROW_GAP = 14
LANE = 12  # a box's lane to its bus, left of it
CROSS = 10  # a box's lane to its further networks, right of it
FRAME_PAD = 8  # around a cluster's nodes
FRAME_HEAD = 26  # a cluster frame's label row
LINE_H = 19  # a line of the gateway's box
MAX_GATEWAY_LINES = 8
# A character's average advance in units at the font sizes used (a system sans-serif): what ``fit`` cuts to.
CHAR_W = {11: 6.4, 12: 6.9, 13: 7.5, 14: 8.2}
# The networks' colours, in turn (Tailwind's sky-700, violet-700, teal-700, pink-700, amber-700, indigo-700).
NETWORK_COLOURS = ("#0369a1", "#6d28d9", "#0f766e", "#be185d", "#b45309", "#4338ca")
# A VM's status in colour as well as in words: running (green-700), stopped (slate-500), else amber-700.
STATUS_COLOURS = {"running": "#15803d", "stopped": "#64748b"}
OTHER_STATUS = "#b45309"
UNATTACHED = "Not on a network of this VDC"


# ------------------------------------------------------------------------------------------ facts


@dataclass(frozen=True)
class NetworkFact:
    """A network of the zone: its id (``<zone>/<vnet>``), name, addresses and page."""

    id: str
    name: str
    cidr: str
    href: str


@dataclass(frozen=True)
class MachineFact:
    """A VM of the zone: its id, name, status (and Proxmox lock), page, and its address on each network
    it has a NIC on (``(network id, address)``, in NIC order); ``cluster``: the tenant cluster it is a
    node of, if any."""

    id: str
    name: str
    status: str
    href: str
    addresses: tuple[tuple[str, str], ...] = ()
    cluster: str | None = None
    lock: str = ""

    @property
    def networks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(network for network, _ in self.addresses))

    def address_on(self, network: str) -> str:
        return next((address for on, address in self.addresses if on == network), "")

    @property
    def status_text(self) -> str:
        return f"{self.status} · busy: {self.lock}" if self.lock else self.status


@dataclass(frozen=True)
class ClusterFact:
    """A tenant cluster with nodes in the zone, or none yet and its network here: its name, phase, page
    and network (its id, or ``<zone>/<name>``; "" when it names none)."""

    name: str
    phase: str
    href: str
    network: str = ""


@dataclass(frozen=True)
class GatewayLine:
    """A line of the gateway's box (a public IP and where it leads, or a port forward) and its page."""

    text: str
    href: str


@dataclass(frozen=True)
class GatewayFact:
    """The VDC's edge gateway in the zone: its uplink address, page, the networks it has a leg on (ids)
    and the lines that say its public IPs and forwards, with the page listing the rest when they are many."""

    uplink: str
    href: str
    legs: tuple[str, ...] = ()
    lines: tuple[GatewayLine, ...] = ()
    more_href: str = ""


@dataclass(frozen=True)
class ZoneFacts:
    zone: str
    networks: tuple[NetworkFact, ...] = ()
    machines: tuple[MachineFact, ...] = ()
    clusters: tuple[ClusterFact, ...] = ()
    gateway: GatewayFact | None = None


# ------------------------------------------------------------------------------------------ shapes


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def middle(self) -> float:
        return self.y + self.h / 2

    def overlaps(self, other: Box) -> bool:
        return (
            self.x < other.right and other.x < self.right and self.y < other.bottom and other.y < self.bottom
        )

    def holds(self, other: Box) -> bool:
        return (
            self.x <= other.x
            and other.right <= self.right
            and self.y <= other.y
            and other.bottom <= self.bottom
        )


@dataclass(frozen=True)
class PlacedMachine:
    fact: MachineFact
    box: Box
    label: str
    status: str
    colour: str
    address: str

    # Where its texts go: its name, its status (a dot, then words) and its address.
    @property
    def text_x(self) -> float:
        return self.box.x + 14

    @property
    def name_y(self) -> float:
        return self.box.y + 21

    @property
    def dot_x(self) -> float:
        return self.box.x + 18

    @property
    def status_x(self) -> float:
        return self.box.x + 27

    @property
    def status_y(self) -> float:
        return self.box.y + 39

    @property
    def dot_y(self) -> float:
        return self.status_y - 4

    @property
    def address_y(self) -> float:
        return self.box.y + 55

    @property
    def title(self) -> str:
        on = ", ".join(address for _, address in self.fact.addresses) or "no address on a network of the VDC"
        return f"VM {self.fact.name}: {self.fact.status_text}; {on}"


@dataclass(frozen=True)
class PlacedBus:
    fact: NetworkFact
    x1: float
    x2: float
    y: float
    colour: str
    label: str

    @property
    def label_x(self) -> float:
        return TRUNK_X + 12

    @property
    def label_y(self) -> float:
        return self.y - 7

    @property
    def title(self) -> str:
        return f"Network {self.fact.name} ({self.fact.cidr})"


@dataclass(frozen=True)
class PlacedCluster:
    fact: ClusterFact
    box: Box
    label: str
    empty: bool  # no node of it in the zone (yet)

    @property
    def label_x(self) -> float:
        return self.box.x + 10

    @property
    def label_y(self) -> float:
        return self.box.y + 18

    @property
    def title(self) -> str:
        return f"Kubernetes cluster {self.fact.name}: {self.fact.phase}"


@dataclass(frozen=True)
class PlacedLine:
    x: float
    y: float
    text: str
    href: str
    title: str


@dataclass(frozen=True)
class PlacedGateway:
    fact: GatewayFact
    box: Box
    label: str
    lines: tuple[PlacedLine, ...]

    @property
    def label_x(self) -> float:
        return self.box.x + 14

    @property
    def label_y(self) -> float:
        return self.box.y + 22

    @property
    def title(self) -> str:
        return f"Edge gateway, uplink {self.fact.uplink}"


@dataclass(frozen=True)
class Wire:
    """A line: ``points`` as SVG's polyline takes them."""

    points: str
    colour: str


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    colour: str


@dataclass(frozen=True)
class Note:
    x: float
    y: float
    text: str


@dataclass
class Drawing:
    """A zone's drawing: its size and every shape in it."""

    width: float = WIDTH
    height: float = 0
    gateway: PlacedGateway | None = None
    buses: list[PlacedBus] = field(default_factory=list)
    clusters: list[PlacedCluster] = field(default_factory=list)
    machines: list[PlacedMachine] = field(default_factory=list)
    wires: list[Wire] = field(default_factory=list)
    dots: list[Dot] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    rules: list[Wire] = field(default_factory=list)  # separators (dashed)


# ------------------------------------------------------------------------------------------ layout


def fit(text: str, width: float, size: int) -> str:
    """``text`` cut (with an ellipsis) to what ``width`` units hold at font size ``size``."""
    most = max(1, int(width / CHAR_W[size]))
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def column_x(column: int) -> float:
    return FIRST_X + column * (BOX_W + COLUMN_GAP)


def _points(*xy: tuple[float, float]) -> str:
    return " ".join(f"{x:g},{y:g}" for x, y in xy)


def status_colour(status: str) -> str:
    return STATUS_COLOURS.get(status, OTHER_STATUS)


def _machine(fact: MachineFact, x: float, y: float, network: str | None) -> PlacedMachine:
    inner = BOX_W - 20
    address = fact.address_on(network) if network else ""
    more = len(fact.networks) - 1 if network else 0
    shown = address + (f" +{more} more" if more > 0 else "") if address else "no network"
    return PlacedMachine(
        fact,
        Box(x, y, BOX_W, BOX_H),
        fit(fact.name, inner, 14),
        fit(fact.status_text, inner - 12, 12),
        status_colour(fact.status),
        fit(shown, inner, 12),
    )


def _gateway(fact: GatewayFact, top: float) -> PlacedGateway:
    lines = list(fact.lines)
    shown = lines if len(lines) <= MAX_GATEWAY_LINES else lines[: MAX_GATEWAY_LINES - 1]
    placed = [
        PlacedLine(
            PAD + 14, top + 46 + i * LINE_H, fit(line.text, WIDTH - 2 * PAD - 28, 12), line.href, line.text
        )
        for i, line in enumerate(shown)
    ]
    if len(shown) < len(lines):
        rest = f"… and {len(lines) - len(shown)} more"
        placed.append(PlacedLine(PAD + 14, top + 46 + len(shown) * LINE_H, rest, fact.more_href, rest))
    if not placed:
        placed.append(PlacedLine(PAD + 14, top + 46, "No public IP yet", fact.more_href, "No public IP yet"))
    height = 32 + len(placed) * LINE_H + 6
    label = fit(f"Edge gateway · uplink {fact.uplink}", WIDTH - 2 * PAD - 28, 14)
    return PlacedGateway(fact, Box(PAD, top, WIDTH - 2 * PAD, height), label, tuple(placed))


def ordered(networks: Iterable[NetworkFact]) -> list[NetworkFact]:
    """The zone's networks, its default one first, then by name."""
    return sorted(networks, key=lambda n: (n.name != "default", n.name, n.id))


@dataclass
class _Section:
    """What hangs from one bus (``network`` None: the VMs on no network): its clusters' nodes, then the
    other VMs."""

    network: str | None
    clusters: dict[str, list[MachineFact]] = field(default_factory=dict)
    loose: list[MachineFact] = field(default_factory=list)


def _sections(facts: ZoneFacts, order: Sequence[NetworkFact]) -> list[_Section]:
    known = [n.id for n in order]
    sections: dict[str | None, _Section] = {n: _Section(n) for n in known}
    sections[None] = _Section(None)
    clusters = {c.name: c for c in facts.clusters}
    for machine in sorted(facts.machines, key=lambda m: (m.name, m.id)):
        primary = next((n for n in machine.networks if n in sections), None)
        section = sections[primary]
        if machine.cluster and machine.cluster in clusters:
            section.clusters.setdefault(machine.cluster, []).append(machine)
        else:
            section.loose.append(machine)
    placed = {name for s in sections.values() for name in s.clusters}
    for cluster in sorted(clusters.values(), key=lambda c: c.name):
        if cluster.name not in placed:  # no node here yet: under its network, if it is one of the zone's
            home = next((n.id for n in order if n.id == cluster.network or _named(n, cluster.network)), None)
            sections[home].clusters[cluster.name] = []
    return [sections[n] for n in known] + [sections[None]]


def _named(network: NetworkFact, ref: str) -> bool:
    zone = network.id.partition("/")[0]
    return ref == f"{zone}/{network.name}"


def _rows(
    machines: Sequence[MachineFact], top: float
) -> tuple[list[tuple[MachineFact, float, float]], float]:
    """The machines in rows of ``COLUMNS`` from ``top``: (machine, x, y) each, the y under the last row."""
    spots = [
        (m, column_x(i % COLUMNS), top + (i // COLUMNS) * (BOX_H + ROW_GAP)) for i, m in enumerate(machines)
    ]
    rows = (len(machines) + COLUMNS - 1) // COLUMNS
    return spots, top + rows * (BOX_H + ROW_GAP) - (ROW_GAP if rows else 0)


def layout(facts: ZoneFacts) -> Drawing:
    """The zone's drawing (see the module's docstring)."""
    drawing = Drawing()
    order = ordered(facts.networks)
    colours = {n.id: NETWORK_COLOURS[i % len(NETWORK_COLOURS)] for i, n in enumerate(order)}
    y: float = 0
    if facts.gateway is not None:
        drawing.notes.append(Note(TRUNK_X + 8, 14, "Internet"))
        drawing.wires.append(Wire(_points((TRUNK_X, 4), (TRUNK_X, 28)), "#475569"))
        drawing.gateway = _gateway(facts.gateway, 28)
        y = drawing.gateway.box.bottom + 14
    else:
        drawing.notes.append(Note(PAD, 18, "No edge gateway in this zone"))
        y = 30

    bus_y: dict[str, float] = {}
    # Each machine's box and the network it hangs from, for the lanes drawn once every bus is placed.
    hanging: list[tuple[PlacedMachine, str | None]] = []
    for section in _sections(facts, order):
        network = section.network
        if network is None:
            if not (section.clusters or section.loose):
                continue
            y += 6
            drawing.rules.append(Wire(_points((PAD, y), (WIDTH - PAD, y)), "#cbd5e1"))
            drawing.notes.append(Note(PAD, y + 18, UNATTACHED))
            y += 30
        else:
            fact = next(n for n in order if n.id == network)
            label = fit(f"{fact.name} · {fact.cidr}", WIDTH - TRUNK_X - 24, 13)
            y += 18
            bus_y[network] = y
            drawing.buses.append(PlacedBus(fact, PAD, WIDTH - PAD, y, colours[network], label))
            y += 16
        for name, nodes in section.clusters.items():
            cluster = next(c for c in facts.clusters if c.name == name)
            spots, under = _rows(nodes, y + FRAME_HEAD)
            if not nodes:
                under = y + FRAME_HEAD + 14
            frame = Box(
                FIRST_X - FRAME_PAD,
                y,
                column_x(COLUMNS - 1) + BOX_W + FRAME_PAD - FIRST_X + FRAME_PAD,
                under - y + FRAME_PAD,
            )
            label = fit(f"Kubernetes cluster {cluster.name} · {cluster.phase}", frame.w - 2 * FRAME_PAD, 13)
            drawing.clusters.append(PlacedCluster(cluster, frame, label, not nodes))
            if not nodes:
                drawing.notes.append(Note(FIRST_X, y + FRAME_HEAD + 10, "No node in this zone yet"))
            for machine, mx, my in spots:
                placed = _machine(machine, mx, my, network)
                drawing.machines.append(placed)
                hanging.append((placed, network))
            y = frame.bottom + ROW_GAP
        spots, under = _rows(section.loose, y)
        for machine, mx, my in spots:
            placed = _machine(machine, mx, my, network)
            drawing.machines.append(placed)
            hanging.append((placed, network))
        if spots:
            y = under + ROW_GAP
        y += 4

    _lanes(drawing, hanging, bus_y, colours)
    if drawing.gateway is not None:
        legs = [bus_y[n] for n in drawing.gateway.fact.legs if n in bus_y]
        if legs:
            drawing.wires.append(
                Wire(_points((TRUNK_X, drawing.gateway.box.bottom), (TRUNK_X, max(legs))), "#475569")
            )
            drawing.dots.extend(Dot(TRUNK_X, leg, "#475569") for leg in legs)
    drawing.height = y + PAD
    return drawing


def _lanes(
    drawing: Drawing,
    hanging: Sequence[tuple[PlacedMachine, str | None]],
    bus_y: dict[str, float],
    colours: dict[str, str],
) -> None:
    """Each column's lane down from its bus to its lowest box, a short elbow into every box, and a lane
    from each box on further networks to their buses."""
    lowest: dict[tuple[str, float], float] = {}
    for placed, network in hanging:
        if network is None:
            continue
        lane = placed.box.x - LANE
        key = (network, lane)
        lowest[key] = max(lowest.get(key, 0), placed.box.middle)
        drawing.wires.append(
            Wire(_points((lane, placed.box.middle), (placed.box.x, placed.box.middle)), colours[network])
        )
    for (network, lane), bottom in lowest.items():
        drawing.wires.insert(0, Wire(_points((lane, bus_y[network]), (lane, bottom)), colours[network]))
        drawing.dots.append(Dot(lane, bus_y[network], colours[network]))
    for placed, network in hanging:
        if network is None:
            continue
        cross = placed.box.right + CROSS
        for other in placed.fact.networks:
            if other == network or other not in bus_y:
                continue
            drawing.wires.append(
                Wire(
                    _points(
                        (placed.box.right, placed.box.middle),
                        (cross, placed.box.middle),
                        (cross, bus_y[other]),
                    ),
                    colours[other],
                )
            )
            drawing.dots.append(Dot(cross, bus_y[other], colours[other]))
