"""The topology's layout (``portal.topology.layout``): a pure function from what a zone holds to where each
thing is drawn. No world: facts in, shapes out."""

from __future__ import annotations

import itertools

from portal.topology.layout import (
    BOX_W,
    CHAR_W,
    UNATTACHED,
    WIDTH,
    ClusterFact,
    Drawing,
    GatewayFact,
    GatewayLine,
    MachineFact,
    NetworkFact,
    PlacedMachine,
    ZoneFacts,
    fit,
    layout,
    status_colour,
)

DEFAULT = NetworkFact("zone-a/fpdef001", "default", "10.0.0.0/24", "/n/")
BACKEND = NetworkFact("zone-a/fpback01", "backend", "10.1.0.0/24", "/n/")


def vm(
    name: str, *on: tuple[NetworkFact, str], status: str = "running", cluster: str | None = None
) -> MachineFact:
    return MachineFact(
        f"zone-a/{name}", name, status, f"/vm/{name}/", tuple((n.id, a) for n, a in on), cluster
    )


def placed(drawing: Drawing, name: str) -> PlacedMachine:
    return next(m for m in drawing.machines if m.fact.name == name)


def wire_points(drawing: Drawing) -> list[tuple[float, float]]:
    """Every point of every wire."""
    pairs = (p.split(",") for w in drawing.wires for p in w.points.split())
    return [(float(x), float(y)) for x, y in pairs]


def test_every_vm_is_drawn_once_and_no_two_boxes_overlap() -> None:
    machines = tuple(vm(f"vm-{i}", (DEFAULT if i % 2 else BACKEND, f"10.0.0.{i + 10}")) for i in range(9))
    drawing = layout(ZoneFacts("zone-a", (DEFAULT, BACKEND), machines))
    assert sorted(m.fact.name for m in drawing.machines) == sorted(m.name for m in machines)
    for a, b in itertools.combinations(drawing.machines, 2):
        assert not a.box.overlaps(b.box), (a.fact.name, b.fact.name)
    assert all(m.box.x >= 0 and m.box.right <= WIDTH for m in drawing.machines)
    assert all(m.box.bottom <= drawing.height for m in drawing.machines)


def test_the_default_network_comes_first_and_each_vm_hangs_below_its_first_network() -> None:
    drawing = layout(
        ZoneFacts(
            "zone-a",
            (BACKEND, DEFAULT),
            (vm("web", (DEFAULT, "10.0.0.4")), vm("db", (BACKEND, "10.1.0.4"))),
        )
    )
    default, backend = drawing.buses
    assert (default.fact.name, backend.fact.name) == ("default", "backend")
    assert default.y < placed(drawing, "web").box.y < backend.y < placed(drawing, "db").box.y
    assert placed(drawing, "web").address == "10.0.0.4"


def test_a_vm_is_attached_by_a_dot_on_each_of_its_networks_and_on_no_other() -> None:
    third = NetworkFact("zone-a/fpthird1", "third", "10.2.0.0/24", "/n/")
    both = vm("both", (DEFAULT, "10.0.0.4"), (third, "10.2.0.4"))
    drawing = layout(ZoneFacts("zone-a", (DEFAULT, BACKEND, third), (both,)))
    box = placed(drawing, "both").box
    bus = {b.fact.name: b.y for b in drawing.buses}
    # Its lane on the left of its box to default, and on the right of it down to third: a dot where each ends.
    dots = {(d.x, d.y) for d in drawing.dots}
    assert any(x < box.x and y == bus["default"] for x, y in dots)
    assert any(x > box.right and y == bus["third"] for x, y in dots)
    assert not any(y == bus["backend"] for _, y in dots)  # it crosses backend without a dot
    assert placed(drawing, "both").address == "10.0.0.4 +1 more"


def test_the_gateway_is_on_top_and_its_trunk_reaches_the_networks_it_has_a_leg_on() -> None:
    lines = tuple(GatewayLine(f"203.0.113.{i} → web", "/ips/") for i in range(3))
    gateway = GatewayFact("203.0.113.2", "/fw/", (BACKEND.id,), lines, "/ips/")
    drawing = layout(
        ZoneFacts("zone-a", (DEFAULT, BACKEND), (vm("web", (DEFAULT, "10.0.0.4")),), (), gateway)
    )
    assert drawing.gateway is not None
    assert drawing.gateway.box.bottom < min(b.y for b in drawing.buses)
    assert [line.text for line in drawing.gateway.lines] == [line.text for line in lines]
    assert all(drawing.gateway.box.y < line.y < drawing.gateway.box.bottom for line in drawing.gateway.lines)
    backend = next(b for b in drawing.buses if b.fact is BACKEND)
    default = next(b for b in drawing.buses if b.fact is DEFAULT)
    trunk = [d for d in drawing.dots if d.x < min(m.box.x for m in drawing.machines) - 20]
    assert [d.y for d in trunk] == [backend.y]
    assert default.y not in [d.y for d in trunk]


