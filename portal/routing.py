"""The portal's websocket routes (``flexplane/asgi.py`` serves them behind the session and origin checks)."""

from django.urls import path

from portal.console.consumers import ConsoleConsumer
from portal.consumers import TaskConsumer

websocket_urlpatterns = [
    path("ws/tasks/<str:task_id>/", TaskConsumer.as_asgi(), name="ws-task"),
    path("ws/console/<str:ticket>/", ConsoleConsumer.as_asgi(), name="ws-console"),
]
