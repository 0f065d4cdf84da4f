"""The portal served from this process on loopback, over HTTP, on the light world.

The pages' tests drive the portal as a browser does, with ``requests`` sessions: forms with their CSRF
tokens, redirects, htmx's headers, cookies. Here the portal answers them from the test's own process
(Django's WSGI handler behind a threading server, through the same middleware stack as the orchestrator's
ASGI app, its static files served as the development app serves them, for a browser), its services on the
light world (``tests/orchestrator/lightworld.py``) and the API's process sources
(``tests/orchestrator/inprocess.in_process``). A session is the one the portal's login records for the
devstack's user (``inprocess.recorded_login``); the login itself, websockets (console, live tasks) and
the server are the devstack world's to show.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import requests
from django.conf import settings
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.handlers.wsgi import WSGIHandler
from django.test import override_settings

from devstack.fakezones import FakeZones
from tests import addresses
from tests.orchestrator.inprocess import recorded_login
from tests.orchestrator.lightworld import LightWorld
from tests.portal.sessionkit import host_of


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the tests check what a page says, not logs
        pass


@dataclass(frozen=True)
class LightPortal:
    """The portal at ``url``, its zones the light world's."""

    url: str
    light: LightWorld

    @property
    def fakes(self) -> FakeZones:
        return self.light.fakes

    def session(self, username: str) -> requests.Session:
        """A browser signed in as the devstack's ``username``: its session cookie as the login sets it."""
        browser = requests.Session()
        browser.trust_env = False  # no proxy between the test and loopback
        browser.cookies.set(
            settings.SESSION_COOKIE_NAME, recorded_login(username), domain=host_of(self), path="/"
        )
        return browser


@contextmanager
def served(light: LightWorld) -> Iterator[LightPortal]:
    """The portal of this process served on the light world's loopback subnet until the block ends."""
    host = addresses.address(addresses.LIGHT_PORTAL, 1)
    with override_settings(ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, host]):
        app = StaticFilesHandler(WSGIHandler())
        server = make_server(host, 0, app, server_class=_Server, handler_class=_QuietHandler)
        thread = threading.Thread(target=server.serve_forever, name="light-portal", daemon=True)
        thread.start()
        try:
            yield LightPortal(f"http://{host}:{server.server_port}", light)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
