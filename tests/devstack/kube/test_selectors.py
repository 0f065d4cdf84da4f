"""Label and field selectors on lists."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.devstack.kube.support import (
    NAMESPACE,
    config_map,
    labelled,
    names,
    namespaces_of,
    status_of,
)


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
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="vdc-demo")))
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    core.create_namespaced_config_map("vdc-demo", config_map("catalog"))

    found = core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=vdc-demo")

    assert namespaces_of(found.items) == ["vdc-demo"]


def test_it_rejects_an_unsupported_field_selector(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_config_map(NAMESPACE, field_selector="data.zone=zone-a")

    assert raised.value.status == 400
    assert "field label not supported" in status_of(raised.value)["message"]
