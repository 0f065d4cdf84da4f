"""The stateless rule, as configuration."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from unittest import mock

from django.conf import settings

from flexplane.loopback import is_loopback_name


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


# The development settings' former default SECRET_KEY: anyone could sign a session with it.
FORMER_DEVELOPMENT_KEY = "dev-only-insecure-key-change-me"


def development_secret_key(**environ: str) -> str:
    """The SECRET_KEY of the development settings in a process of its own, with ``environ``."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("FLEXPLANE_") and k != "DJANGO_SETTINGS_MODULE"
    }
    done = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings\nprint(settings.SECRET_KEY)"],
        env={**kept, "DJANGO_SETTINGS_MODULE": "flexplane.settings", **environ},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_the_development_settings_sign_with_a_key_of_each_process_unless_given_one() -> None:
    first, second = development_secret_key(), development_secret_key()
    assert first != second
    assert FORMER_DEVELOPMENT_KEY not in {first, second}
    assert len(first) >= 50
    assert development_secret_key(FLEXPLANE_SECRET_KEY="given" * 10) == "given" * 10


def test_the_development_settings_serve_this_machine_only() -> None:
    development = importlib.import_module("flexplane.settings")
    assert development.FLEXPLANE_LOOPBACK_ONLY is True
    assert all(is_loopback_name(host) for host in development.ALLOWED_HOSTS)


def test_the_production_settings_serve_any_address_and_need_a_secret_key() -> None:
    env = {"FLEXPLANE_SECRET_KEY": "x" * 60, "FLEXPLANE_ALLOWED_HOSTS": "cloud.example.com"}
    with mock.patch.dict(os.environ, env):
        production = importlib.reload(importlib.import_module("flexplane.settings.production"))
    assert production.FLEXPLANE_LOOPBACK_ONLY is False
    assert production.SECRET_KEY == "x" * 60
