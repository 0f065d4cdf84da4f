"""Watches: events with their namespace, timeouts, selectors, and resuming from a resourceVersion."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from devstack.kube import ClusterEmulator, KubeServer
from tests.devstack.kube.support import (
    NAMESPACE,
    config_map,
    labelled,
    list_version,
    meta,
)


def config_map_events(core: client.CoreV1Api, **selection: Any) -> Iterator[dict[str, Any]]:
    """A second's watch of the namespace's config maps (``selection``: resource_version, label_selector)."""
    events: Iterator[dict[str, Any]] = watch.Watch().stream(
        core.list_namespaced_config_map, NAMESPACE, timeout_seconds=1, **selection
    )
    return events


def test_watch_events_carry_the_namespace(core: client.CoreV1Api) -> None:
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    core.patch_namespaced_config_map("catalog", NAMESPACE, {"data": {"zone": "zone-b"}})
    core.delete_namespaced_config_map("catalog", NAMESPACE)

    events = config_map_events(core, resource_version=start)

    assert [(event["type"], event["raw_object"]["metadata"]["namespace"]) for event in events] == [
        ("ADDED", NAMESPACE),
        ("MODIFIED", NAMESPACE),
        ("DELETED", NAMESPACE),
    ]


def test_a_watch_streams_writes_made_while_it_is_open(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    watcher = watch.Watch()
    events = watcher.stream(core.list_namespaced_config_map, NAMESPACE, timeout_seconds=10)
    assert next(events)["type"] == "ADDED"  # the watch is open from here on

    core.patch_namespaced_config_map("catalog", NAMESPACE, {"data": {"zone": "zone-b"}})
    modified = next(events)
    watcher.stop()

    assert modified["type"] == "MODIFIED"
    assert modified["object"].data == {"zone": "zone-b"}


def test_a_watch_ends_after_its_timeout(core: client.CoreV1Api) -> None:
    started = time.monotonic()

    events = list(config_map_events(core))

    assert events == []
    assert 0.9 < time.monotonic() - started < 3


def test_a_watch_honours_its_label_selector(core: client.CoreV1Api) -> None:
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    labelled(core)

    events = config_map_events(core, label_selector="team=a", resource_version=start)

    assert [meta(event["object"]).name for event in events] == ["web", "api"]


def test_a_watch_reports_an_object_that_leaves_its_selector_as_deleted(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", labels={"flexplane.io/kind": "zone"}))
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    core.patch_namespaced_config_map(
        "catalog", NAMESPACE, {"metadata": {"labels": {"flexplane.io/kind": "host"}}}
    )

    events = config_map_events(core, label_selector="flexplane.io/kind=zone", resource_version=start)

    assert [(event["type"], meta(event["object"]).name) for event in events] == [("DELETED", "catalog")]


def test_a_watch_from_a_resource_version_sees_only_later_writes(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("earlier"))
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    core.create_namespaced_config_map(NAMESPACE, config_map("later"))

    events = config_map_events(core, resource_version=start)

    assert [(event["type"], meta(event["object"]).name) for event in events] == [("ADDED", "later")]


def test_a_watch_from_a_compacted_resource_version_is_told_it_expired(tmp_path: Path) -> None:
    with KubeServer.start(emulator=ClusterEmulator(event_log_limit=2)) as kube:
        api_client = config.new_client_from_config(
            config_file=str(kube.write_kubeconfig(tmp_path / "config"))
        )
        core = client.CoreV1Api(api_client)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
        start = list_version(core.list_namespaced_config_map(NAMESPACE))
        for name in ("a", "b", "c"):
            core.create_namespaced_config_map(NAMESPACE, config_map(name))

        with pytest.raises(ApiException) as raised:
            list(
                watch.Watch().stream(
                    core.list_namespaced_config_map, NAMESPACE, resource_version=start, timeout_seconds=1
                )
            )
        api_client.close()

    assert raised.value.status == 410
