"""Fixtures of the mesh's tests: the session world's management cluster wired into this process (for the
tests that enroll nodes of the world), and a mesh of its own in an in-memory management cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from tests.orchestrator.fakekube import FakeKube
from tests.orchestrator.services.conftest import make_context, wired

__all__ = ["make_context", "meshed", "wired"]


@pytest.fixture
def meshed() -> Iterator[FakeKube]:
    """A mesh of 10.77.0.0/24 whose state lives in a management cluster in memory (its own every test)."""
    with override_settings(
        FLEXPLANE_MESH_RANGE="10.77.0.0/24",
        FLEXPLANE_MESH_HUB_ENDPOINT="10.78.0.1:51820",
        FLEXPLANE_MESH_HUB_SECRET="mesh-hub",
    ):
        yield FakeKube()
