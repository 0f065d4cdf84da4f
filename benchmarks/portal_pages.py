"""What the portal's VM list page costs over the GraphQL query for the same page.

Brings up the devstack's world (2 fake zones of 3 nodes, agents over mTLS, the Kubernetes
emulator, identity, the orchestrator and portal under uvicorn), puts 500 VMs of VDC ``demo`` and
500 of VDC ``other`` into the zones, and measures, in one run and interleaved so that a noisy
machine weighs on both alike, the time the server takes to answer:

- graphql: ``virtualMachines(first: 50)`` in VDC demo, with every field the page shows;
- page:    ``/vdc/demo/vms/``, the full HTML page of the same 50 rows, signed in as alice
           through the dev identity provider (the real OIDC code flow).

It prints p50 and p99 of both, the p50 ratio (target <= 1.2), and how many Proxmox calls one
page made (one ``/cluster/resources`` per zone, never a call per VM). The VDC's other everyday pages
(its dashboard, the VM form, its networks, its Kubernetes clusters, its topology where the portal has
one) are timed in the same rounds, each with its p50 over the query's: a change that makes a page
slower shows as its ratio growing between two runs, whatever the machine.

    .venv/bin/python -m benchmarks.portal_pages [--vms 500] [--rounds 60]
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

import requests

from benchmarks.kit import arguments, bench_world, interleaved, p50_p99, seed_vms
from devstack.world import World
from tests.portal.sessionkit import login

ZONES = ("zone-a", "zone-b")
NODES = 3
VDC = "demo"
PAGE = 50
QUERY = f"""{{ virtualMachines(first: {PAGE}) {{
  edges {{ cursor node {{ id name status zone host computeProfile lock ipAddresses }} }}
  pageInfo {{ hasNextPage endCursor }} }} }}"""
ROW = re.compile(r'<tr id="vm-')


# The VDC's other pages timed beside the list, under /vdc/<vdc>/.
OTHERS = ("", "vms/new/", "networks/", "kubernetes/", "topology/")


def served(session: requests.Session, url: str) -> Callable[[], int]:
    """A probe of the page at ``url``: its status, which must be 200 (or 404: a page this portal lacks)."""

    def probe() -> int:
        response = session.get(url, timeout=30, allow_redirects=False)
        if response.status_code not in (200, 404):
            raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:500]}")
        return response.status_code

    return probe


def seed(world: World, count: int) -> None:
    """``count`` VMs of VDC demo and as many of VDC other, spread over both zones and every node."""
    seed_vms(
        world,
        2 * (count // len(ZONES)),
        nodes=NODES,
        vdcs=(VDC, "other"),
        size=(1, 512, 10),
        extra_tags=";fp-cp-small",
    )


def proxmox_calls(world: World) -> int:
    """How many requests the fake zones have answered so far."""
    return sum(len(world.fakes.on_loop(lambda pve=world.fakes[z].pve: list(pve.requests))) for z in ZONES)


def calls_of(world: World, fn: Callable[[], int]) -> int:
    before = proxmox_calls(world)
    fn()
    return proxmox_calls(world) - before


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, rounds=60, subnet=41)
    parser.add_argument("--vms", type=int, default=500, help="VMs of VDC demo (as many again in VDC other)")
    args = parser.parse_args(argv)

    with bench_world(args.subnet, ZONES, NODES) as world:
        seed(world, args.vms)
        api = requests.Session()
        api.headers.update({"Authorization": f"Bearer {world.token('alice')}", "FlexPlane-VDC-ID": VDC})
        portal, _ = login(world, "alice")
        page_url = f"{world.url}/vdc/{VDC}/vms/"

        def graphql() -> int:
            response = api.post(f"{world.url}/graphql", json={"query": QUERY}, timeout=30)
            body = response.json()
            if response.status_code != 200 or body.get("errors"):
                raise RuntimeError(f"the API answered {response.status_code}: {body}")
            return len(body["data"]["virtualMachines"]["edges"])

        def page() -> int:
            response = portal.get(page_url, timeout=30, allow_redirects=False)
            if response.status_code != 200:
                raise RuntimeError(f"the page answered {response.status_code}: {response.text[:500]}")
            return len(ROW.findall(response.text))

        assert graphql() == PAGE, "the API does not list a full page"
        assert page() == PAGE, "the page does not show a full page"
        others = {path: served(portal, f"{world.url}/vdc/{VDC}/{path}") for path in OTHERS}
        others = {path: probe for path, probe in others.items() if probe() != 404}  # an older portal's
        for _ in range(5):  # warm every path: connections, JWKS, templates, imports
            graphql()
            page()
            for probe in others.values():
                probe()
        upstream = {"graphql": calls_of(world, graphql), "page": calls_of(world, page)}

        times = interleaved(args.rounds, {"graphql": graphql, "page": page, **others})

    g50, g99 = p50_p99(times["graphql"])
    p50, p99 = p50_p99(times["page"])
    print(
        f"portal_pages: VDC {VDC} of {args.vms} VMs (+{args.vms} of another VDC) in {len(ZONES)} zones "
        f"x {NODES} nodes, {PAGE} rows, {args.rounds} rounds, python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cpus"
    )
    print(f"  graphql  virtualMachines(first: {PAGE}):  p50 {g50:7.1f} ms  p99 {g99:7.1f} ms")
    print(f"  page     /vdc/{VDC}/vms/:               p50 {p50:7.1f} ms  p99 {p99:7.1f} ms")
    print(f"  ratio    p50 {p50 / g50:.2f}  p99 {p99 / g99:.2f}   (target p50 <= 1.2)")
    print(f"  Proxmox calls per request: graphql {upstream['graphql']}, page {upstream['page']}")
    for path in others:
        o50, o99 = p50_p99(times[path])
        where = f"/vdc/{VDC}/{path}:"
        print(f"  page     {where:<31} p50 {o50:7.1f} ms  p99 {o99:7.1f} ms  p50 ratio {o50 / g50:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
