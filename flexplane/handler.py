"""Django's ASGI handler, running each request's middleware and view in one thread of a pool.

Every middleware of ours and every view is sync: they call Proxmox, the management cluster and the
identity provider with blocking clients. Django's own ``ASGIHandler`` builds an async middleware chain
around them all the same, so a request went from the event loop to a thread for the middleware, back to
the loop for the view's dispatch, to a thread again for the view, and back; and each request had a
thread made for it and joined (its ``ThreadSensitiveContext``). Here the sync chain that a WSGI server
runs (``BaseHandler.get_response``) runs once per request, in a thread of a bounded pool: requests run
side by side in threads, as under a threaded WSGI server, and the event loop only reads and writes the
connections and serves the websockets, which Channels routes past this handler.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from django import db
from django.conf import settings
from django.core import signals
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase

NO_DATABASE = "django.db.backends.dummy"


class ThreadedASGIHandler(ASGIHandler):
    """An ASGI handler for an app whose middleware and views are sync; ``threads`` requests at a time
    run their Python (the others wait for a thread, their connections read by the loop)."""

    def __init__(self, threads: int) -> None:
        base.BaseHandler.__init__(self)  # not ASGIHandler's: it builds the async chain
        self.load_middleware(is_async=False)
        if all(database["ENGINE"] == NO_DATABASE for database in settings.DATABASES.values()):
            # Django resets and closes database connections as every request starts and ends: with no
            # database (DATABASES = {}, which Django fills with its dummy backend) there is nothing to
            # do, but the handler would still send the request to a thread to do it (a signal's sync
            # receivers run in one).
            signals.request_started.disconnect(db.reset_queries)
            signals.request_started.disconnect(db.close_old_connections)
            signals.request_finished.disconnect(db.close_old_connections)
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="request")
        self._respond = sync_to_async(self.get_response, thread_sensitive=False, executor=self.executor)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django serves HTTP connections only, not {scope['type']}")
        # Without ASGIHandler's ThreadSensitiveContext, which makes a thread for every request: nothing
        # of this app needs a request's sync calls to share one thread.
        await self.handle(scope, receive, send)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        return await self._respond(request)
