"""flexplane.handler: each request's middleware and view run in one thread of the pool, requests side by
side; what Django's own handler does with a request's answer (404s, errors, logging) is unchanged."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator

import pytest
from asgiref.testing import ApplicationCommunicator
from django import db
from django.core import signals
from django.core.handlers.base import reset_urlconf
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.test import override_settings
from django.urls import include, path

from flexplane.handler import ThreadedASGIHandler
from tests.loops import run_apart

# Where each request's middleware and view ran, by the request's path.
seen: dict[str, dict[str, str]] = {}
both_in = threading.Barrier(2, timeout=10)


class RecordThread:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        seen.setdefault(request.path, {})["middleware"] = threading.current_thread().name
        return self.get_response(request)


def where(request: HttpRequest) -> JsonResponse:
    seen.setdefault(request.path, {})["view"] = threading.current_thread().name
    return JsonResponse({"ok": True})


def meet(request: HttpRequest, n: int) -> JsonResponse:
    """Answers once a second request is in this view too: only when two run at once."""
    both_in.wait()
    return where(request)


def fail(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a view's own failure")


# The site's own pages too: the error pages link to them.
urlpatterns = [
    path("where", where),
    path("meet/<int:n>", meet),
    path("fail", fail),
    path("site/", include("flexplane.urls")),
]

SETTINGS = {"ROOT_URLCONF": __name__, "MIDDLEWARE": [f"{__name__}.RecordThread"], "DEBUG": False}


async def ask(app: ThreadedASGIHandler, url: str) -> tuple[int, bytes]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": url,
        "raw_path": url.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    communicator = ApplicationCommunicator(app, scope)
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(10)
    body = b""
    while True:
        message = await communicator.receive_output(10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(10)
    return start["status"], body


@pytest.fixture
def app() -> Iterator[ThreadedASGIHandler]:
    seen.clear()
    both_in.reset()
    with override_settings(**SETTINGS):
        handler = ThreadedASGIHandler(threads=4)
        yield handler
    handler.executor.shutdown(wait=True)


def test_the_middleware_and_the_view_run_in_one_thread_of_the_pool(app: ThreadedASGIHandler) -> None:
    with override_settings(**SETTINGS):
        status, body = run_apart(ask(app, "/where"))
    assert (status, body) == (200, b'{"ok": true}')
    threads = seen["/where"]
    assert threads["middleware"] == threads["view"]
    assert threads["view"].startswith("request")


def test_requests_run_side_by_side_each_in_a_thread_of_its_own(app: ThreadedASGIHandler) -> None:
    async def two() -> list[tuple[int, bytes]]:
        return list(await asyncio.gather(ask(app, "/meet/1"), ask(app, "/meet/2")))

    with override_settings(**SETTINGS):
        answers = run_apart(two())
    assert [status for status, _ in answers] == [200, 200]  # neither waited for the other to finish
    assert seen["/meet/1"]["view"] != seen["/meet/2"]["view"]


def test_a_request_waits_for_a_thread_when_the_pool_is_busy() -> None:
    seen.clear()
    release = threading.Event()
    with override_settings(**SETTINGS):
        handler = ThreadedASGIHandler(threads=1)
    busy = handler.executor.submit(release.wait, 10)  # the pool's one thread, taken

    async def waiting() -> tuple[int, bytes]:
        asked = asyncio.ensure_future(ask(handler, "/where"))
        await asyncio.sleep(0.3)
        assert not asked.done()
        assert "/where" not in seen
        release.set()
        return await asked

    try:
        with override_settings(**SETTINGS):
            assert run_apart(waiting())[0] == 200
    finally:
        release.set()
        busy.result(10)
        handler.executor.shutdown(wait=True)


def test_an_unknown_path_and_a_failing_view_are_answered_and_logged_as_django_does(
    app: ThreadedASGIHandler, caplog: pytest.LogCaptureFixture
) -> None:
    with override_settings(**SETTINGS), caplog.at_level(logging.WARNING, logger="django.request"):
        missing, _ = run_apart(ask(app, "/nowhere"))
        failed, _ = run_apart(ask(app, "/fail"))
    assert (missing, failed) == (404, 500)
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "django.request"]
    assert ("WARNING", "Not Found: /nowhere") in logged
    assert ("ERROR", "Internal Server Error: /fail") in logged


def test_websockets_are_not_its_to_serve(app: ThreadedASGIHandler) -> None:
    with pytest.raises(ValueError, match="HTTP connections only, not websocket"):
        run_apart(app({"type": "websocket"}, None, None))


def test_with_no_database_a_request_starts_without_the_databases_housekeeping(
    app: ThreadedASGIHandler,
) -> None:
    # Django resets and closes connections at every request's start and end; with no database (its dummy
    # backend) there is nothing to reset, and the start is not sent to a thread for it.
    started = [receiver() for _, receiver, _ in signals.request_started.receivers]
    finished = [receiver() for _, receiver, _ in signals.request_finished.receivers]
    assert db.reset_queries not in started
    assert db.close_old_connections not in started + finished
    assert reset_urlconf in finished  # Django's own other housekeeping stays
