"""The ASGI application: the orchestrator and the portal, served by daphne."""

import os

from channels.routing import ProtocolTypeRouter
from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexplane.settings")

django_app = get_asgi_application()
# In development the app serves its own static files; production serves them from the ingress.
http_app = ASGIStaticFilesHandler(django_app) if settings.DEBUG else django_app

application = ProtocolTypeRouter({"http": http_app})
