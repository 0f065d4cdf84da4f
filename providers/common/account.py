"""flex.plane's API as a tenant cluster's service account (USER of the cluster's VDC only), for the
controllers that run beside its hosted control plane: the cloud controller and the CSI driver's controller.

Their settings, each an option or its variable (``<PREFIX>`` the controller's: ``FLEXPLANE_CLOUD``,
``FLEXPLANE_CSI``):

- ``--url`` / ``FLEXPLANE_URL``: flex.plane's origin (its API is ``/graphql``);
- ``--key`` / ``<PREFIX>_KEY``: the service account's key file (``createServiceAccount``'s ``key``),
  exchanged at ``--identity-url`` / ``FLEXPLANE_IDENTITY_URL`` for tokens of the project ``--project`` /
  ``FLEXPLANE_PROJECT_ID``; or ``--token-file`` / ``<PREFIX>_TOKEN_FILE``, a bearer token read at start
  (development);
- ``--ca`` / ``FLEXPLANE_CA_FILE``: the CA bundle flex.plane's and the identity provider's TLS chains to
  (default: the system's);
- ``--vdc`` / ``<PREFIX>_VDC``: the cluster's VDC, where every call acts.
"""

from __future__ import annotations

import argparse
import os
import ssl
from pathlib import Path
from typing import Any

import httpx

from apiclient import FlexPlane, ServiceAccountKey


def add_arguments(parser: argparse.ArgumentParser, prefix: str) -> None:
    """The account's options, their defaults from the variables (``prefix``: ``FLEXPLANE_CLOUD``, ...)."""
    env = os.environ.get
    parser.add_argument("--url", default=env("FLEXPLANE_URL"))
    parser.add_argument("--key", default=env(f"{prefix}_KEY"))
    parser.add_argument("--identity-url", default=env("FLEXPLANE_IDENTITY_URL"))
    parser.add_argument("--project", default=env("FLEXPLANE_PROJECT_ID"))
    parser.add_argument("--token-file", default=env(f"{prefix}_TOKEN_FILE"))
    parser.add_argument("--ca", default=env("FLEXPLANE_CA_FILE"))
    parser.add_argument("--vdc", default=env(f"{prefix}_VDC"))


def missing(settings: argparse.Namespace) -> list[str]:
    """What the account's settings lack, in words for the parser's error."""
    lacking = [name for name in ("url", "vdc") if not getattr(settings, name)]
    if not settings.token_file and not (settings.key and settings.identity_url and settings.project):
        lacking.append("key, identity-url and project (or token-file)")
    return lacking


def flexplane(settings: argparse.Namespace) -> FlexPlane:
    """The API as the cluster's service account, acting in its VDC."""
    verify: Any = ssl.create_default_context(cafile=settings.ca) if settings.ca else True
    auth: httpx.Auth | str
    if settings.token_file:
        auth = Path(settings.token_file).read_text(encoding="utf-8").strip()
    else:
        auth = ServiceAccountKey.from_file(
            settings.key,
            settings.identity_url,
            settings.project,
            http=httpx.Client(timeout=10, verify=verify),
        )
    return FlexPlane(settings.url, auth, vdc=settings.vdc, verify=verify)
