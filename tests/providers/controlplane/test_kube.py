"""The provider's small client: REST paths of its kinds, when an object already holds a manifest, and a
kind the server does not serve."""

from __future__ import annotations

import pytest

from providers.controlplane.kube import Kube, KubeError, holds, path_of


def test_paths_follow_the_core_group_named_groups_and_scope() -> None:
    assert path_of("v1", "Secret", "pki", "fpcp-demo-web") == "/api/v1/namespaces/fpcp-demo-web/secrets/pki"
    assert path_of("v1", "Namespace", "fpcp-demo-web") == "/api/v1/namespaces/fpcp-demo-web"
    assert path_of("apps/v1", "Deployment", None, "ns") == "/apis/apps/v1/namespaces/ns/deployments"
    assert (
        path_of("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "flexplane:vdc-admins")
        == "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/flexplane:vdc-admins"
    )


def test_a_namespaced_kind_without_a_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match="namespace"):
        path_of("v1", "Secret", "pki")


def test_an_object_holds_a_manifest_whatever_the_server_added() -> None:
    current = {
        "metadata": {"name": "a", "uid": "u", "labels": {"x": "1", "y": "2"}},
        "spec": {"ports": [{"name": "https", "port": 6443, "nodePort": 31443}], "clusterIP": "10.96.0.9"},
    }
    assert holds(
        current, {"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"ports": [{"port": 6443}]}}
    )


def test_an_object_does_not_hold_a_manifest_that_changes_a_value_or_a_lists_length() -> None:
    current = {"spec": {"replicas": 2, "args": ["--a", "--b"]}}
    assert not holds(current, {"spec": {"replicas": 3}})
    assert not holds(current, {"spec": {"args": ["--a"]}})
    assert not holds(current, {"spec": {"missing": None}})


def test_making_an_object_of_a_kind_the_server_does_not_serve_is_a_404(kube: Kube) -> None:
    """As a ServiceMonitor where the Prometheus Operator's CRDs are not installed: a KubeError the caller can
    tell apart, not an answer taken for the object made."""
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fpcp-demo-unserved"}})
    manifest = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "apiserver-metrics", "namespace": "fpcp-demo-unserved"},
        "spec": {},
    }
    with pytest.raises(KubeError) as refused:
        kube.ensure(manifest)
    assert refused.value.status == 404
    assert "/namespaces/fpcp-demo-unserved/servicemonitors" in str(refused.value)
