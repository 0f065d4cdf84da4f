"""Each clusterctl provider's components grant that provider what its code needs and not the other's
(issue 32): evaluated with the charts' RBAC evaluator (tests/charts/rbac.py) over each components file, its
variables at their defaults, against the grants tests/charts/test_rbac.py ties to the code calls that
need them."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.charts.rbac import Account, Cluster
from tests.charts.test_rbac import CONTROL_PLANE, EVERYWHERE, NAMESPACES, PLATFORM, VDC, permissions
from tests.charts.test_rbac import providers_needs as chart_needs
from tests.providers.test_capi_components import built, components  # noqa: F401 (the fixture)

INFRASTRUCTURE, CP = "infrastructure-flexplane", "control-plane-flexplane"
Held = set[tuple[str, str, str, str]]


def account_and_cluster(built: Path, label: str) -> tuple[Account, Cluster]:  # noqa: F811
    objects = components(built, label)
    (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    return Account(account["metadata"]["namespace"], account["metadata"]["name"]), Cluster(objects)


@functools.cache
def held(built: Path, label: str) -> Held:  # noqa: F811
    """Every (where, group, resource, verb) the provider's account holds, its own bindings included."""
    account, cluster = account_and_cluster(built, label)
    grants = cluster.grants(account, cluster.escalated(account, NAMESPACES))
    return {(g.namespace or EVERYWHERE, group, res, verb) for g, group, res, verb in permissions(grants)}


def needed_by(paths: tuple[str, ...]) -> Held:
    """The chart's grants that the code under ``paths`` needs (tests/charts/test_rbac.py)."""
    return {grant for grant, (path, _text) in chart_needs().items() if path.startswith(paths)}


def test_the_namespace_is_the_platform_namespace_the_chart_tests_use(built: Path) -> None:  # noqa: F811
    assert account_and_cluster(built, INFRASTRUCTURE)[0].namespace == PLATFORM


def test_the_two_providers_together_hold_what_the_chart_grants_and_nothing_more(built: Path) -> None:  # noqa: F811
    infrastructure, control_plane = held(built, INFRASTRUCTURE), held(built, CP)
    assert sorted(chart_needs().keys() - (infrastructure | control_plane)) == [], "lost in the split"
    assert sorted((infrastructure | control_plane) - chart_needs().keys()) == [], "granted beyond the chart"


def test_each_provider_holds_what_its_own_code_needs(built: Path) -> None:  # noqa: F811
    assert sorted(needed_by(("providers/infrastructure/",)) - held(built, INFRASTRUCTURE)) == []
    assert sorted(needed_by(("providers/controlplane/",)) - held(built, CP)) == []
    # What the process needs whichever provider it runs: kopf's Events, the contract check, the binding
    # to a Secrets role before its first Secret, the leader Lease.
    common = {
        (EVERYWHERE, "", "events", "create"),
        (EVERYWHERE, "apiextensions.k8s.io", "customresourcedefinitions", "get"),
        (EVERYWHERE, "rbac.authorization.k8s.io", "rolebindings", "get"),
        (EVERYWHERE, "rbac.authorization.k8s.io", "rolebindings", "create"),
        *((PLATFORM, "coordination.k8s.io", "leases", verb) for verb in ("get", "create", "update")),
    }
    for label in (INFRASTRUCTURE, CP):
        assert sorted(common - held(built, label)) == [], label


@pytest.mark.parametrize(
    "grant",
    [
        (EVERYWHERE, "controlplane.flexplane.io", "flexcontrolplanes", "patch"),
        (EVERYWHERE, "controlplane.flexplane.io", "flexcontrolplanes", "watch"),
        (EVERYWHERE, "apps", "deployments", "create"),
        (EVERYWHERE, "apps", "statefulsets", "patch"),
        (EVERYWHERE, "batch", "jobs", "create"),
        (EVERYWHERE, "", "namespaces", "create"),
        (EVERYWHERE, "cluster.x-k8s.io", "machinedeployments", "patch"),
        (CONTROL_PLANE, "", "secrets", "create"),
        (CONTROL_PLANE, "", "secrets", "get"),
        (CONTROL_PLANE, "monitoring.coreos.com", "servicemonitors", "create"),
        (VDC, "", "secrets", "create"),
        (VDC, "", "secrets", "delete"),
    ],
    ids=str,
)
def test_the_infrastructure_provider_holds_nothing_of_the_control_planes(
    built: Path,  # noqa: F811
    grant: tuple[str, str, str, str],
) -> None:
    assert grant in held(built, CP)
    assert grant not in held(built, INFRASTRUCTURE)


@pytest.mark.parametrize(
    "grant",
    [
        (EVERYWHERE, "infrastructure.flexplane.io", "proxmoxmachines", "patch"),
        (EVERYWHERE, "infrastructure.flexplane.io", "proxmoxmachines", "watch"),
        (EVERYWHERE, "infrastructure.flexplane.io", "proxmoxclusters/status", "patch"),
        (EVERYWHERE, "cluster.x-k8s.io", "machines", "watch"),
        (PLATFORM, "", "configmaps", "list"),
        (PLATFORM, "coordination.k8s.io", "leases", "delete"),
        (PLATFORM, "events.k8s.io", "events", "create"),
    ],
    ids=str,
)
def test_the_control_plane_provider_holds_nothing_of_the_infrastructures(
    built: Path,  # noqa: F811
    grant: tuple[str, str, str, str],
) -> None:
    assert grant in held(built, INFRASTRUCTURE)
    assert grant not in held(built, CP)


def test_the_infrastructure_provider_cannot_bind_itself_to_a_control_planes_secrets(built: Path) -> None:  # noqa: F811
    account, cluster = account_and_cluster(built, INFRASTRUCTURE)
    assert {
        o["metadata"]["name"] for o in components(built, INFRASTRUCTURE) if o["kind"] == "ClusterRole"
    } == {
        "flexplane-infrastructure",
        "flexplane-infrastructure-vdc",
        "flexplane-infrastructure-capi-manager",
    }
    assert cluster.reads_secrets(account, CONTROL_PLANE, cluster.escalated(account, NAMESPACES)) == []
    assert cluster.reads_secrets(account, "kube-system", cluster.escalated(account, NAMESPACES)) == []
