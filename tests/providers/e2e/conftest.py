"""The end-to-end modules' shared fixture: the real providers and the Cluster API stand-ins on the session's
world, started for a module and stopped after it (a module's ``WATCH_FILTER``, if it sets one, is core's
stand-in's ``--watch-filter``: it then sees only that module's objects)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.world import World


@pytest.fixture(scope="module")
def capi(world: World, request: pytest.FixtureRequest) -> Iterator[World]:
    """The providers and the stand-ins running on the session's world, for this module."""
    world.start_cluster_api({"LEADER_TTL": "3"}, watch_filter=getattr(request.module, "WATCH_FILTER", None))
    try:
        yield world
    finally:
        process = world.providers
        world.stop_cluster_api()
    # It ran to the end, and stopped on SIGTERM as it should, every line of its log written.
    assert process is not None
    assert process.popen.returncode == 0, process.output()[-5000:]
    log = (world.cfg.scratch / "logs" / "providers.log").read_text(errors="replace")
    assert "Logging error" not in log, log[log.find("Logging error") - 200 :][:3000]
