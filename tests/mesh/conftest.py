"""Fixtures of the mesh's tests: the session world's management cluster wired into this process, and
mesh settings of the test's own (a Secret name and a range unique to it), its peers removed after it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.test import override_settings

from orchestrator.services import mesh
from orchestrator.sources.kube import KubeSource
from tests.orchestrator.services.conftest import make_context, wired

__all__ = ["make_context", "meshed", "wired"]


@pytest.fixture
def meshed(wired: KubeSource) -> Iterator[KubeSource]:
    """A mesh of 10.<n>.0.0/24 with a hub key Secret of its own; every peer and that Secret go afterwards."""
    secret = f"mesh-hub-{uuid.uuid4().hex[:8]}"
    with override_settings(
        FLEXPLANE_MESH_RANGE="10.77.0.0/24",
        FLEXPLANE_MESH_HUB_ENDPOINT="10.78.0.1:51820",
        FLEXPLANE_MESH_HUB_SECRET=secret,
    ):
        try:
            yield wired
        finally:
            for peer in mesh.peers(wired):
                mesh.drop(peer, wired)
            entry = wired.get_secret(secret)
            if entry is not None:
                wired.delete_secret(entry)
