"""Serving this machine only: what the development settings hold to.

ALLOWED_HOSTS checks the Host header, which the client writes. What a client cannot choose is the
address its connection arrived at, this server's own (the ASGI scope's ``server``): under the
development settings, :class:`LoopbackOnly` answers a connection that arrived on any address but a
loopback one with 403 (a websocket is refused likewise), whatever address the server was told to bind;
and the app does not start when ALLOWED_HOSTS names anything but this machine
(:func:`require_loopback_hosts`).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

REFUSAL = (
    b"flex.plane's development settings serve this machine only (loopback addresses): "
    b"serve with DJANGO_SETTINGS_MODULE=flexplane.settings.production.\n"
)


def is_loopback_address(host: str) -> bool:
    """Whether ``host`` is a loopback IP address (IPv4, IPv6, or IPv4 mapped into IPv6)."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def is_loopback_name(host: str) -> bool:
    """Whether an ALLOWED_HOSTS entry names this machine only: ``localhost`` (and its subdomains) or a
    loopback address; never a wildcard."""
    name = host.strip().lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost") or is_loopback_address(name)


def require_loopback_hosts(allowed_hosts: Sequence[str]) -> None:
    """Refuse (ImproperlyConfigured) ALLOWED_HOSTS that name anything but this machine."""
    beyond = [host for host in allowed_hosts if not is_loopback_name(host)]
    if beyond:
        raise ImproperlyConfigured(
            f"the development settings serve loopback only, not {', '.join(beyond)} "
            "(FLEXPLANE_ALLOWED_HOSTS): serve with DJANGO_SETTINGS_MODULE=flexplane.settings.production"
        )


def arrived_on_loopback(server: Sequence[Any] | None) -> bool:
    """Whether a connection arrived on a loopback address (the scope's ``server``: host and port).

    No address at all is a Unix socket, which only this machine reaches.
    """
    return server is None or is_loopback_address(str(server[0]))


class LoopbackOnly:
    """ASGI middleware: refuse every HTTP request and websocket that did not arrive on loopback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in {"http", "websocket"} or arrived_on_loopback(scope.get("server")):
            await self.app(scope, receive, send)
            return
        logger.warning(
            "refused a connection on %s: the development settings serve loopback only", scope.get("server")
        )
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accepting: the handshake gets 403
            return
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")],
            }
        )
        await send({"type": "http.response.body", "body": REFUSAL})
