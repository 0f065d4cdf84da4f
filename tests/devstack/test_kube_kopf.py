"""A real kopf operator against the devstack's Kubernetes emulator, as the providers run against it.

The operator starts before its CRD exists (it finds the resource through discovery once the CRD is
created, by watching CRDs), watches the namespaced resource across namespaces, patches status,
posts Events, and runs the delete handler through its finalizer. The scale subresource is driven
with the official client, as Cluster API core scales a control plane.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import kmock
import kopf
import pytest
from kubernetes import client, config
from kubernetes.client import ApiException

from devstack.kube import KubeServer
from devstack.kube.crds import CRDS, ScalePaths, custom_resource_definition
from tests.apikit import eventually

GROUP, VERSION, PLURAL = "widgets.flexplane.io", "v1alpha1", "widgets"
NAMESPACE = "vdc-demo"
CRD = custom_resource_definition(
    GROUP,
    "Widget",
    PLURAL,
    versions=(VERSION,),
    scale=ScalePaths(".spec.replicas", ".status.replicas", ".status.selector"),
)
TIMEOUT = 10.0


class Operator:
    """A kopf operator in a thread of its own with its own event loop; what its handlers saw."""

    def __init__(self, kube: KubeServer) -> None:
        self.kube = kube
        self.calls: list[tuple[str, str, Any]] = []
        self.registry = kopf.OperatorRegistry()
        self.stop_flag = threading.Event()
        self.ready_flag = threading.Event()
        self._register()
        self.thread = threading.Thread(target=self._run, name="kopf-operator", daemon=True)

    def _register(self) -> None:
        registry, calls, url = self.registry, self.calls, self.kube.url

        @kopf.on.login(registry=registry)
        def login(**_: Any) -> kopf.ConnectionInfo:
            return kopf.ConnectionInfo(server=url, default_namespace="default")

        @kopf.on.startup(registry=registry)
        def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
            settings.peering.standalone = True
            settings.posting.level = logging.INFO
            settings.watching.reconnect_backoff = 0.1
            settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
            settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
            settings.persistence.finalizer = f"{GROUP}/finalizer"

        @kopf.on.create(GROUP, VERSION, PLURAL, registry=registry)
        def created(name: str, body: kopf.Body, spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
            calls.append(("create", name, spec.get("size")))
            kopf.info(body, reason="Created", message=f"widget {name} is ready")
            patch.status["phase"] = "Ready"
            patch.status["replicas"] = spec.get("replicas", 0)
            patch.status["selector"] = f"widget={name}"

        @kopf.on.update(GROUP, VERSION, PLURAL, registry=registry)
        def updated(name: str, spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
            calls.append(("update", name, spec.get("size")))
            patch.status["replicas"] = spec.get("replicas", 0)

        @kopf.on.delete(GROUP, VERSION, PLURAL, registry=registry)
        def deleted(name: str, **_: Any) -> None:
            calls.append(("delete", name, None))

    def _run(self) -> None:
        asyncio.run(
            kopf.operator(
                registry=self.registry,
                clusterwide=True,
                standalone=True,
                stop_flag=self.stop_flag,
                ready_flag=self.ready_flag,
            )
        )

    def start(self) -> None:
        self.thread.start()
        assert self.ready_flag.wait(TIMEOUT), "the operator did not start"

    def stop(self) -> None:
        self.stop_flag.set()
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive(), "the operator did not stop"

    def handled(self, action: str, name: str) -> list[Any]:
        return [seen for did, who, seen in self.calls if (did, who) == (action, name)]


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeServer]:
    with KubeServer.start() as server:
        yield server


@pytest.fixture(scope="module")
def operator(kube: KubeServer) -> Iterator[Operator]:
    running = Operator(kube)
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def api(
    kube: KubeServer, operator: Operator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[client.ApiClient]:
    """The official client; the CRD is created once the operator runs, as a chart upgrade would."""
    # kopf scans discovery, then watches CRDs from a listing whose CRDs it takes as scanned: one made
    # between the two it never notices (a real cluster has the same window). A chart upgrade comes long
    # after the operator's start; here the CRD is made once that watch is open.
    eventually(
        lambda: any(r.resource == CRDS and r.action == kmock.action.WATCH for r in kube.emulator),
        TIMEOUT,
        "kopf's watch of CRDs",
    )
    kubeconfig = kube.write_kubeconfig(Path(tmp_path_factory.mktemp("kopf")) / "kubeconfig")
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    client.CoreV1Api(api_client).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
    )
    client.ApiextensionsV1Api(api_client).create_custom_resource_definition(
        cast(client.V1CustomResourceDefinition, CRD)  # the typed client sends a dict as it is
    )
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def read(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    found = custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    assert isinstance(found, dict)
    return found


def test_a_created_object_is_handled_and_its_status_patched(
    operator: Operator, custom: client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, widget("alpha", size=1, replicas=2)
    )

    eventually(
        lambda: read(custom, "alpha").get("status", {}).get("phase") == "Ready", TIMEOUT, "the status patch"
    )

    stored = read(custom, "alpha")
    assert operator.handled("create", "alpha") == [1]
    assert f"{GROUP}/finalizer" in stored["metadata"]["finalizers"]
    assert stored["status"]["replicas"] == 2


def test_the_operator_posts_events_about_the_object(operator: Operator, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)

    def about_alpha() -> list[client.CoreV1Event]:
        events = core.list_namespaced_event(NAMESPACE).items
        return [event for event in events if event.involved_object.name == "alpha"]

    events = eventually(about_alpha, TIMEOUT, "an event about the widget")

    assert events[0].involved_object.kind == "Widget"
    assert events[0].reason == "Created"


def test_a_spec_change_runs_the_update_handler(operator: Operator, custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, widget("beta", size=1))
    eventually(lambda: operator.handled("create", "beta"), TIMEOUT, "the create handler")

    custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "beta", {"spec": {"size": 3}})

    assert eventually(lambda: operator.handled("update", "beta"), TIMEOUT, "the update handler") == [3]


def test_scaling_through_the_scale_subresource_reaches_the_handler_and_reads_back(
    operator: Operator, custom: client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, widget("gamma", replicas=1))
    eventually(lambda: read(custom, "gamma").get("status", {}).get("phase"), TIMEOUT, "the create handler")

    custom.patch_namespaced_custom_object_scale(
        GROUP, VERSION, NAMESPACE, PLURAL, "gamma", {"spec": {"replicas": 4}}
    )

    def scale() -> dict[str, Any]:
        found = custom.get_namespaced_custom_object_scale(GROUP, VERSION, NAMESPACE, PLURAL, "gamma")
        assert isinstance(found, dict)
        return found

    eventually(lambda: scale()["status"]["replicas"] == 4, TIMEOUT, "the handler's status.replicas")
    assert read(custom, "gamma")["spec"]["replicas"] == 4
    assert scale()["spec"] == {"replicas": 4}
    assert scale()["status"]["selector"] == "widget=gamma"


def test_a_deleted_object_runs_the_delete_handler_and_goes_once_its_finalizer_is_removed(
    operator: Operator, custom: client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, widget("delta"))
    eventually(lambda: read(custom, "delta").get("metadata", {}).get("finalizers"), TIMEOUT, "the finalizer")

    custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "delta")

    def gone() -> bool:
        try:
            read(custom, "delta")
        except ApiException as error:
            return error.status == 404
        return False

    eventually(gone, TIMEOUT, "the object's removal")
    assert operator.handled("delete", "delta") == [None]
