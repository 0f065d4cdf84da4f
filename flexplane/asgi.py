"""The ASGI application: the orchestrator and the portal, served by uvicorn (flexplane.serve); its HTTP
requests run in a thread pool (flexplane.handler), its websockets on the event loop (Channels).

Its settings are the production ones unless DJANGO_SETTINGS_MODULE says otherwise: ``make dev`` and
the tests choose the development settings (``flexplane.settings``) explicitly, and under those the
app answers connections that arrived on loopback only (``flexplane.loopback``).
"""

import os

import django
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.sessions import SessionMiddlewareStack
from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from flexplane.loopback import LoopbackOnly, require_loopback_hosts

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexplane.settings.production")
django.setup(set_prefix=False)

from flexplane.handler import ThreadedASGIHandler  # noqa: E402

django_app = ThreadedASGIHandler(settings.FLEXPLANE_REQUEST_THREADS)
# In development the app serves its own static files; production serves them from the ingress.
http_app = ASGIStaticFilesHandler(django_app) if settings.DEBUG else django_app

# Websockets (the portal's live tasks): only from this site's own pages (Origin), with the user of
# the signed session. Imported once Django's apps are ready.
from portal.auth import WebsocketUserMiddleware  # noqa: E402
from portal.routing import websocket_urlpatterns  # noqa: E402

websocket_app = AllowedHostsOriginValidator(
    SessionMiddlewareStack(WebsocketUserMiddleware(URLRouter(websocket_urlpatterns)))
)

application = ProtocolTypeRouter({"http": http_app, "websocket": websocket_app})
if settings.FLEXPLANE_LOOPBACK_ONLY:  # the development settings: this machine only
    require_loopback_hosts(settings.ALLOWED_HOSTS)
    application = LoopbackOnly(application)
