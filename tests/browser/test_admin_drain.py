"""A drain followed live on the hosts page: its cell moves as the drain goes, with no reload, and the
page stops asking once no drain runs. The drain's record is written as its runner writes it, on a host
whose agent never answers (so nothing else moves it)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from devstack.world import World
from orchestrator.services import hosts
from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn
from tests.kubekit import world_kube
from tests.portal.drainkit import drained_host, write_drain

# The page polls every 2 s while a drain runs; a few polls' worth.
LIVE_MS = 10_000


def test_the_drain_column_moves_without_a_reload_and_the_polling_stops_when_the_drain_ends(
    page: Page, login: LoginFn, api: GraphQL, world: World
) -> None:
    kube = world_kube(world)
    with drained_host(api, kube) as node:
        write_drain(kube, node, hosts.RUNNING, moved=0)
        login(page, "admin", "/admin/hosts/")
        page.goto("/admin/hosts/")
        cell = page.locator(f"#drain-zone-a_{node}")
        expect(cell).to_contain_text("0 of 2 VMs moved")
        page.evaluate("() => { window.flexplaneNotReloaded = true; }")

        write_drain(kube, node, hosts.RUNNING, moved=1)
        expect(cell).to_contain_text("1 of 2 VMs moved", timeout=LIVE_MS)
        write_drain(kube, node, hosts.DONE, moved=2)
        expect(cell).to_contain_text("done", timeout=LIVE_MS)
        expect(cell).to_contain_text("2 of 2 VMs moved")
        expect(page.locator("#drains")).to_have_attribute("data-polling", "false", timeout=LIVE_MS)
        expect(page.locator("#drains")).not_to_have_attribute("hx-trigger", "every 2s")
        assert page.evaluate("() => window.flexplaneNotReloaded === true"), "the page was reloaded"

        polls: list[str] = []
        page.on(
            "request", lambda request: polls.append(request.url) if "/admin/hosts/" in request.url else None
        )
        page.wait_for_timeout(5_000)
        assert polls == [], f"the page still polls with no drain running: {polls}"
