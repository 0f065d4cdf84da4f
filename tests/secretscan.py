"""Secrets in logs: what a world's processes logged, searched for every secret the run handed them.

Used at the end of every session (``tests/conftest.py``'s world, over everything the run did) and by
``tests/security/test_secrets_in_logs.py`` (with what that suite sends besides). A secret is looked for
verbatim in every line of the orchestrators', agents' and bootstraps' logs; any bearer token at all
(a JWT: the identity provider's access and ID tokens, forged ones) is looked for by its shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from devstack.world import World

# Three base64url parts, the first two JSON objects: a JWT, whoever made it.
JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
LOGS = ("orchestrator", "agent", "bootstrap")


def world_secrets(world: World) -> dict[str, str]:
    """The secrets the world itself holds: the secret key, the portal's OIDC client secret, the
    Proxmox API token secrets of the agents, the release registry's passwords."""
    found = {"the secret key": world.secret_key}
    found["the portal's OIDC client secret"] = world.identity.portal_client.client_secret
    for zone, fake in world.fakes.zones.items():
        tokens = world.fakes.on_loop(lambda fake=fake: dict(fake.pve.apitokens))
        for token_id, secret in tokens.items():
            found[f"Proxmox API token {token_id} of {zone}"] = str(secret)
    if world.registry is not None:  # the release registry's accounts (the nodes' one is on every node)
        for account, password in world.registry.passwords.items():
            found[f"the release registry's {account} password"] = password
    return found


def logged_lines(world: World) -> list[tuple[str, str]]:
    """(file, line) of every log of the world's orchestrators, agents and bootstraps."""
    logs = Path(world.cfg.scratch) / "logs"
    return [
        (path.name, line)
        for path in sorted(logs.glob("*.log"))
        if path.name.startswith(LOGS)
        for line in path.read_text(errors="replace").splitlines()
    ]


def leaks(world: World, secrets: Mapping[str, str]) -> list[str]:
    """Each line that holds one of ``secrets`` (what -> secret; :func:`world_secrets` and more), or any
    JWT, saying which. The logs stay when the world stops: this may run after it did."""
    found = []
    for name, line in logged_lines(world):
        for what, secret in secrets.items():
            if secret and secret in line:
                found.append(f"{what} in {name}: {line[:200]}")
        if JWT.search(line):
            found.append(f"a bearer token (JWT) in {name}: {JWT.sub('<jwt>', line)[:200]}")
    return found
