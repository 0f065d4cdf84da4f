"""The orchestrator's /metrics: requests by GraphQL operation and view, upstream calls by zone and node, and
the port it is served on (never the public one when FLEXPLANE_METRICS_PORT is set)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from devstack.net import free_port
from devstack.world import World
from tests.apikit import GraphQL
from tests.metricskit import sample
from tests.orchestrator.replicas import replica

VMS = "query Listing { virtualMachines(first: 5) { edges { node { id } } } }"


def scrape(url: str, **kwargs: object) -> str:
    response = requests.get(f"{url}/metrics", timeout=10, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/plain")
    return response.text


def test_graphql_requests_are_counted_by_operation_and_status(api: GraphQL, world: World) -> None:
    before = scrape(world.url)

    assert api(VMS, user="alice").status == 200
    assert api("query { virtualMachines { nonsense } }", user="alice").status in (200, 400)

    after = scrape(world.url)
    name = "flexplane_graphql_requests_total"
    wanted = {"operation": "query virtualMachines", "status": "200"}
    assert sample(after, name, **wanted) - sample(before, name, **wanted) == 1
    latency = "flexplane_graphql_request_duration_seconds_count"
    assert sample(after, latency, operation="query virtualMachines") > sample(
        before, latency, operation="query virtualMachines"
    )
    # The operation's name is the schema's, never a made-up one of the client's.
    assert 'operation="Listing"' not in after


def test_upstream_calls_are_counted_per_zone_and_node(api: GraphQL, world: World) -> None:
    before = scrape(world.url)

    assert api(VMS, user="alice").status == 200

    after = scrape(world.url)
    calls = "flexplane_upstream_calls_total"
    for zone in world.cfg.zones:
        assert sample(after, calls, zone=zone, outcome="ok") > sample(before, calls, zone=zone, outcome="ok")
    assert "flexplane_agent_slot_wait_seconds_bucket" in after
    assert "flexplane_agent_calls_in_flight" in after
    assert "flexplane_queries_queued 0.0" in after
    assert "flexplane_queries_rejected_total" in after


def test_portal_views_are_counted_by_their_url_name(world: World) -> None:
    before = scrape(world.url)

    requests.get(f"{world.url}/healthz", timeout=10)

    after = scrape(world.url)
    name = "flexplane_http_requests_total"
    assert (
        sample(after, name, view="healthz", status="200") - sample(before, name, view="healthz", status="200")
        == 1
    )


@pytest.fixture(scope="module")
def metrics_port_replica(world: World) -> Iterator[tuple[str, str]]:
    """A replica with FLEXPLANE_METRICS_PORT on its second (HTTPS) endpoint, which runs one query at a time
    and lets the next wait 0.3 s: its two URLs. (One for both tests: a replica costs seconds of CPU.)"""
    host = world.cfg.orchestrator_host
    second = free_port(host)
    settings = {
        "FLEXPLANE_METRICS_PORT": str(second),
        "FLEXPLANE_MAX_CONCURRENT_QUERIES": "1",
        "FLEXPLANE_QUERY_QUEUE_TIMEOUT": "0.3",
    }
    with replica(world, "orchestrator-metrics", settings, https_port=second) as public:
        yield public, f"https://{host}:{second}"


def test_with_a_metrics_port_metrics_are_served_there_only(
    world: World, metrics_port_replica: tuple[str, str]
) -> None:
    public, private = metrics_port_replica
    assert world.ca is not None

    assert requests.get(f"{public}/metrics", timeout=10).status_code == 404
    assert "flexplane_http_requests_total" in scrape(private, verify=str(world.ca.cert_path))
    # And the metrics port answers nothing else.
    assert requests.get(f"{private}/healthz", timeout=10, verify=str(world.ca.cert_path)).status_code == 404


def test_a_query_answered_503_for_want_of_a_slot_is_counted(
    api: GraphQL, world: World, metrics_port_replica: tuple[str, str]
) -> None:
    url, metrics = metrics_port_replica
    assert world.ca is not None
    headers = {"Authorization": f"Bearer {api.token('alice')}"}
    pve = world.fakes["zone-b"].pve
    # The first read of VDC demo's pool in zone-b only (a tenant's listing reads its VDCs' pools).
    world.fakes.on_loop(lambda: pve.traffic.delay("GET", "/pools/fp-demo", 1.5))

    def post() -> int:
        return requests.post(f"{url}/graphql", json={"query": VMS}, headers=headers, timeout=30).status_code

    mark = world.fakes.on_loop(lambda: pve.traffic.count)

    def waiting_on_zone_b() -> bool:
        arrived = world.fakes.on_loop(lambda: pve.traffic.since(mark))
        return any(path.endswith("/pools/fp-demo") for _address, _method, path in arrived)

    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(post)
        deadline = time.monotonic() + 20
        while not waiting_on_zone_b():  # then it holds the only slot, its read of zone-b delayed
            assert time.monotonic() < deadline, "the first query never reached zone-b"
            time.sleep(0.01)
        assert post() == 503
        assert first.result() == 200

    text = scrape(metrics, verify=str(world.ca.cert_path))
    assert sample(text, "flexplane_queries_rejected_total") == 1
    assert (
        sample(text, "flexplane_graphql_requests_total", operation="query virtualMachines", status="503") == 1
    )
    assert sample(text, "flexplane_query_queue_wait_seconds_count") >= 2
    assert sample(text, "flexplane_queries_queued") == 0
    assert sample(text, "flexplane_queries_running") == 0
