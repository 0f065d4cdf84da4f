"""The browser console: noVNC (served by the portal, built from npm) connects through the orchestrator and
the node's agent to the VM's VNC server and draws its screen; and the VM page's usage graphs."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from agentclient.console import OPEN_TIMEOUT
from tests.browser.conftest import LoginFn


def test_alice_opens_web_1s_console_and_sees_its_screen(
    page: Page, login: LoginFn, screenshots: Path
) -> None:
    scripts: list[str] = []
    page.on(
        "request", lambda request: scripts.append(request.url) if request.resource_type == "script" else None
    )
    login(page, "alice", "/vdc/demo/vms/zone-a/100/")
    page.get_by_role("link", name="Console").click()

    expect(page.get_by_role("heading", name="Console of zone-a/100")).to_be_visible()
    screen = page.locator("#console-screen")
    # Through the portal's socket, the orchestrator and the node's agent to the VM: on a busy machine more
    # than expect's 5 s default. The page waits no longer than the orchestrator does for the agent's
    # greeting (agentclient.console.OPEN_TIMEOUT, then the page says why): the state it settles in, with
    # the page's words, is what is checked.
    settle = (OPEN_TIMEOUT + 10) * 1000
    expect(screen).not_to_have_attribute("data-state", "connecting", timeout=settle)
    status = page.locator("#console-status")
    assert screen.get_attribute("data-state") == "connected", status.text_content()
    expect(status).to_have_text("Connected.")
    canvas = screen.locator("canvas")
    expect(canvas).to_be_visible()
    assert canvas.evaluate("c => [c.width, c.height]") == [640, 400]  # the VM's screen, drawn
    assert canvas.evaluate("c => Array.from(c.getContext('2d').getImageData(320, 200, 1, 1).data)") == [
        3,
        132,
        199,
        255,
    ]
    expect(page.get_by_role("button", name="Send Ctrl+Alt+Del")).to_be_enabled()
    assert all(url.startswith(page.url.split("/vdc/")[0]) for url in scripts)  # noVNC from the portal itself
    page.screenshot(path=str(screenshots / "vm-console.png"), full_page=True)


def test_the_vm_page_draws_the_usage_graphs(page: Page, login: LoginFn, screenshots: Path) -> None:
    login(page, "alice", "/vdc/demo/vms/zone-a/100/")

    usage = page.locator("#vm-usage[data-usage='hour']")
    expect(usage.locator("figure")).to_have_count(4)
    expect(usage.locator("polyline")).to_have_count(6)
    usage.get_by_role("link", name="Day").click()
    expect(page.locator("#vm-usage[data-usage='day'] polyline")).to_have_count(6)
    page.screenshot(path=str(screenshots / "vm-detail-usage.png"), full_page=True)
