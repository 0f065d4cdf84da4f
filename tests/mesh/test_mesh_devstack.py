"""The devstack's word on the mesh: `make dev` runs it as root, and says in its banner, in one line,
that it dials the agents directly on loopback, and why, when it cannot (the mesh world itself is
tests/mesh/test_mesh_world.py's)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from devstack.__main__ import mesh_line
from devstack.meshnet import mesh_possible
from devstack.world import World


def test_without_root_the_devstack_falls_back_to_loopback_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    why = mesh_possible()
    assert why == "not root"
    world = cast(World, SimpleNamespace(mesh=None))
    assert mesh_line(world, why) == "off (not root): the orchestrator dials each agent directly on loopback"


def test_without_wireguards_tools_it_names_the_missing_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("shutil.which", lambda tool: None if tool == "wireguard-go" else f"/usr/bin/{tool}")
    assert mesh_possible() == "wireguard-go not installed (make install)"
