"""The browser console: noVNC (served by the portal, built from npm) connects through the orchestrator and
the node's agent to the VM's VNC server and draws its screen, types pasted text into the VM as keystrokes and
goes full screen. The VM page's usage graphs: ``tests/browser/light/test_vm_usage.py``."""

from __future__ import annotations

import time
from pathlib import Path

from playwright.sync_api import Page, expect

from devstack.world import World
from portal.console.consumers import PATIENCE
from tests.browser.conftest import LoginFn

WEB_1_VMID = 100  # web-1 of VDC demo, running in zone-a
# How long the console page may take to load its script and make its websocket (see ``opened``).
SCRIPT_LOADED_MS = 60_000
# How many times a console page whose requests the network's changes dropped is loaded again.
RELOADS = 3
# How long a stopped agent, going on, may take to do what it was asked meanwhile.
AGENT_CATCHES_UP = 10.0


def _console_lines(world: World) -> list[str]:
    """The last lines each of the world's orchestrator and agents logged of consoles: where an open that
    did not finish stopped."""
    folder = world.cfg.scratch / "logs"
    lines: list[str] = []
    for log in [folder / "orchestrator.log", *sorted(folder.glob("agent-*.log"))]:
        said = [line for line in log.read_text(errors="replace").splitlines() if "onsole" in line]
        lines.extend(f"{log.stem}: {line}" for line in said[-10:])
    return lines


def page_trouble(page: Page) -> list[str]:
    """What ``page`` says of its own errors, failed requests and websockets from now on, for a failure's
    message."""
    said: list[str] = []
    page.on("console", lambda message: said.append(f"console {message.type}: {message.text}"))
    page.on("pageerror", lambda error: said.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: said.append(f"request failed: {request.url} {request.failure}"))
    page.on("websocket", lambda socket: said.append(f"websocket {socket.url}"))
    return said


def opened(page: Page, said: list[str], world: World) -> None:
    """The VM page's Console link followed, until the console page's script has run (its websocket made).

    The script is noVNC's modules, some thirty files the portal serves: on a machine as busy as a parallel
    test run, they can take many seconds, which the page's own deadline (PATIENCE) only counts from then.
    Chromium drops the requests it has in flight when the machine's network changes (``ERR_NETWORK_CHANGED``:
    other tests of a parallel run add and remove interfaces, as nodes' bridges and namespaces); a page whose
    script never came for that reason is loaded again (up to RELOADS times), as its user would reload it.
    """
    sockets = len([line for line in said if line.startswith("websocket ")])
    page.get_by_role("link", name="Console").click()
    reloads, seen = 0, 0
    deadline = time.monotonic() + SCRIPT_LOADED_MS / 1000
    while len([line for line in said if line.startswith("websocket ")]) == sockets:
        dropped = sum("ERR_NETWORK_CHANGED" in line for line in said)
        if dropped > seen and reloads < RELOADS:  # dropped since the last load: once the network settled
            page.wait_for_timeout(1000)
            seen, reloads = sum("ERR_NETWORK_CHANGED" in line for line in said), reloads + 1
            said.append("the network changed under the page: loaded once more")
            page.reload()
        if time.monotonic() > deadline:
            raise AssertionError("\n".join(["no console websocket", *said, *_console_lines(world)]))
        page.wait_for_timeout(200)


def vnc_proxies(world: World) -> int:
    """How many consoles of web-1 zone-a's fake Proxmox has opened (``vncproxy``) among the requests it
    remembers."""
    pve = world.fakes["zone-a"].pve
    proxied = f"/qemu/{WEB_1_VMID}/vncproxy"
    count: int = world.fakes.on_loop(lambda: sum(1 for _, path, _ in pve.requests if path.endswith(proxied)))
    return count


def web_1_node(world: World) -> str:
    """The node web-1 runs on now: pve1 as seeded (devstack/seed.py), unless a test of the shared world
    moved it since."""
    pve = world.fakes["zone-a"].pve
    node: str = world.fakes.on_loop(lambda: next(vm.node for vm in pve.vms if vm.vmid == WEB_1_VMID))
    return node


