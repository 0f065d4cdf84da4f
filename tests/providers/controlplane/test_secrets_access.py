"""The providers bind themselves, namespace by namespace, to the roles that grant them Secrets (issue 32,
item 6): in a VDC's namespace and a control plane's, before a Secret is touched there, once. What RBAC and
the chart's fence then allow is evaluated in tests/charts/test_rbac.py; here, what the code makes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devstack.kube import KubeServer
from providers.common import kube as common
from providers.common.access import NO_BINDING, SecretsAccess
from providers.controlplane import steps
from providers.controlplane.kube import Kube

ACCESS = SecretsAccess("providers-vdc", "providers-control-plane", "flexplane/providers")
SETTINGS = steps.Settings(secrets=ACCESS)
SUBJECT = [{"kind": "ServiceAccount", "name": "providers", "namespace": "flexplane"}]


@pytest.fixture
def namespaces(kube: Kube) -> Iterator[list[str]]:
    """A VDC's namespace and a control plane's of the test's own, removed afterwards."""
    made = ["vdc-access", "fpcp-access-k8s"]
    for name in made:
        kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield made
    for name in made:
        kube.delete("v1", "Namespace", name)


def binding(kube: Kube, namespace: str, role: str) -> dict[str, Any] | None:
    return kube.get("rbac.authorization.k8s.io/v1", "RoleBinding", role, namespace)


def test_the_control_plane_step_binds_each_namespace_to_its_role_and_a_second_time_writes_nothing(
    server: KubeServer, kube: Kube, namespaces: list[str]
) -> None:
    vdc, control_plane = namespaces

    for namespace in namespaces:
        steps.ensure_secrets_access(kube, namespace, SETTINGS)
    revision = server.emulator.revision
    for namespace in namespaces:
        steps.ensure_secrets_access(kube, namespace, SETTINGS)

    assert server.emulator.revision == revision
    made = {ns: binding(kube, ns, ACCESS.role_in(ns)) for ns in namespaces}
    assert {ns: (b or {}).get("roleRef", {}).get("name") for ns, b in made.items()} == {
        vdc: "providers-vdc",
        control_plane: "providers-control-plane",
    }
    assert all((b or {}).get("subjects") == SUBJECT for b in made.values())


def test_the_infrastructure_provider_binds_itself_before_it_reads_a_machines_bootstrap_data(
    server: KubeServer, namespaces: list[str]
) -> None:
    vdc = namespaces[0]
    configuration = client.Configuration()
    configuration.host = server.url
    with client.ApiClient(configuration) as api_client:
        management = common.Kube(api_client, timeout=2.0, secrets=ACCESS)
        assert management.secret_value(vdc, "web-1-bootstrap", "value") is None
        revision = server.emulator.revision
        assert management.secret_value(vdc, "web-1-bootstrap", "value") is None
        found = management.rbac.read_namespaced_role_binding("providers-vdc", vdc)

    assert server.emulator.revision == revision
    assert (found.role_ref.kind, found.role_ref.name) == ("ClusterRole", "providers-vdc")


def test_nothing_is_bound_outside_their_namespaces_or_when_no_role_is_named() -> None:
    assert ACCESS.binding("kube-system") is None
    assert ACCESS.binding("flexplane") is None
    assert NO_BINDING.binding("vdc-acme") is None
    with pytest.raises(ValueError, match="FLEXPLANE_SERVICE_ACCOUNT must be <namespace>/<name>"):
        SecretsAccess("providers-vdc", "", "providers")
