"""A gateway's counters in human units (issue 37, item 10): ``egress_bytes 29470385124`` reads as a size in
binary units and its packets counted, on the gateway firewall's page. The devstack world's: the agent builds
the gateway in a namespace of this machine and reads its nftables counters. The other everyday details:
``tests/browser/light/test_everyday_details.py``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import Page, expect

from devstack.world import World
from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn, shoot
from tests.gatewaykit import ZONE, bridge, clean_gateway, demo_gateway, external_network, unbridge, vnets_of

# How long an edge gateway may take to be built by its agent once a public IP is allocated.
GATEWAY_BUILT = 60.0
ALLOCATE = (
    "mutation($zone: String) { allocatePublicIp(zone: $zone) { publicIp { address } errors { message } } }"
)
# A gateway's counter as the page says it: a size in binary units, then its packets counted.
READING = re.compile(r"^(inbound|outbound|dropped) \d+(\.\d)? (B|KiB|MiB|GiB|TiB|PiB) \([\d,]+ packets?\)$")


def test_a_gateways_counters_read_in_binary_units_and_counted_packets(
    page: Page, signed_in: LoginFn, api: GraphQL, world: World, screenshots: Path
) -> None:
    with demo_gateway(), external_network(api, world, "d"):
        vnets = vnets_of(api, "demo")  # the gateway's legs: the bridges of demo's VNets on this machine
        for vnet in vnets:
            bridge(vnet)
        try:
            made = api(ALLOCATE, user="alice", vdc="demo", variables={"zone": ZONE}).data["allocatePublicIp"]
            assert made["errors"] == [], made["errors"]
            signed_in(page, "alice", "/vdc/demo/gateway-firewall/")
            counters = page.locator(f'[data-gateway="{ZONE}"] [data-counters]')
            # The agent builds the gateway after the allocation answered (slower on a busy machine).
            deadline = time.monotonic() + GATEWAY_BUILT
            while True:
                page.goto("/vdc/demo/gateway-firewall/")
                if counters.count() or time.monotonic() > deadline:
                    break
                page.wait_for_timeout(500)
            expect(counters).to_be_visible()
            readings = [r.strip() for r in counters.locator("[data-counter]").all_inner_texts()]
            assert {r.split()[0] for r in readings} >= {"inbound", "outbound", "dropped"}, readings
            assert all(READING.match(r) for r in readings), readings
            said = counters.inner_text()
            assert re.search(r"\d{4}", said) is None, said  # 1,234: thousands separated
            assert "_bytes" not in said
            assert "_packets" not in said
            shoot(page, screenshots, "gateway-firewall-counters")
        finally:
            clean_gateway(api, "demo")
            for vnet in vnets:
                unbridge(vnet)
