"""Another orchestrator replica beside the world's, with settings of its own, for the tests that need one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from devstack.net import free_port
from devstack.world import World


@contextmanager
def replica(
    world: World, name: str, settings: dict[str, str] | None = None, *, https_port: int | None = None
) -> Iterator[str]:
    """A replica named ``name`` on the world's orchestrator host, with ``settings`` added to its
    environment (HTTPS on ``https_port``, or a free port), stopped when the block ends: its HTTP URL."""
    host = world.cfg.orchestrator_host
    port = free_port(host)
    process = world.spawn_orchestrator(name, port, https_port or free_port(host), settings)
    try:
        yield f"http://{host}:{port}"
    finally:
        process.stop()
