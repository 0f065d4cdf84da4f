"""The management-cluster stand-in, seen as product code sees it: the official client and a kubeconfig."""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import pytest
from kubernetes import client, config, watch
from kubernetes.client import ApiClient, ApiException

from devstack.kube import ClusterEmulator, KubeServer

NAMESPACE = "flexplane"
CAPI = ("cluster.x-k8s.io", "v1beta1")


# ------------------------------------------------------------------------------------- fixtures


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with KubeServer.start() as server:
        yield server


@pytest.fixture
def kubeconfig(kube: KubeServer, tmp_path: Path) -> Path:
    return kube.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api(kubeconfig: Path) -> Iterator[ApiClient]:
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield api_client
    api_client.close()


@pytest.fixture
def core(api: ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def leases(api: ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api)


@pytest.fixture
def custom(api: ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


# -------------------------------------------------------------------------------------- helpers


def config_map(
    name: str = "", *, labels: dict[str, str] | None = None, data: dict[str, str] | None = None, **more: Any
) -> client.V1ConfigMap:
    metadata = client.V1ObjectMeta(name=name or None, labels=labels, **more)
    return client.V1ConfigMap(metadata=metadata, data=data if data is not None else {"zone": "zone-a"})


def lease(name: str, holder: str | None = None, resource_version: str | None = None) -> client.V1Lease:
    metadata = client.V1ObjectMeta(name=name, resource_version=resource_version)
    renewed = datetime.datetime.now(datetime.UTC) if holder else None
    return client.V1Lease(
        metadata=metadata, spec=client.V1LeaseSpec(holder_identity=holder, renew_time=renewed)
    )


def cluster(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "/".join(CAPI), "kind": "Cluster", "metadata": {"name": name}, "spec": spec}


class Described(Protocol):
    """A typed object of the official client: something with object metadata."""

    @property
    def metadata(self) -> client.V1ObjectMeta | None: ...


class Listed(Protocol):
    """A typed list of the official client."""

    @property
    def metadata(self) -> client.V1ListMeta | None: ...


def meta(obj: Described) -> client.V1ObjectMeta:
    assert obj.metadata is not None  # the API server always sends metadata
    return obj.metadata


def version_of(obj: Described) -> str:
    version = meta(obj).resource_version
    assert version is not None
    return version


def list_meta(listing: Listed) -> client.V1ListMeta:
    assert listing.metadata is not None
    return listing.metadata


def list_version(listing: Listed) -> str:
    version = list_meta(listing).resource_version
    assert version is not None
    return version


def holder_of(leases: client.CoordinationV1Api, name: str) -> str | None:
    spec = leases.read_namespaced_lease(name, NAMESPACE).spec
    assert spec is not None
    return spec.holder_identity


def as_dict(obj: object) -> dict[str, Any]:
    """A custom object as the CustomObjectsApi returns it (typed ``object``): a dict."""
    assert isinstance(obj, dict)
    return obj


def status_of(error: ApiException) -> dict[str, Any]:
    assert error.body is not None
    return as_dict(json.loads(error.body))


def names(items: Sequence[Described]) -> list[str]:
    return [str(meta(item).name) for item in items]


def namespaces_of(items: Sequence[Described]) -> list[str]:
    return [str(meta(item).namespace) for item in items]


def labelled(core: client.CoreV1Api) -> Callable[[str], list[str]]:
    """Seed config maps with assorted tier labels; return a lookup of names by label selector."""
    core.create_namespaced_config_map(NAMESPACE, config_map("web", labels={"tier": "web", "team": "a"}))
    core.create_namespaced_config_map(NAMESPACE, config_map("api", labels={"tier": "api", "team": "a"}))
    core.create_namespaced_config_map(NAMESPACE, config_map("db", labels={"tier": "db", "team": "b"}))
    core.create_namespaced_config_map(NAMESPACE, config_map("plain"))
    return lambda selector: names(core.list_namespaced_config_map(NAMESPACE, label_selector=selector).items)


def raw(response: Any) -> dict[str, Any]:
    """The JSON body of a call made with ``_preload_content=False``."""
    return as_dict(json.loads(response.data))


# --------------------------------------------------------------------------- server and version


def test_it_answers_a_version_document(api: ApiClient) -> None:
    version = client.VersionApi(api).get_code()

    assert version.major == "1"
    assert version.git_version.startswith("v1.")


def test_it_starts_on_a_free_port_and_stops_leaving_no_thread() -> None:
    threads_before = set(threading.enumerate())
    started = time.monotonic()

    server = KubeServer.start(host="127.0.0.1", port=0)
    port = int(server.url.rsplit(":", 1)[1])
    server.stop()

    assert port > 0
    assert time.monotonic() - started < 2
    assert set(threading.enumerate()) == threads_before


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


# --------------------------------------------------------------------------- creating and metadata


def test_create_answers_201(core: client.CoreV1Api) -> None:
    _, status, _ = core.create_namespaced_config_map_with_http_info(NAMESPACE, config_map("catalog"))

    assert status == 201


def test_a_created_object_carries_server_metadata(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    assert meta(created).uid
    assert meta(created).resource_version
    assert meta(created).creation_timestamp is not None
    assert meta(created).generation == 1
    assert meta(created).namespace == NAMESPACE


def test_every_write_bumps_the_cluster_wide_resource_version(
    core: client.CoreV1Api, leases: client.CoordinationV1Api
) -> None:
    first = core.create_namespaced_config_map(NAMESPACE, config_map("one"))
    second = leases.create_namespaced_lease(NAMESPACE, lease("quota"))
    patched = core.patch_namespaced_config_map("one", NAMESPACE, {"data": {"zone": "zone-b"}})
    replaced = core.replace_namespaced_config_map(
        "one", NAMESPACE, config_map("one", data={"zone": "zone-c"})
    )

    versions = [int(version_of(obj)) for obj in (first, second, patched, replaced)]

    assert versions == sorted(set(versions))


def test_generate_name_gives_each_object_a_unique_name(core: client.CoreV1Api) -> None:
    created = [
        core.create_namespaced_config_map(NAMESPACE, config_map(generate_name="image-")) for _ in range(3)
    ]

    generated = names(created)
    assert len(set(generated)) == 3
    assert all(name.startswith("image-") and len(name) > len("image-") for name in generated)


def test_a_duplicate_create_answers_already_exists(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    assert raised.value.status == 409
    assert status_of(raised.value)["kind"] == "Status"
    assert status_of(raised.value)["reason"] == "AlreadyExists"


def test_it_rejects_an_object_whose_namespace_differs_from_the_url(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(NAMESPACE, config_map("catalog", namespace="elsewhere"))

    assert raised.value.status == 400
    assert status_of(raised.value)["reason"] == "BadRequest"


def test_a_dry_run_create_stores_nothing(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"), dry_run="All")

    assert core.list_namespaced_config_map(NAMESPACE).items == []


def test_a_secrets_string_data_is_stored_as_base64_data(core: client.CoreV1Api) -> None:
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="platform-ca"), string_data={"tls.key": "KEY"})
    core.create_namespaced_secret(NAMESPACE, secret)

    stored = core.read_namespaced_secret("platform-ca", NAMESPACE)

    assert stored.data == {"tls.key": "S0VZ"}
    assert stored.string_data is None
    assert stored.type == "Opaque"


# -------------------------------------------------------------------------------------- reading


def test_a_list_names_its_kind_and_the_current_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    listing = raw(core.list_namespaced_config_map(NAMESPACE, _preload_content=False))

    assert listing["kind"] == "ConfigMapList"
    assert listing["apiVersion"] == "v1"
    assert listing["metadata"]["resourceVersion"] == version_of(created)


def test_it_pages_a_list_with_limit_and_continue(core: client.CoreV1Api) -> None:
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map(NAMESPACE, config_map(name))

    first = core.list_namespaced_config_map(NAMESPACE, limit=2)
    rest = core.list_namespaced_config_map(NAMESPACE, limit=2, _continue=list_meta(first).var_continue)

    assert names(first.items) == ["a", "b"]
    assert list_meta(first).remaining_item_count == 1
    assert names(rest.items) == ["c"]
    assert list_meta(rest).var_continue is None


def test_reading_a_missing_object_answers_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_config_map("absent", NAMESPACE)

    assert raised.value.status == 404
    assert status_of(raised.value)["reason"] == "NotFound"


# ------------------------------------------------------------------------------------ selectors


def test_it_filters_config_maps_by_label(core: client.CoreV1Api) -> None:
    select = labelled(core)

    assert select("tier=web") == ["web"]
    assert select("tier==api") == ["api"]


def test_it_filters_by_label_inequality(core: client.CoreV1Api) -> None:
    select = labelled(core)

    assert select("tier!=web") == ["api", "db", "plain"]


def test_it_filters_by_label_existence_and_absence(core: client.CoreV1Api) -> None:
    select = labelled(core)

    assert select("tier") == ["api", "db", "web"]
    assert select("!tier") == ["plain"]


def test_it_filters_by_set_based_label_selectors(core: client.CoreV1Api) -> None:
    select = labelled(core)

    assert select("tier in (web, api)") == ["api", "web"]
    assert select("tier notin (web,api)") == ["db", "plain"]


def test_comma_separated_label_requirements_must_all_match(core: client.CoreV1Api) -> None:
    select = labelled(core)

    assert select("team=a,tier!=web") == ["api"]
    assert select("tier in (web,db),team notin (b)") == ["web"]


def test_it_rejects_a_malformed_label_selector(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_config_map(NAMESPACE, label_selector="tier in (web")

    assert raised.value.status == 400
    assert status_of(raised.value)["reason"] == "BadRequest"


def test_it_filters_by_field_selector_on_the_name(core: client.CoreV1Api) -> None:
    for name in ("zone-a", "zone-b"):
        core.create_namespaced_config_map(NAMESPACE, config_map(name))

    chosen = core.list_namespaced_config_map(NAMESPACE, field_selector="metadata.name=zone-b")
    others = core.list_namespaced_config_map(NAMESPACE, field_selector="metadata.name!=zone-b")

    assert names(chosen.items) == ["zone-b"]
    assert names(others.items) == ["zone-a"]


def test_it_filters_by_field_selector_on_the_namespace(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    core.create_namespaced_config_map("vdc-demo", config_map("catalog"))

    found = core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=vdc-demo")

    assert namespaces_of(found.items) == ["vdc-demo"]


def test_it_rejects_an_unsupported_field_selector(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_config_map(NAMESPACE, field_selector="data.zone=zone-a")

    assert raised.value.status == 400
    assert "field label not supported" in status_of(raised.value)["message"]


# --------------------------------------------------------------------------------- updating


def test_replace_swaps_the_whole_object(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", data={"old": "1", "kept": "1"}))

    replaced = core.replace_namespaced_config_map(
        "catalog", NAMESPACE, config_map("catalog", data={"kept": "2"})
    )

    assert replaced.data == {"kept": "2"}
    assert core.read_namespaced_config_map("catalog", NAMESPACE).data == {"kept": "2"}


def test_replacing_a_missing_object_answers_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_config_map("absent", NAMESPACE, config_map("absent"))

    assert raised.value.status == 404
    assert status_of(raised.value)["reason"] == "NotFound"


def test_a_stale_lease_update_conflicts(leases: client.CoordinationV1Api) -> None:
    created = leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    stale = version_of(created)
    leases.replace_namespaced_lease("quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-a", stale))

    with pytest.raises(ApiException) as raised:
        leases.replace_namespaced_lease(
            "quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-b", stale)
        )

    assert raised.value.status == 409
    assert status_of(raised.value)["kind"] == "Status"
    assert status_of(raised.value)["reason"] == "Conflict"
    assert holder_of(leases, "quota-vdc-demo") == "replica-a"


def test_a_stale_config_map_patch_conflicts(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    core.patch_namespaced_config_map("catalog", NAMESPACE, {"data": {"zone": "zone-b"}})
    stale_patch = {
        "metadata": {"resourceVersion": version_of(created)},
        "data": {"zone": "zone-c"},
    }

    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_config_map("catalog", NAMESPACE, stale_patch)

    assert raised.value.status == 409
    assert status_of(raised.value)["reason"] == "Conflict"


def test_an_update_without_a_resource_version_is_unconditional(leases: client.CoordinationV1Api) -> None:
    leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    leases.replace_namespaced_lease("quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-a"))

    replaced = leases.replace_namespaced_lease(
        "quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-b")
    )

    assert replaced.spec is not None
    assert replaced.spec.holder_identity == "replica-b"


def test_two_concurrent_updates_of_one_lease_version_let_exactly_one_win(
    leases: client.CoordinationV1Api, kubeconfig: Path
) -> None:
    """The quota lock: two replicas read the same Lease and race to take (or renew) it; one must lose.

    Each take sets renewTime: as on a real cluster, a write that changes nothing is no write, and
    would let a second writer of the same resourceVersion through.
    """
    replicas = ["replica-a", "replica-b"]
    clients = {name: config.new_client_from_config(config_file=str(kubeconfig)) for name in replicas}
    barrier = threading.Barrier(len(replicas))

    def take(name: str, version: str) -> str | int:
        replica = client.CoordinationV1Api(clients[name])
        barrier.wait()
        try:
            replica.replace_namespaced_lease(
                "quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", name, version)
            )
        except ApiException as error:
            return int(error.status)
        return name

    leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    with ThreadPoolExecutor(len(replicas)) as pool:
        for _ in range(10):
            version = version_of(leases.read_namespaced_lease("quota-vdc-demo", NAMESPACE))
            outcomes = list(pool.map(take, replicas, [version] * len(replicas)))
            winners = [outcome for outcome in outcomes if outcome in replicas]

            assert sorted(outcomes, key=str) == sorted([409, *winners], key=str)
            assert winners == [holder_of(leases, "quota-vdc-demo")]
    for api_client in clients.values():
        api_client.close()


def test_a_patch_that_changes_nothing_keeps_the_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog", data={"zone": "zone-a"}))

    patched = core.patch_namespaced_config_map("catalog", NAMESPACE, {"data": {"zone": "zone-a"}})

    assert version_of(patched) == version_of(created)


def test_a_json_patch_applies_its_operations(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", data={"zone": "zone-a", "old": "1"}))
    operations: list[dict[str, Any]] = [
        {"op": "replace", "path": "/data/zone", "value": "zone-b"},
        {"op": "remove", "path": "/data/old"},
        {"op": "add", "path": "/metadata/labels", "value": {"flexplane.io/kind": "zone"}},
    ]

    patched = core.patch_namespaced_config_map("catalog", NAMESPACE, operations)

    assert patched.data == {"zone": "zone-b"}
    assert meta(patched).labels == {"flexplane.io/kind": "zone"}


# --------------------------------------------------------------------------------------- deleting


def test_deleting_a_missing_object_answers_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.delete_namespaced_config_map("absent", NAMESPACE)

    assert raised.value.status == 404
    assert status_of(raised.value)["kind"] == "Status"
    assert status_of(raised.value)["reason"] == "NotFound"


def test_a_delete_with_a_stale_precondition_conflicts(leases: client.CoordinationV1Api) -> None:
    created = leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    leases.replace_namespaced_lease("quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-a"))
    stale = client.V1Preconditions(resource_version=version_of(created))

    with pytest.raises(ApiException) as raised:
        leases.delete_namespaced_lease(
            "quota-vdc-demo", NAMESPACE, body=client.V1DeleteOptions(preconditions=stale)
        )

    assert raised.value.status == 409
    assert holder_of(leases, "quota-vdc-demo") == "replica-a"


def test_an_object_with_finalizers_goes_once_they_are_removed(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", finalizers=["flexplane.io/cleanup"]))

    core.delete_namespaced_config_map("catalog", NAMESPACE)
    marked = core.read_namespaced_config_map("catalog", NAMESPACE)
    core.patch_namespaced_config_map("catalog", NAMESPACE, {"metadata": {"finalizers": None}})

    assert meta(marked).deletion_timestamp is not None
    assert core.list_namespaced_config_map(NAMESPACE).items == []


def test_it_deletes_a_collection_by_label(core: client.CoreV1Api) -> None:
    labelled(core)

    core.delete_collection_namespaced_config_map(NAMESPACE, label_selector="team=a")

    assert names(core.list_namespaced_config_map(NAMESPACE).items) == ["db", "plain"]


# ------------------------------------------------------------------------------------- namespaces


def test_it_lists_the_system_namespaces_and_those_in_use(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="explicit")))
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    listed = names(core.list_namespace().items)

    assert listed == sorted(["default", "kube-system", "explicit", NAMESPACE])


def test_a_namespace_reads_as_active_with_its_name_label(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="vdc-demo")))

    namespace = core.read_namespace("vdc-demo")

    assert namespace.status is not None
    assert namespace.status.phase == "Active"
    assert meta(namespace).labels == {"kubernetes.io/metadata.name": "vdc-demo"}


def test_deleting_a_namespace_deletes_its_objects(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("vdc-demo", config_map("catalog"))
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    core.delete_namespace("vdc-demo")

    assert "vdc-demo" not in names(core.list_namespace().items)
    assert namespaces_of(core.list_config_map_for_all_namespaces().items) == [NAMESPACE]


# ------------------------------------------------------------------------------------------ watch


def test_watch_events_carry_the_namespace(core: client.CoreV1Api) -> None:
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    core.patch_namespaced_config_map("catalog", NAMESPACE, {"data": {"zone": "zone-b"}})
    core.delete_namespaced_config_map("catalog", NAMESPACE)

    events = watch.Watch().stream(
        core.list_namespaced_config_map, NAMESPACE, resource_version=start, timeout_seconds=1
    )

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

    events = list(watch.Watch().stream(core.list_namespaced_config_map, NAMESPACE, timeout_seconds=1))

    assert events == []
    assert 0.9 < time.monotonic() - started < 3


def test_a_watch_honours_its_label_selector(core: client.CoreV1Api) -> None:
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    labelled(core)

    events = watch.Watch().stream(
        core.list_namespaced_config_map,
        NAMESPACE,
        label_selector="team=a",
        resource_version=start,
        timeout_seconds=1,
    )

    assert [meta(event["object"]).name for event in events] == ["web", "api"]


def test_a_watch_reports_an_object_that_leaves_its_selector_as_deleted(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", labels={"flexplane.io/kind": "zone"}))
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    core.patch_namespaced_config_map(
        "catalog", NAMESPACE, {"metadata": {"labels": {"flexplane.io/kind": "host"}}}
    )

    events = watch.Watch().stream(
        core.list_namespaced_config_map,
        NAMESPACE,
        label_selector="flexplane.io/kind=zone",
        resource_version=start,
        timeout_seconds=1,
    )

    assert [(event["type"], meta(event["object"]).name) for event in events] == [("DELETED", "catalog")]


def test_a_watch_from_a_resource_version_sees_only_later_writes(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("earlier"))
    start = list_version(core.list_namespaced_config_map(NAMESPACE))
    core.create_namespaced_config_map(NAMESPACE, config_map("later"))

    events = watch.Watch().stream(
        core.list_namespaced_config_map, NAMESPACE, resource_version=start, timeout_seconds=1
    )

    assert [(event["type"], meta(event["object"]).name) for event in events] == [("ADDED", "later")]


def test_a_watch_from_a_compacted_resource_version_is_told_it_expired(tmp_path: Path) -> None:
    with KubeServer.start(emulator=ClusterEmulator(event_log_limit=2)) as kube:
        api_client = config.new_client_from_config(
            config_file=str(kube.write_kubeconfig(tmp_path / "config"))
        )
        core = client.CoreV1Api(api_client)
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


# ---------------------------------------------------------------------------------- custom objects


def test_creating_a_custom_object_returns_it_with_server_metadata(custom: client.CustomObjectsApi) -> None:
    created = as_dict(custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo")))

    assert created["kind"] == "Cluster"
    assert created["metadata"]["namespace"] == NAMESPACE
    assert created["metadata"]["uid"]
    assert created["metadata"]["resourceVersion"]
    assert created["metadata"]["generation"] == 1


def test_custom_objects_are_listed_per_namespace_and_across_the_cluster(
    custom: client.CustomObjectsApi,
) -> None:
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo"))
    custom.create_namespaced_custom_object(*CAPI, "vdc-other", "clusters", cluster("other"))

    mine = as_dict(custom.list_namespaced_custom_object(*CAPI, NAMESPACE, "clusters"))
    everywhere = as_dict(custom.list_cluster_custom_object(*CAPI, "clusters"))

    assert mine["kind"] == "ClusterList"
    assert [item["metadata"]["name"] for item in mine["items"]] == ["demo"]
    assert [item["metadata"]["name"] for item in everywhere["items"]] == ["demo", "other"]


def test_a_custom_object_patch_merges_into_it_and_bumps_the_generation(
    custom: client.CustomObjectsApi,
) -> None:
    custom.create_namespaced_custom_object(
        *CAPI, NAMESPACE, "clusters", cluster("demo", paused=False, zone="a")
    )

    custom.patch_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo", {"spec": {"paused": True}})
    read = as_dict(custom.get_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo"))

    assert read["spec"] == {"paused": True, "zone": "a"}
    assert read["metadata"]["generation"] == 2


def test_a_status_patch_changes_only_the_status(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo", paused=False))

    patched = as_dict(
        custom.patch_namespaced_custom_object_status(
            *CAPI, NAMESPACE, "clusters", "demo", {"spec": {"paused": True}, "status": {"ready": True}}
        )
    )

    assert patched["status"] == {"ready": True}
    assert patched["spec"] == {"paused": False}
    assert patched["metadata"]["generation"] == 1


def test_deleting_a_custom_object_removes_it(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo"))

    custom.delete_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo")

    with pytest.raises(ApiException) as raised:
        custom.get_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo")
    assert raised.value.status == 404


def test_a_strategic_merge_patch_of_a_custom_object_is_unsupported(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo"))

    with pytest.raises(ApiException) as raised:
        custom.patch_namespaced_custom_object(
            *CAPI,
            NAMESPACE,
            "clusters",
            "demo",
            {"spec": {"paused": True}},
            _content_type="application/strategic-merge-patch+json",
        )

    assert raised.value.status == 415
