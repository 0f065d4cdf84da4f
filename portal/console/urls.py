"""The console page, routed under ``vdc/<str:vdc>/console/``; its websocket is in ``portal.routing``."""

from django.urls import path

from portal.console import views

urlpatterns = [
    path("<str:zone>/<int:vmid>/", views.console_page, name="vm-console"),
]
