"""Fixtures shared by every suite: the devstack's world, brought up the same way as `make dev`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.net import free_port
from devstack.world import World, WorldConfig
from tests.support import GraphQL

# The promise markers and the end-of-run summary of the suites' figures.
pytest_plugins = ["tests.promises"]

# The tests' world lives on 127.<subnet>.x.y, away from a `make dev` running on 127.10.x.y.
TEST_SUBNET = int(os.environ.get("FLEXPLANE_TEST_SUBNET", "30"))

# Short deadlines, so that the fault tests see a slow zone given up on quickly.
DEADLINES = (("AGENT_TIMEOUT", "1.0"), ("ZONE_DEADLINE", "2.5"))


def world_config(scratch: Path, subnet: int = TEST_SUBNET) -> WorldConfig:
    """The devstack's world as `make dev` brings it up, on ``subnet``, with the tests' short deadlines."""
    host = f"127.{subnet}.0.1"
    return WorldConfig(
        scratch=scratch,
        subnet=subnet,
        orchestrator_host=host,
        orchestrator_port=free_port(host),
        orchestrator_settings=DEADLINES,
    )


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Two fake zones of three nodes, six agents, the Kubernetes emulator, identity, the orchestrator."""
    with World(world_config(Path(tmp_path_factory.mktemp("world")))) as running:
        yield running


@pytest.fixture(scope="session")
def api(world: World) -> GraphQL:
    return GraphQL(world)