def test_a_gateway_with_many_lines_shows_the_first_and_links_the_rest() -> None:
    lines = tuple(GatewayLine(f"203.0.113.{i}:80/tcp → 10.0.0.{i}:80", "/fw/") for i in range(20))
    drawing = layout(ZoneFacts("zone-a", gateway=GatewayFact("203.0.113.2", "/fw/", (), lines, "/ips/")))
    assert drawing.gateway is not None
    shown = drawing.gateway.lines
    assert len(shown) == 8
    assert shown[-1].text == "… and 13 more"
    assert shown[-1].href == "/ips/"


def test_a_zone_without_a_gateway_says_so() -> None:
    drawing = layout(ZoneFacts("zone-b", (DEFAULT,)))
    assert drawing.gateway is None
    assert [n.text for n in drawing.notes] == ["No edge gateway in this zone"]


def test_a_clusters_nodes_are_framed_together_and_a_cluster_without_nodes_sits_under_its_network() -> None:
    kube = ClusterFact("kube", "Ready", "/k/kube/", DEFAULT.id)
    empty = ClusterFact("new", "Provisioning", "/k/new/", "zone-a/backend")  # by <zone>/<name>
    machines = (
        vm("kube-a", (DEFAULT, "10.0.0.5"), cluster="kube"),
        vm("kube-b", (DEFAULT, "10.0.0.6"), cluster="kube"),
        vm("web", (DEFAULT, "10.0.0.4")),
    )
    drawing = layout(ZoneFacts("zone-a", (DEFAULT, BACKEND), machines, (kube, empty)))
    frames = {c.fact.name: c for c in drawing.clusters}
    assert frames["kube"].box.holds(placed(drawing, "kube-a").box)
    assert frames["kube"].box.holds(placed(drawing, "kube-b").box)
    assert not frames["kube"].box.overlaps(placed(drawing, "web").box)
    assert not frames["kube"].empty
    assert frames["new"].empty
    backend = next(b for b in drawing.buses if b.fact is BACKEND)
    assert frames["new"].box.y > backend.y


def test_vms_on_no_network_of_the_vdc_come_last_under_a_note_and_hang_from_nothing() -> None:
    stray = vm("stray", (NetworkFact("zone-a/fpother", "x", "10.9.0.0/24", ""), "10.9.0.4"))
    bare = vm("bare", status="stopped")
    drawing = layout(ZoneFacts("zone-a", (DEFAULT,), (vm("web", (DEFAULT, "10.0.0.4")), stray, bare)))
    note = next(n for n in drawing.notes if n.text == UNATTACHED)
    assert placed(drawing, "bare").box.y > note.y > drawing.buses[0].y
    assert placed(drawing, "stray").box.y > note.y
    assert placed(drawing, "bare").address == "no network"
    assert len(drawing.dots) == 1  # web's, on default


def test_a_status_is_said_in_words_and_in_colour() -> None:
    drawing = layout(ZoneFacts("zone-a", (DEFAULT,), (vm("a", (DEFAULT, "10.0.0.4"), status="stopped"),)))
    shown = placed(drawing, "a")
    assert shown.status == "stopped"
    assert shown.colour == status_colour("stopped") != status_colour("running") != status_colour("paused")
    assert "stopped" in shown.title
    busy = MachineFact("zone-a/101", "b", "running", "/", ((DEFAULT.id, "10.0.0.5"),), lock="backup")
    assert layout(ZoneFacts("zone-a", (DEFAULT,), (busy,))).machines[0].status == "running · busy: backup"


def test_long_names_are_cut_to_their_box_and_whole_in_the_title() -> None:
    name = "a-very-long-virtual-machine-name-of-sixty-three-characters-xxxx"
    drawing = layout(ZoneFacts("zone-a", (DEFAULT,), (vm(name, (DEFAULT, "10.0.0.4")),)))
    shown = placed(drawing, name)
    assert shown.label.endswith("…")
    assert len(shown.label) * CHAR_W[14] <= BOX_W - 20
    assert name in shown.title
    assert fit("short", 100, 12) == "short"


def test_the_drawing_grows_downwards_only() -> None:
    few = layout(ZoneFacts("zone-a", (DEFAULT,), tuple(vm(f"v{i}", (DEFAULT, "10.0.0.4")) for i in range(2))))
    many = layout(
        ZoneFacts("zone-a", (DEFAULT,), tuple(vm(f"v{i}", (DEFAULT, "10.0.0.4")) for i in range(12)))
    )
    assert few.width == many.width == WIDTH
    assert many.height > few.height
    assert all(0 <= x <= WIDTH for x, _ in wire_points(many))
    assert all(0 <= y <= many.height for _, y in wire_points(many))
