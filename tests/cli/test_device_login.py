"""``flexplane login`` as a person signs in: the OAuth device authorization grant (RFC 8628) against the
devstack's identity provider (a real process, Zitadel's endpoints), the CLI polling in a thread while
Debian's chromium, driven by Playwright as the browser tests drive it (tests/browser/conftest.py), opens
the URL the CLI printed, signs in as alice and approves the code; the CLI then keeps her tokens, calls the
API in this process with them, and renews them with the refresh token when they near their end."""

from __future__ import annotations

import io
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect
from rich.console import Console
from typer.testing import Result

from devstack import seed
from devstack.identity.client import CLI_DEVICE_CLIENT_ID
from devstack.identity.process import IdentityProvider
from tests.apiclient.conftest import ORIGIN
from tests.browser.conftest import CONTEXT, TIMEOUT_MS
from tests.browser.conftest import browser_type_launch_args as browser_type_launch_args  # Debian's chromium
from tests.cli.conftest import Flexplane

pytestmark = pytest.mark.browser

URL = re.compile(r"Open (\S+) in a browser and approve the code (\w+)")


def printed_url(err: io.StringIO, login: threading.Thread, timeout: float = 20) -> tuple[str, str]:
    """The verification URI (with the code) and the code, as the CLI printed them for the person."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = URL.search(err.getvalue())
        if found:
            return found.group(1), found.group(2)
        assert login.is_alive(), err.getvalue()
        time.sleep(0.05)
    raise AssertionError(f"the CLI printed no URL: {err.getvalue()!r}")


def test_a_person_logs_the_cli_in_from_a_browser_and_its_token_calls_the_api(
    flexplane: Flexplane,
    identity: IdentityProvider,
    trusting: None,
    browser: Browser,
    config_dir: Path,
) -> None:
    err = io.StringIO()
    ended: dict[str, Result] = {}
    arguments = ["--url", ORIGIN, "--issuer", identity.issuer, "--project-id", seed.PROJECT_ID]
    arguments += ["--client-id", CLI_DEVICE_CLIENT_ID, "--vdc", "demo"]

    def log_in() -> None:
        ended["login"] = flexplane("login", *arguments, err=Console(file=err, width=200))

    login = threading.Thread(target=log_in, name="flexplane-login", daemon=True)
    login.start()
    url, code = printed_url(err, login)
    context = browser.new_context(**CONTEXT)
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(url)
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill("alice")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_label("Code")).to_have_value(code)
        page.get_by_role("button", name="Continue").click()
        page.get_by_role("button", name="Allow").click()
        expect(page.get_by_role("heading", name="Device authorized")).to_be_visible()
    finally:
        context.close()
    login.join(30)

    assert not login.is_alive(), err.getvalue()
    assert ended["login"].exit_code == 0, (ended["login"].output, err.getvalue())
    assert "Logged in as" in err.getvalue()
    credentials = config_dir / "credentials.json"
    credential: dict[str, Any] = json.loads(credentials.read_text())["default"]
    assert credential["kind"] == "device"
    assert credential["refresh_token"]
    me = flexplane("vdcs", "list", "-o", "json")
    assert me.exit_code == 0, me.output
    assert [vdc["id"] for vdc in json.loads(me.stdout)] == ["demo"]

    # Its token a minute from its end: renewed with the refresh token before the next call.
    document = json.loads(credentials.read_text())
    document["default"]["expires_at"] = time.time() + 30
    credentials.write_text(json.dumps(document))
    listed = flexplane("networks", "list", "-o", "json")

    assert listed.exit_code == 0, listed.output
    renewed = json.loads(credentials.read_text())["default"]
    assert renewed["access_token"] != credential["access_token"]
    assert renewed["refresh_token"] != credential["refresh_token"]
