"""/healthz and /readyz, and what the API does when the management cluster or identity is gone."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from devstack.world import World
from tests import addresses
from tests.apikit import GraphQL
from tests.conftest import world_config


def test_healthz_answers_while_the_process_lives(world: World) -> None:
    response = requests.get(f"{world.url}/healthz", timeout=5)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_answers_ready_when_cluster_and_identity_answer(world: World) -> None:
    response = requests.get(f"{world.url}/readyz", timeout=10)
    assert response.status_code == 200, response.text
    assert response.json()["checks"]["management-cluster"]["ok"] is True
    assert response.json()["checks"]["identity"]["ok"] is True


@pytest.fixture(scope="module")
def fragile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A small world of its own, whose neighbours these tests stop."""
    tests_world = world_config(Path(tmp_path_factory.mktemp("fragile")), addresses.FRAGILE)
    cfg = dataclasses.replace(tests_world, zones=("zone-a",), nodes_per_zone=1)
    with World(cfg) as running:
        yield running


def test_without_the_management_cluster_readyz_says_which_and_graphql_answers_typed_errors(
    fragile: World,
) -> None:
    api = GraphQL(fragile)
    token = api.token("admin")  # before the cluster goes: identity is still up
    fragile.stop_kube()

    response = requests.get(f"{fragile.url}/readyz", timeout=15)
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["management-cluster"]["ok"] is False
    assert checks["identity"]["ok"] is True

    started = time.monotonic()
    answer = api.raw("{ zones { id } }", headers={"Authorization": f"Bearer {token}"})
    assert time.monotonic() - started < 10
    assert answer.codes == ["UNAVAILABLE"]
    assert "management cluster" in answer.errors[0]["message"]


def test_without_identity_readyz_says_so(fragile: World) -> None:
    fragile.stop_identity()
    response = requests.get(f"{fragile.url}/readyz", timeout=15)
    assert response.status_code == 503
    assert response.json()["checks"]["identity"]["ok"] is False
