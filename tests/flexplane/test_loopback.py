"""Which names and addresses are this machine's only (flexplane.loopback), and the refusal itself."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from flexplane.loopback import LoopbackOnly, arrived_on_loopback, is_loopback_name, require_loopback_hosts


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST.", "app.localhost", "127.0.0.1", "127.30.0.1", "[::1]", "::1"]
)
def test_loopback_names_name_this_machine(host: str) -> None:
    assert is_loopback_name(host)


@pytest.mark.parametrize(
    "host",
    [
        "*",
        ".example.com",
        "cloud.example.com",
        "0.0.0.0",  # noqa: S104  # a name checked, not an address bound
        "192.0.2.1",
        "[::]",
        "localhost.evil",
    ],
)
def test_other_names_and_wildcards_do_not(host: str) -> None:
    assert not is_loopback_name(host)


@pytest.mark.parametrize(
    ("server", "loopback"),
    [
        (("127.0.0.1", 8000), True),
        (["127.30.0.1", 8000], True),
        (("::1", 8000), True),
        (("::ffff:127.0.0.1", 8000), True),
        (None, True),  # a Unix socket
        (("192.0.2.2", 8000), False),
        (("::ffff:192.0.2.2", 8000), False),
        (("fe80::1%eth0", 8000), False),
    ],
)
def test_a_connection_arrived_on_loopback_by_the_servers_own_address(server: Any, loopback: bool) -> None:
    assert arrived_on_loopback(server) is loopback


def test_allowed_hosts_beyond_loopback_are_refused_by_name() -> None:
    require_loopback_hosts(["127.0.0.1", "localhost"])
    with pytest.raises(ImproperlyConfigured, match=r"not \*, cloud\.example\.com"):
        require_loopback_hosts(["localhost", "*", "cloud.example.com"])


async def test_a_request_on_another_address_never_reaches_the_app() -> None:
    reached: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        sent.append(message)

    guarded = LoopbackOnly(app)
    await guarded({"type": "http", "server": ("192.0.2.2", 8000)}, receive, send)
    await guarded({"type": "websocket", "server": ("192.0.2.2", 8000)}, receive, send)
    assert reached == []
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body", "websocket.close"]
    assert sent[0]["status"] == 403
    await guarded({"type": "http", "server": ("127.0.0.1", 8000)}, receive, send)
    assert reached == ["http"]
