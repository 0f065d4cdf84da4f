"""/healthz and /readyz, and what the API does when the management cluster or identity is gone."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import requests
import yaml

from devstack.net import free_port
from devstack.world import World
from tests.apikit import GraphQL
from tests.releasekit import Proxy


def test_healthz_answers_while_the_process_lives(world: World) -> None:
    response = requests.get(f"{world.url}/healthz", timeout=5)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_answers_ready_when_cluster_and_identity_answer(world: World) -> None:
    response = requests.get(f"{world.url}/readyz", timeout=10)
    assert response.status_code == 200, response.text
    assert response.json()["checks"]["management-cluster"]["ok"] is True
    assert response.json()["checks"]["identity"]["ok"] is True


@contextmanager
def replica(world: World, name: str, env: dict[str, str]) -> Iterator[str]:
    """The URL of an orchestrator replica beside the world's, with ``env`` over the world's settings."""
    host = world.cfg.orchestrator_host
    port = free_port(host)
    process = world.spawn_orchestrator(name, port, free_port(host), env)
    try:
        yield f"http://{host}:{port}"
    finally:
        process.stop()


@contextmanager
def cuttable_kube(world: World, scratch: Path) -> Iterator[tuple[Path, Callable[[], None]]]:
    """A kubeconfig naming the world's management cluster through a relay, and the cut that stops the relay:
    the cluster gone (connections reset, new ones refused) for the replica that uses this kubeconfig only."""
    assert world.kubeconfig is not None
    config = yaml.safe_load(world.kubeconfig.read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    assert server.hostname is not None
    assert server.port is not None
    relay = Proxy(server.hostname, (server.hostname, server.port)).start()
    config["clusters"][0]["cluster"]["server"] = f"{server.scheme}://{relay.address}"
    kubeconfig = scratch / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    cut: list[bool] = []

    def cut_once() -> None:
        if not cut:
            cut.append(True)
            relay.stop()

    try:
        yield kubeconfig, cut_once
    finally:
        cut_once()


def test_without_the_management_cluster_readyz_says_which_and_graphql_answers_typed_errors(
    world: World, tmp_path: Path
) -> None:
    api = GraphQL(world)
    token = api.token("admin")
    with (
        cuttable_kube(world, tmp_path) as (kubeconfig, cut_kube),
        replica(world, "orchestrator-losing-kube", {"FLEXPLANE_KUBECONFIG": str(kubeconfig)}) as url,
    ):
        api.url = f"{url}/graphql"
        assert api.raw("{ zones { id } }", headers={"Authorization": f"Bearer {token}"}).errors == []
        cut_kube()  # the management cluster goes

        response = requests.get(f"{url}/readyz", timeout=15)
        assert response.status_code == 503
        checks = response.json()["checks"]
        assert checks["management-cluster"]["ok"] is False
        assert checks["identity"]["ok"] is True

        started = time.monotonic()
        answer = api.raw("{ zones { id } }", headers={"Authorization": f"Bearer {token}"})
        assert time.monotonic() - started < 10
        assert answer.codes == ["UNAVAILABLE"]
        assert "management cluster" in answer.errors[0]["message"]


def test_without_identity_readyz_says_so(world: World) -> None:
    host = world.cfg.orchestrator_host
    nobody = f"http://{host}:{free_port(host)}"  # no identity provider answers there
    with replica(world, "orchestrator-without-identity", {"FLEXPLANE_OIDC_ISSUER": nobody}) as url:
        response = requests.get(f"{url}/readyz", timeout=15)
    assert response.status_code == 503
    assert response.json()["checks"]["identity"]["ok"] is False
    assert response.json()["checks"]["management-cluster"]["ok"] is True