def expect_keys(world: World, pressed: list[int], timeout: float = 10.0) -> None:
    """web-1's console got key presses ``pressed`` last, each released (Shift after the key it shifts)."""
    vm = next(vm for vm in world.fakes["zone-a"].pve.vms if vm.vmid == WEB_1_VMID)
    deadline = time.monotonic() + timeout
    while True:
        keys = world.fakes.on_loop(lambda: list(getattr(vm, "console_keys", [])))
        downs = [keysym for down, keysym in keys if down]
        released = sum(1 for down, _ in keys if not down) >= len(pressed)  # the last release may trail
        if (downs[-len(pressed) :] == pressed and released) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert downs[-len(pressed) :] == pressed, [hex(k) for k in downs]
    assert sum(1 for down, _ in keys if not down) >= len(pressed)


def test_alice_opens_web_1s_console_and_sees_its_screen(
    page: Page, login: LoginFn, screenshots: Path, world: World
) -> None:
    scripts: list[str] = []
    page.on(
        "request", lambda request: scripts.append(request.url) if request.resource_type == "script" else None
    )
    said = page_trouble(page)
    failed: list[str] = []  # every answer of 400 or more the page got (a missing script, an icon)
    page.on(
        "response",
        lambda answer: failed.append(f"{answer.status} {answer.url}") if answer.status >= 400 else None,
    )
    login(page, "alice", "/vdc/demo/vms/zone-a/100/")
    opened(page, said, world)

    expect(page.get_by_role("heading", name="Console of web-1 (zone-a/100)")).to_be_visible()
    screen = page.locator("#console-screen")
    # Through the portal's socket, the orchestrator and the node's agent to the VM: on a busy machine more
    # than expect's 5 s default. The page gives up after PATIENCE (the orchestrator closes with a reason
    # before): the state it settles in, with the page's words and the world's, is what is checked.
    expect(screen).not_to_have_attribute("data-state", "connecting", timeout=(PATIENCE + 5) * 1000)
    status = page.locator("#console-status")
    state = screen.get_attribute("data-state")
    words = [f"{state}: {status.text_content()}", *said, *_console_lines(world)]
    assert state == "connected", "\n".join(words)
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
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(screenshots / "vm-console-narrow.png"), full_page=True)
    scroll, client = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= client, f"the console is {scroll} px wide on a {client} px phone"
    page.set_viewport_size({"width": 1366, "height": 768})
    assert failed == []

    # Text typed into the VM: Shift around a capital and "!", Enter for the new line.
    page.locator("#console-paste summary").click()
    page.get_by_label("Text to type into the VM").fill("Hi!\n")
    page.get_by_role("button", name="Type it into the VM").click()
    expect(status).to_have_text("Typed 4 character(s) into the VM.")
    shift, enter = 0xFFE1, 0xFF0D
    pressed = [shift, ord("H"), ord("i"), shift, ord("!"), enter]
    expect_keys(world, pressed)

    page.get_by_role("button", name="Full screen").click()
    page.wait_for_function("() => document.fullscreenElement?.id === 'console-screen'")
    expect(page.get_by_role("button", name="Leave full screen")).to_be_attached()
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function("() => document.fullscreenElement === null")
    expect(page.get_by_role("button", name="Full screen")).to_be_visible()


def test_a_console_that_never_greets_is_given_up_in_words(page: Page, login: LoginFn, world: World) -> None:
    """The VM's node's agent hangs (stopped, not gone): nothing greets the page. The orchestrator would
    close the console with its reason after OPEN_TIMEOUT; the page, on its own clock, gives up after
    PATIENCE whatever happens upstream, and says so, rather than stay "Connecting..." for ever."""
    node = web_1_node(world)
    said = page_trouble(page)
    login(page, "alice", "/vdc/demo/vms/zone-a/100/")
    page.clock.install()
    before = vnc_proxies(world)
    with world.agent_hung("zone-a", node):
        opened(page, said, world)  # the page's script has run, and set its deadline on the page's clock
        screen = page.locator("#console-screen")
        page.clock.run_for(int(PATIENCE * 1000) - 1000)
        expect(screen).to_have_attribute("data-state", "connecting")
        page.clock.run_for(2000)
        expect(screen).to_have_attribute("data-state", "failed")
    # The agent, going on, may still open the console it was asked for while stopped: let it do so here,
    # not in the next test (whose Proxmox calls it would be counted in).
    deadline = time.monotonic() + AGENT_CATCHES_UP
    while time.monotonic() < deadline:
        if vnc_proxies(world) > before:
            break
        time.sleep(0.2)
    expect(page.locator("#console-status")).to_have_text(
        "The console did not answer in time: reload the page to try again."
    )
    expect(page.get_by_role("button", name="Send Ctrl+Alt+Del")).to_be_disabled()
