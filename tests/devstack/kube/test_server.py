"""The server: /version and the health checks, starting and stopping, its kubeconfig, and what tests reach
through it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import requests
from kubernetes import client, config, watch
from kubernetes.client import ApiClient, ApiException

from devstack.kube import ClusterEmulator, KubeServer
from tests.devstack.kube.support import (
    NAMESPACE,
    config_map,
)


def test_it_answers_a_version_document(api: ApiClient) -> None:
    version = client.VersionApi(api).get_code()

    assert version.major == "1"
    assert version.git_version.startswith("v1.")


@pytest.mark.parametrize("path", ["/readyz", "/livez", "/healthz"])
def test_it_answers_its_health_checks_ok_as_an_api_server_does(kube: KubeServer, path: str) -> None:
    answer = requests.get(f"{kube.url}{path}", timeout=5)

    assert (answer.status_code, answer.text) == (200, "ok")


def test_it_starts_on_a_free_port_and_stops_leaving_no_thread() -> None:
    threads_before = set(threading.enumerate())
    started = time.monotonic()

    server = KubeServer.start(host="127.0.0.1", port=0)
    port = int(server.url.rsplit(":", 1)[1])
    server.stop()

    assert port > 0
    assert time.monotonic() - started < 2
    # Only the threads this server started, by their name: other threads of a shared test process (the
    # world's zone fan-out pool) come and go meanwhile.
    left = [t for t in threading.enumerate() if t not in threads_before and t.name == "kube-emulator"]
    assert left == []


def test_servers_stop_in_any_order() -> None:
    first, second = KubeServer.start(), KubeServer.start()

    first.stop()
    second.stop()

    assert first.url != second.url


def test_it_refuses_to_serve_beyond_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        KubeServer.start(host="0.0.0.0")  # noqa: S104 - the address under test, never bound


def test_the_kubeconfig_is_readable_by_its_owner_only(kube: KubeServer, tmp_path: Path) -> None:
    path = kube.write_kubeconfig(tmp_path / "nested" / "kubeconfig")

    assert path.stat().st_mode & 0o777 == 0o600
    assert kube.url in path.read_text()


def test_stopping_the_server_ends_open_watches(kube: KubeServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    events = watch.Watch().stream(core.list_namespaced_config_map, NAMESPACE, timeout_seconds=60)
    assert next(events)["type"] == "ADDED"
    started = time.monotonic()

    kube.stop()
    rest = list(events)

    assert rest == []
    assert time.monotonic() - started < 2


def test_the_emulator_exposes_stored_objects_to_tests(kube: KubeServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", data={"zone": "zone-b"}))

    stored = kube.emulator.objects["v1/configmaps", NAMESPACE, "catalog"]

    assert stored["data"] == {"zone": "zone-b"}


def test_a_fault_added_as_a_kmock_reaction_answers_first(kube: KubeServer, core: client.CoreV1Api) -> None:
    kube.emulator["list v1/configmaps"] << 503

    with pytest.raises(ApiException) as raised:
        core.list_namespaced_config_map(NAMESPACE)

    assert raised.value.status == 503


def test_a_kmock_reaction_sees_namespace_requests_as_namespace_actions(
    kube: KubeServer, core: client.CoreV1Api
) -> None:
    kube.emulator["list v1/namespaces"] << 503

    with pytest.raises(ApiException) as raised:
        core.list_namespace()

    assert raised.value.status == 503
    assert core.read_namespace("default").metadata is not None


def test_the_request_log_keeps_the_latest_requests_with_ids_that_keep_rising(tmp_path: Path) -> None:
    with KubeServer.start(emulator=ClusterEmulator(request_log_limit=3)) as kube:
        api_client = config.new_client_from_config(
            config_file=str(kube.write_kubeconfig(tmp_path / "config"))
        )
        core = client.CoreV1Api(api_client)
        for _ in range(5):
            core.list_namespaced_config_map(NAMESPACE)
        api_client.close()

        ids = [request.id for request in list(kube.emulator)]

    assert ids == [2, 3, 4]
