"""Fixtures shared by every suite: the devstack's world, brought up the same way as `make dev`."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.test import override_settings

from agent.proxy import refusals
from devstack.net import free_port
from devstack.world import World, WorldConfig
from tests import addresses, secretscan
from tests.alone import ALONE
from tests.apikit import GraphQL

# The promise markers and the end-of-run summary of the suites' figures; the parallel run's order; the
# share of the run's time the whole devstack costs.
pytest_plugins = ["tests.promises", "tests.schedule", "tests.worldshare"]

# Short deadlines, so that the fault tests see a slow zone given up on quickly.
DEADLINES = (("AGENT_TIMEOUT", "1.0"), ("ZONE_DEADLINE", "2.5"))


def world_config(scratch: Path, subnet: int = addresses.WORLD) -> WorldConfig:
    """The devstack's world as `make dev` brings it up, on ``subnet`` (by default the xdist worker's, away
    from a `make dev` on 127.10.x.y), with the tests' short deadlines."""
    host = addresses.address(0, 1, subnet)
    return WorldConfig(
        scratch=scratch,
        subnet=subnet,
        orchestrator_host=host,
        orchestrator_port=free_port(host),
        orchestrator_settings=DEADLINES,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a coroutine test on an event loop of its own, in a thread of its own: the browser tests keep
    Playwright's loop running in the worker's main thread for the whole session (pytest-playwright's
    session fixture), where no other loop may run."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="async-test") as pool:
        pool.submit(asyncio.run, pyfuncitem.obj(**arguments)).result()
    return True


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("::")[0] in ALONE:
            item.add_marker(pytest.mark.alone)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--timing-full",
        action="store_true",
        default=False,
        help="timing probes (tests/security/test_isolation*.py) take all their rounds, as make test-full "
        "does; by default one, and all only when one is out of bounds",
    )


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Two fake zones of three nodes, six agents, the Kubernetes emulator, identity, the orchestrator.

    While it runs, this process signs with the world's secret key (session cookies, task ids), as its
    orchestrator does."""
    with (
        World(world_config(Path(tmp_path_factory.mktemp("world")))) as running,
        override_settings(SECRET_KEY=running.secret_key),
    ):
        yield running
        held = secretscan.world_secrets(running)  # read while the world runs; its logs outlive it
    # The world's agents run the proxy's real check: any call of the orchestrator's they refused during
    # the run means the orchestrator and the declarations (agent/proxy/routes.py) have drifted apart.
    logs = sorted((running.cfg.scratch / "logs").glob("agent-*.log"))
    if refused := [line for log in logs for line in refusals(log.read_text(errors="replace").splitlines())]:
        pytest.fail("the world's agents refused calls of the orchestrator:\n" + "\n".join(refused[:20]))
    # No secret of the run in any line its processes logged (tests/secretscan.py), whatever the suites did.
    if leaked := secretscan.leaks(running, held):
        pytest.fail("secrets in the world's logs:\n" + "\n".join(leaked[:20]))


@pytest.fixture(scope="session")
def api(world: World) -> GraphQL:
    return GraphQL(world)
