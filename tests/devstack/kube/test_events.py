"""Events, as the audit trail writes and reads them (events.k8s.io/v1), and as core/v1 has them.

The emulator keeps the two APIs' Events apart: a real API server serves one store under both (an
Event written through one is listed, converted, through the other), which nothing of flex.plane
relies on: the orchestrator writes and reads events.k8s.io/v1 only.
"""

from __future__ import annotations

import datetime

from kubernetes import client
from kubernetes.client import ApiClient

from tests.devstack.kube.support import NAMESPACE, meta, names


def event(name: str, vdc: str) -> client.EventsV1Event:
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(
            name=name,
            labels={"flexplane.io/audit": "true", "flexplane.io/vdc": vdc},
            annotations={"flexplane.io/record": '{"operation": "createSnapshot"}'},
        ),
        event_time=datetime.datetime.now(datetime.UTC),
        reporting_controller="flexplane.io/orchestrator",
        reporting_instance="orchestrator-0",
        action="createSnapshot",
        reason="Succeeded",
        type="Normal",
        note="alice createSnapshot vm zone-a/100: succeeded",
    )


def test_an_events_v1_event_is_created_and_listed_by_its_labels_with_its_annotations(api: ApiClient) -> None:
    events = client.EventsV1Api(api)
    _, status, _ = events.create_namespaced_event_with_http_info(NAMESPACE, event("fp-audit.1", "demo"))
    events.create_namespaced_event(NAMESPACE, event("fp-audit.2", "other"))
    assert status == 201

    demo = events.list_namespaced_event(
        NAMESPACE, label_selector="flexplane.io/audit=true,flexplane.io/vdc=demo"
    )

    assert names(demo.items) == ["fp-audit.1"]
    (only,) = demo.items
    assert meta(only).annotations == {"flexplane.io/record": '{"operation": "createSnapshot"}'}
    assert only.event_time is not None
    assert (only.reason, only.action, only.type) == ("Succeeded", "createSnapshot", "Normal")


def test_a_core_v1_event_is_created_and_listed(core: client.CoreV1Api) -> None:
    body = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="node-ready.1"),
        involved_object=client.V1ObjectReference(kind="Namespace", name=NAMESPACE),
        reason="Ready",
        message="ready",
        type="Normal",
    )
    _, status, _ = core.create_namespaced_event_with_http_info(NAMESPACE, body)

    assert status == 201
    assert names(core.list_namespaced_event(NAMESPACE).items) == ["node-ready.1"]
