"""A VM page's usage graphs in the browser: CPU, memory, disk and network over the last hour, then the day,
drawn server-side from the light world's fake Proxmox's RRD data (``tests/portal/light/test_vm_usage.py``:
what they say)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import LoginFn


def test_the_vm_page_draws_the_usage_graphs(page: Page, signed_in: LoginFn, screenshots: Path) -> None:
    signed_in(page, "alice", "/vdc/demo/vms/zone-a/100/")

    usage = page.locator("#vm-usage[data-usage='hour']")
    expect(usage.locator("figure")).to_have_count(4)
    expect(usage.locator("polyline")).to_have_count(6)
    usage.get_by_role("link", name="Day").click()
    expect(page.locator("#vm-usage[data-usage='day'] polyline")).to_have_count(6)
    page.screenshot(path=str(screenshots / "vm-detail-usage.png"), full_page=True)
