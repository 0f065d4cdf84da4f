"""Prepare a data directory and serve the provider over HTTP until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import django
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

from devstack.identity.config import SETTINGS_MODULE, IdentityConfig
from devstack.identity.keys import ensure_secret_key, ensure_signing_key
from devstack.identity.users import load_users

logger = logging.getLogger(__name__)

READY_MESSAGE = "identity listening on {issuer}"


@dataclass(frozen=True)
class ServeOptions:
    config: IdentityConfig
    port: int
    users_path: Path
    portal_redirect_uris: Sequence[str] = ()
    portal_post_logout_redirect_uris: Sequence[str] = ()
    portal_client_secret: str | None = None


def serve(options: ServeOptions) -> None:
    """Set up the data directory, then serve until a SIGTERM or SIGINT; return once stopped."""
    server = listen(options.config.bind_host, options.port)  # a taken port fails before the slow setup
    try:
        prepare(options)
        server.set_app(WSGIHandler())

        stopping = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda _signum, _frame: stopping.set())
        serving = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="identity-http", daemon=True
        )
        serving.start()
        print(READY_MESSAGE.format(issuer=options.config.issuer), flush=True)
        stopping.wait()
        server.shutdown()
        serving.join()
        logger.info("identity provider stopped")
    finally:
        server.server_close()


def listen(host: str, port: int) -> ThreadedWSGIServer:
    """A threaded WSGI server bound to ``host:port``; it queues connections until it serves."""
    try:
        return ThreadedWSGIServer((host, port), WSGIRequestHandler, ipv6=":" in host)
    except OSError as error:
        raise OSError(error.errno, f"cannot listen on {host}:{port}: {error.strerror}") from error


def prepare(options: ServeOptions) -> None:
    """Secrets, Django, the database schema and the seed data: everything before serving."""
    config = options.config
    users = load_users(options.users_path)  # a mistake in the file fails before the database is touched
    config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    ensure_signing_key(config.signing_key_path)
    ensure_secret_key(config.secret_key_path)

    os.environ.update(config.to_environ())
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    django.setup()
    call_command("migrate", interactive=False, verbosity=0, run_syncdb=True)  # see settings.MIGRATION_MODULES

    # Models can only be imported once Django is set up.
    from oauth2_provider.models import clear_expired

    from devstack.identity import seed

    portal = seed.PortalSeed(
        client_secret=seed.portal_client_secret(config.portal_client_path, options.portal_client_secret),
        redirect_uris=tuple(options.portal_redirect_uris),
        post_logout_redirect_uris=tuple(options.portal_post_logout_redirect_uris)
        or portal_homes(options.portal_redirect_uris),
    )
    seed.seed(users, portal, config.project_id)
    seed.ensure_service_user(config.zitadel_key_path, config.project_id)
    seed.write_portal_client_file(config.portal_client_path, portal, config.issuer)
    clear_expired()
    logger.info("seeded %d users from %s", len(users), options.users_path)


def portal_homes(redirect_uris: Sequence[str]) -> tuple[str, ...]:
    """The home page (``<origin>/``) of each portal a redirect URI belongs to.

    Unless told otherwise, the portal may send the browser back to its home page after logout.
    """
    homes = []
    for uri in redirect_uris:
        parts = urlsplit(uri)
        homes.append(f"{parts.scheme}://{parts.netloc}/")
    return tuple(dict.fromkeys(homes))
