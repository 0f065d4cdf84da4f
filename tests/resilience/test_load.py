"""Load: 200 concurrent VM listings and 20 concurrent creates against the world's orchestrator over HTTP,
for a bounded time. No 5xx, no VM lost or listed twice (checked against the fakes' own state), and the
requests in flight to any one Proxmox node stay within the orchestrator's bound
(FLEXPLANE_AGENT_MAX_IN_FLIGHT, 6 by default), measured where they land: at each fake node's address.
p50/p99 go to the suite's figures.

Marked ``load``: ``pytest -m load`` runs it alone; ``make test`` runs it after the other suites' parallel
run, with the other modules marked ``alone`` (it saturates the machine; the other workers' timings would
suffer).
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from agentclient import AgentBusy, AgentPool, AgentTarget, ClientTLS
from agentclient.pool import DEFAULT_MAX_IN_FLIGHT
from devstack.net import free_port
from devstack.world import World
from devstack.world.config import ORCHESTRATOR_CLIENT_CN
from tests.apikit import GraphQL
from tests.promises import RecordFigure
from tests.resilience.conftest import Arrivals, timed
from tests.resilience.loadgen import LIST, Seen, list_until
from tests.vmkit import CREATE_TIMEOUT, action, create, fake_vms, named, payload

pytestmark = [pytest.mark.load, pytest.mark.alone, pytest.mark.promise("load")]

SUITE = "load"
LISTERS = 200
CREATES = 20
# The listers' processes (LISTERS // PROCESSES threads each).
PROCESSES = 4
# The listings go on until the creates are done, and at least this long (seconds).
AT_LEAST = 10.0
# Real seconds every request waits at the fakes, as a real node's API takes its time: requests pile up.
LATENCY = 0.02
# The world's orchestrator runs with the default bound.
BOUND = DEFAULT_MAX_IN_FLIGHT
ZONES = ("zone-a", "zone-b")


# The load suite runs on the session's world. In make test that is the run of the modules marked alone,
# whose world has served only them (a few creates, each cleaned up): what the load suite counts is its own
# VDCs' VMs, and the requests in flight since it reset the fakes' peaks.
@pytest.fixture(scope="module")
def api(world: World) -> GraphQL:
    return GraphQL(world)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def tagged_in_fakes(world: World) -> set[str]:
    """Every VM of a VDC, as the fakes hold them: ``zone/vmid``."""
    return {
        f"{zone}/{vmid}"
        for zone in world.fakes.zones
        for vmid, vm in fake_vms(world, zone).items()
        if not vm["template"] and "fp-vdc-" in str(vm["config"].get("tags", ""))
    }


def peaks(world: World) -> dict[str, int]:
    """The most requests ever in flight at each node since the last reset, ``zone/node``."""
    found: dict[str, int] = {}
    for zone, fake in world.fakes.zones.items():
        peak = world.fakes.on_loop(lambda f=fake: dict(f.pve.traffic.peak))
        for node, address in fake.node_addresses.items():
            found[f"{zone}/{node}"] = peak.get(address, 0)
    return found


def reset_peaks(world: World) -> None:
    for fake in world.fakes.zones.values():
        world.fakes.on_loop(fake.pve.traffic.reset_peak)


def slow_fakes(world: World, latency: float, zones: tuple[str, ...] = ZONES) -> None:
    for zone in zones:
        pve = world.fakes[zone].pve

        def slow(pve: Any = pve) -> None:
            pve.time_scale = 1.0 if latency else 0.0
            pve.slow_network(latency)

        world.fakes.on_loop(slow)


@pytest.fixture
def vdcs(api: GraphQL, world: World) -> Iterator[list[str]]:
    """Four VDCs over both zones, so that the creates do not all queue for one VDC's lock; afterwards
    their VMs go, then they do."""
    made = [f"load{uuid.uuid4().hex[:6]}" for _ in range(4)]
    for ident in made:
        answer = api(
            "mutation($input: VdcInput!) { createVdc(input: $input) { vdc { id } errors { message } } }",
            user="admin",
            variables={
                "input": {
                    "id": ident,
                    "zones": list(ZONES),
                    "computeProfiles": ["small"],
                    "storageProfiles": ["standard"],
                    "images": ["debian-12"],
                    "quota": {"vcpus": 64, "memoryMib": 65536, "diskGb": 2000, "vms": 50},
                }
            },
        )
        assert payload(answer, "createVdc")["errors"] == []
    try:
        yield made
    finally:
        slow_fakes(world, 0.0)
        for ident in made:
            for zone in ZONES:
                for vmid, vm in fake_vms(world, zone).items():
                    if f"fp-vdc-{ident}" in str(vm["config"].get("tags", "")):
                        api(action("deleteVirtualMachine"), user="admin", variables={"id": f"{zone}/{vmid}"})
            api(
                "mutation($id: ID!) { deleteVdc(id: $id) { errors { message } } }",
                user="admin",
                variables={"id": ident},
            )


def test_200_listings_and_20_creates_at_once_lose_nothing_and_respect_the_bound(
    api: GraphQL,
    world: World,
    vm_name: Callable[[str], str],
    vdcs: list[str],
    record_figure: RecordFigure,
    tmp_path: Path,
) -> None:
    baseline = {e["node"]["id"] for e in payload(api(LIST, user="admin"), "virtualMachines")["edges"]}
    assert baseline == tagged_in_fakes(world)
    create_times: list[float] = []

    def make(n: int) -> dict[str, Any]:
        result, elapsed = timed(
            lambda: create(api, "admin", vdcs[n % len(vdcs)], name=vm_name(f"load{n}"), zone=ZONES[n % 2])
        )
        create_times.append(elapsed)
        return result

    slow_fakes(world, LATENCY)
    reset_peaks(world)
    stop = tmp_path / "stop"
    started = time.monotonic()
    spawn = multiprocessing.get_context("spawn")  # a clean interpreter: the test process runs threads
    with (
        ProcessPoolExecutor(max_workers=PROCESSES, mp_context=spawn) as processes,
        ThreadPoolExecutor(max_workers=CREATES, thread_name_prefix="create") as threads,
    ):
        args = (api.url, api.token("admin"), frozenset(baseline), LISTERS // PROCESSES, stop)
        listers = [processes.submit(list_until, *args) for _ in range(PROCESSES)]
        try:
            made = list(threads.map(make, range(CREATES), timeout=CREATE_TIMEOUT))
            creates_done = time.monotonic() - started
            time.sleep(max(0.0, AT_LEAST - creates_done))
        finally:
            stop.touch()
        listings = Seen()
        for lister in listers:
            listings.add(lister.result(timeout=120))
    elapsed = time.monotonic() - started
    slow_fakes(world, 0.0)
    in_flight = peaks(world)

    record_figure(SUITE, "listings answered", len(listings.times))
    record_figure(SUITE, "listings per second", round(len(listings.times) / elapsed, 1))
    record_figure(SUITE, "listing p50 (s)", round(statistics.median(listings.times), 3))
    record_figure(SUITE, "listing p99 (s)", round(percentile(listings.times, 0.99), 3))
    record_figure(SUITE, "listings partial (UNAVAILABLE)", listings.partial)
    record_figure(SUITE, "create p50 (s)", round(statistics.median(create_times), 3))
    record_figure(SUITE, "create p99 (s)", round(percentile(create_times, 0.99), 3))
    record_figure(SUITE, "answers 5xx", sum(1 for status in listings.statuses if status >= 500))
    record_figure(SUITE, f"most requests in flight at one node (bound {BOUND})", max(in_flight.values()))
    record_figure(SUITE, "run time (s)", round(elapsed, 1))
    record_figure(SUITE, "all creates done after (s)", round(creates_done, 1))

    assert listings.problems == []
    assert all(status == 200 for status in listings.statuses)
    assert [r["errors"] for r in made] == [[]] * CREATES
    created = {r["virtualMachine"]["id"] for r in made}
    assert len(created) == CREATES
    assert all(len(named(world, vm_name(f"load{n}"))) == 1 for n in range(CREATES))
    final = {e["node"]["id"] for e in payload(api(LIST, user="admin"), "virtualMachines")["edges"]}
    assert final == baseline | created == tagged_in_fakes(world)
    assert max(in_flight.values()) <= BOUND, in_flight


# ------------------------------------------------------------------------------------ the bound itself


@pytest.fixture
def burst_pool(world: World, tmp_path: Path) -> Iterator[AgentPool]:
    """A pool of its own (the orchestrator's client name, its own certificate), bound at the default."""
    assert world.ca is not None
    cert, key = world.ca.issue_client(ORCHESTRATOR_CLIENT_CN, tmp_path, "burst")
    with AgentPool(ClientTLS.from_files(world.ca.cert_path, cert, key), timeout=10.0) as pool:
        yield pool


@pytest.fixture
def pve1(world: World) -> Iterator[AgentTarget]:
    """zone-a's pve1 agent, its fake slowed down meanwhile."""
    agent = world.agents[("zone-a", "pve1")]
    try:
        yield AgentTarget(agent.identity, agent.endpoint)
    finally:
        slow_fakes(world, 0.0, ("zone-a",))


def test_a_burst_to_one_agent_waits_its_turn_within_the_bound(
    world: World, burst_pool: AgentPool, pve1: AgentTarget, record_figure: RecordFigure
) -> None:
    slow_fakes(world, 0.3, ("zone-a",))
    reset_peaks(world)
    with ThreadPoolExecutor(max_workers=30) as pool:
        answers, elapsed = timed(
            lambda: list(pool.map(lambda _: burst_pool.proxmox(pve1, "GET", "/version"), range(30)))
        )
    assert len(answers) == 30
    assert peaks(world)["zone-a/pve1"] == BOUND  # reached, and never passed
    assert elapsed >= 30 / BOUND * 0.3 * 0.9  # five rounds of six: they did wait their turn
    record_figure(SUITE, "a burst of 30 calls to one agent: most in flight at its node", BOUND)
    record_figure(SUITE, "a burst of 30 calls to one agent: all answered in (s)", round(elapsed, 2))


def test_a_call_that_finds_no_free_slot_in_its_deadline_is_busy_and_never_sent(
    world: World, burst_pool: AgentPool, pve1: AgentTarget, arrivals: Arrivals
) -> None:
    slow_fakes(world, 1.5, ("zone-a",))
    with ThreadPoolExecutor(max_workers=BOUND) as pool:
        holding = [pool.submit(burst_pool.proxmox, pve1, "GET", "/version") for _ in range(BOUND)]
        deadline = time.monotonic() + 5
        while len(arrivals.since_mark("GET", "/version")) < BOUND and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(AgentBusy) as caught:
            burst_pool.proxmox(pve1, "GET", "/version", timeout=0.3)
        assert len(arrivals.since_mark("GET", "/version")) == BOUND
        assert all(future.result(timeout=10) for future in holding)
    assert str(caught.value) == (
        f"The agent {pve1.identity} at {pve1.address} is busy: {BOUND} calls to it were in flight "
        "for 0.3 s, and this call was not sent."
    )


# ------------------------------------------------------------------------------------ queries wait their turn


@pytest.fixture
def one_query_at_a_time(world: World) -> Iterator[str]:
    """A replica beside the world's that runs one query at a time and lets the next wait half a second;
    its /graphql URL."""
    host = world.cfg.orchestrator_host
    port = free_port(host)
    replica = world.spawn_orchestrator(
        "orchestrator-one-query",
        port,
        free_port(host),
        {"FLEXPLANE_MAX_CONCURRENT_QUERIES": "1", "FLEXPLANE_QUERY_QUEUE_TIMEOUT": "0.5"},
    )
    try:
        yield f"http://{host}:{port}/graphql"
    finally:
        replica.stop()
        slow_fakes(world, 0.0, ("zone-b",))


# A mutation that reads zone-a only (and finds nothing to stop).
STOP_NOTHING = 'mutation { stopVirtualMachine(id: "zone-a/999999") { errors { code } } }'


def test_a_query_past_the_queue_timeout_is_answered_503_and_a_mutation_does_not_queue(
    api: GraphQL, world: World, one_query_at_a_time: str, arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    url, headers = one_query_at_a_time, {"Authorization": f"Bearer {api.token('admin')}"}

    def post(query: str) -> requests.Response:
        return requests.post(url, json={"query": query}, headers=headers, timeout=30)

    slow_fakes(world, 4.0, ("zone-b",))  # the first query holds the slot until the zone deadline
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(post, LIST)
        deadline = time.monotonic() + 10
        while not arrivals.since_mark("GET", "/cluster/resources") and time.monotonic() < deadline:
            time.sleep(0.01)
        queued, waited = timed(lambda: post(LIST))
        mutation, took = timed(lambda: post(STOP_NOTHING))
        assert first.result().status_code == 200

    assert queued.status_code == 503
    assert queued.headers["Retry-After"] == "1"
    assert [e["extensions"]["code"] for e in queued.json()["errors"]] == ["UNAVAILABLE"]
    assert "without a free slot: retry" in queued.json()["errors"][0]["message"]
    assert 0.5 <= waited < 2.0
    assert mutation.status_code == 200
    assert mutation.json()["data"]["stopVirtualMachine"]["errors"] == [{"code": "NOT_FOUND"}]
    assert took < 2.0
    record_figure(SUITE, "a query past the queue timeout (0.5 s): answered 503 in (s)", round(waited, 2))
