"""Command line of the development identity provider.

    python -m devstack.identity serve --data-dir DIR --bind 127.0.0.1:PORT \\
        --issuer http://127.0.0.1:PORT/o --project-id flexplane --users USERS.json \\
        [--portal-redirect-uri URI ...] [--portal-post-logout-redirect-uri URI ...] \\
        [--portal-client-secret SECRET]

It prints ``identity listening on <issuer>`` once it accepts requests, and stops cleanly on
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from devstack.identity.config import IdentityConfig, parse_bind
from devstack.identity.process import PORTAL_CLIENT_SECRET_ENV
from devstack.identity.server import ServeOptions, serve


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m devstack.identity",
        description="flex.plane's development OIDC provider, standing in for Zitadel.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="prepare the data directory and serve over HTTP")
    serve.add_argument("--data-dir", type=Path, required=True, help="SQLite file, keys and client file")
    serve.add_argument("--bind", required=True, metavar="HOST:PORT", help="a loopback address to listen on")
    serve.add_argument("--issuer", required=True, help="the issuer URL, e.g. http://127.0.0.1:PORT/o")
    serve.add_argument("--project-id", default="flexplane", help="the Zitadel project id of the roles")
    serve.add_argument("--users", type=Path, required=True, metavar="USERS.json", help="the users to seed")
    serve.add_argument(
        "--portal-redirect-uri",
        action="append",
        default=[],
        metavar="URI",
        help="a redirect URI of the flexplane-portal client (repeatable)",
    )
    serve.add_argument(
        "--portal-post-logout-redirect-uri",
        action="append",
        default=[],
        metavar="URI",
        help="where flexplane-portal may send the browser after logout (repeatable; default: the home "
        "page of each redirect URI's portal)",
    )
    serve.add_argument(
        "--portal-client-secret",
        default=os.environ.get(PORTAL_CLIENT_SECRET_ENV),
        metavar="SECRET",
        help=f"the portal's client secret (default: ${PORTAL_CLIENT_SECRET_ENV}, else the one "
        "recorded in DATA_DIR/portal-client.json, else a new one)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        host, port = parse_bind(arguments.bind)
        config = IdentityConfig(
            data_dir=arguments.data_dir.resolve(),
            issuer=arguments.issuer,
            project_id=arguments.project_id,
            bind_host=host,
        )
        serve(
            ServeOptions(
                config=config,
                port=port,
                users_path=arguments.users,
                portal_redirect_uris=arguments.portal_redirect_uri,
                portal_post_logout_redirect_uris=arguments.portal_post_logout_redirect_uri,
                portal_client_secret=arguments.portal_client_secret,
            )
        )
    # Configuration mistakes (a bad users file is a ValueError) end with one line, not a traceback.
    except (ValueError, OSError, ImproperlyConfigured) as error:
        print(f"identity: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
