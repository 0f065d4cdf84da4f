"""The stateless rule, as configuration."""

from __future__ import annotations

import importlib
import os
from unittest import mock

from django.conf import settings


def test_there_is_no_database() -> None:
    # Django fills an empty DATABASES with its dummy backend, whose every query raises.
    assert {db["ENGINE"] for db in settings.DATABASES.values()} <= {"django.db.backends.dummy"}


def test_sessions_live_in_signed_cookies() -> None:
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.signed_cookies"


def test_production_settings_lock_things_down() -> None:
    env = {"FLEXPLANE_SECRET_KEY": "x" * 60, "FLEXPLANE_ALLOWED_HOSTS": "cloud.example.com"}
    with mock.patch.dict(os.environ, env):
        production = importlib.import_module("flexplane.settings.production")
        production = importlib.reload(production)
    assert production.DEBUG is False
    assert production.SESSION_COOKIE_SECURE
    assert production.SESSION_COOKIE_HTTPONLY
    assert production.SESSION_COOKIE_SAMESITE == "Lax"
    assert production.FLEXPLANE_GRAPHIQL is False
    assert production.FLEXPLANE_GRAPHQL_INTROSPECTION is False
    assert production.ALLOWED_HOSTS == ["cloud.example.com"]
