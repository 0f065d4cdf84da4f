"""The admin hosts page shows the agents' staged rollout: its phase, its canaries, and where it halted. The
portal in this process (Django's test client) on a management cluster in memory, as the API's rollout
tests have it (tests/orchestrator/api/test_agent_rollout.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, override_settings

from orchestrator.models import Host
from orchestrator.models.zones import host_ident
from orchestrator.services.catalog import HOST, ZONE_LABEL
from tests.orchestrator.api.test_agent_rollout import FleetZones, ask, released, report, start
from tests.orchestrator.fakekube import seeded
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer, in_process, signed_in

__all__ = ["released"]  # the release folder fixture, shared with the API's tests

CANARY, OTHER = "zone-a/pve1", "zone-a/pve2"


@pytest.fixture
def zones() -> FleetZones:
    return FleetZones()


@pytest.fixture
def api(released: Path, zones: FleetZones) -> Iterator[InProcessApi]:
    """The API and portal of this process: two hosts of zone-a, whose agents say what a test says they
    run, 1.0.0 to 1.2.0 published."""
    kube = seeded()
    for key in (CANARY, OTHER):
        zone, node = key.split("/")
        host = Host(zone=zone, node=node, endpoint=f"{node}.{zone}.test:7443")
        kube.create_catalog(HOST, host_ident(zone, node), host.to_spec(), labels={ZONE_LABEL: zone})
    issuer = LocalIssuer()
    try:
        with (
            override_settings(FLEXPLANE_AGENT_RELEASES_DIR=str(released), FLEXPLANE_AGENT_REGISTRY=""),
            in_process(issuer, kube, zones) as running,
        ):
            yield running
    finally:
        issuer.stop()


def hosts_page(browser: Client | None = None) -> str:
    page = (browser or signed_in("admin")).get("/admin/hosts/")
    assert page.status_code == 200
    return page.content.decode()


def post(browser: Client, path: str, data: dict[str, str] | None = None) -> str:
    """A form of the hosts page posted as the browser posts it (its CSRF token), and the page it leads to."""
    hosts_page(browser)
    token = browser.cookies[settings.CSRF_COOKIE_NAME].value
    answer = browser.post(path, {"csrfmiddlewaretoken": token, **(data or {})}, follow=True)
    assert answer.status_code == 200
    return answer.content.decode()


def test_the_hosts_page_shows_the_rollouts_phase_its_canary_and_the_host_where_it_halted(
    api: InProcessApi, zones: FleetZones
) -> None:
    assert "data-rollout-phase" not in hosts_page()  # none started: nothing said
    assert start(api, hosts=[CANARY], soak=15)["errors"] == []
    page = hosts_page()
    assert 'data-rollout-phase="CANARY"' in page
    assert "Agent rollout of 1.1.0" in page
    assert re.search(r"text-amber-900\">canary</span>", page)
    assert re.search(r"the other hosts get 1\.0\.0 until the canaries have run it healthy for 15 min", page)
    assert "canary of 1.1.0" in page

    report(zones, CANARY, "1.0.0", "rolled-back", "1.1.0", "1.1.0 did not answer within 60 s")
    page = hosts_page()
    assert 'data-rollout-phase="HALTED"' in page
    assert f'data-rollout-halted="{CANARY}"' in page
    assert f"Halted at host {CANARY}: 1.1.0 failed its health check on {CANARY}" in page
    assert "1.1.0 did not answer within 60 s" in page
    assert "the rollout of 1.1.0 halted here" in page


def test_an_admin_halts_and_resumes_the_rollout_from_the_hosts_page(api: InProcessApi) -> None:
    assert start(api, hosts=[CANARY])["errors"] == []
    browser = signed_in("admin")
    assert 'data-action="host.rollout-halt"' in hosts_page(browser)
    page = post(browser, "/admin/hosts/rollout/halt/", {"reason": "change freeze"})
    assert "The agent rollout is halted: no further host gets its version." in page
    assert 'data-rollout-phase="HALTED"' in page
    assert "halted by Platform Admin: change freeze" in page
    assert ask(CANARY, "1.0.0")["version"] == "1.0.0"

    page = post(browser, "/admin/hosts/rollout/resume/")
    assert "The agent rollout goes on." in page
    assert 'data-rollout-phase="CANARY"' in page
    assert ask(CANARY, "1.0.0")["version"] == "1.1.0"
    refused = post(browser, "/admin/hosts/rollout/resume/")
    assert "the rollout of 1.1.0 is not halted" in refused
