"""A cluster's control-plane health on its page (issue 35, item 5): the API server, etcd's members and the
Konnectivity agents in words and badges, as the control-plane provider last saw them (its FlexControlPlane's
``status.health``), on the tenant clusters' objects in memory.

No provider runs here: each test writes the objects a create makes (the services' own builders), what the
providers write once the cluster is up (``made_ready``), and the health block as the provider writes it.
"""

from __future__ import annotations

import re
from typing import Any

import requests

from orchestrator.models.clusters import FLEX_CONTROL_PLANE, namespace_of
from tests.orchestrator.fakekube import FakeClusterApi
from tests.portal.pagekit import HTMX, get
from tests.portal.served import LightPortal

NAMESPACE = namespace_of("demo")
UP = {"ready": True, "reason": "Ready", "message": ""}


def provider_wrote(clusters: FakeClusterApi, name: str, **health: Any) -> None:
    clusters.patch(FLEX_CONTROL_PLANE, NAMESPACE, name, {"status": {"health": health}})


def health_part(session: requests.Session, site: LightPortal, name: str, *, polled: bool = False) -> str:
    """The page's health list (the status part, as htmx polls it when ``polled``)."""
    headers = {**HTMX, "HX-Target": "cluster-status"} if polled else {}
    page = get(session, site, f"/vdc/demo/kubernetes/{name}/", **headers)
    assert page.status_code == 200, page.text[:2000]
    found = re.search(r"<dl [^>]*data-health=.*?</dl>", page.text, re.S)
    assert found is not None
    return found.group(0)


def words(part: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", part).split())


def test_before_the_provider_has_looked_the_page_says_so(
    site: LightPortal, alice: requests.Session, cluster: str
) -> None:
    part = health_part(alice, site, cluster)

    assert 'data-health="unknown"' in part
    assert "Health not checked yet" in words(part)


def test_a_healthy_control_plane_reads_up_healthy_and_connected_in_green(
    site: LightPortal, alice: requests.Session, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        apiServer=UP,
        etcd={"members": 3, "readyMembers": 3},
        konnectivity={"observed": True, "agents": 4, "connectedAgents": 4},
    )

    part = health_part(alice, site, cluster)

    assert 'data-health="healthy"' in part
    said = words(part)
    assert "API server Up answers ready" in said
    assert "etcd Healthy 3 of 3 members ready" in said
    assert "Konnectivity Connected 4 of 4 node agents connected" in said
    assert "bg-amber" not in part
    assert "bg-red" not in part


def test_an_agent_not_connected_and_an_etcd_member_down_read_degraded(
    site: LightPortal, alice: requests.Session, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        apiServer=UP,
        etcd={"members": 3, "readyMembers": 2},
        konnectivity={"observed": True, "agents": 4, "connectedAgents": 3},
    )

    part = health_part(alice, site, cluster, polled=True)

    assert 'data-health="degraded"' in part
    assert 'data-etcd="2/3"' in part
    assert 'data-konnectivity="3/4"' in part
    said = words(part)
    assert "etcd Degraded 2 of 3 members ready" in said
    assert "Konnectivity Degraded 3 of 4 node agents connected" in said


def test_an_api_server_that_does_not_answer_reads_down_with_why_and_agents_unknown(
    site: LightPortal, alice: requests.Session, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        apiServer={"ready": False, "reason": "Unreachable", "message": "connection refused"},
        etcd={"members": 1, "readyMembers": 1},
        konnectivity={"observed": False, "agents": 0, "connectedAgents": 0},
    )

    part = health_part(alice, site, cluster)

    said = words(part)
    assert 'data-api-server="Unreachable"' in part
    assert "API server Down does not answer connection refused" in said
    assert "Konnectivity Unknown not known while the API server does not answer" in said


def test_an_api_server_that_answers_not_ready_names_the_failed_checks(
    site: LightPortal, alice: requests.Session, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        apiServer={"ready": False, "reason": "NotReady", "message": "etcd failed: reason withheld"},
        etcd={"members": 1, "readyMembers": 0},
        konnectivity={"observed": False, "agents": 0, "connectedAgents": 0},
    )

    said = words(health_part(alice, site, cluster))

    assert "API server Not ready answers, not ready etcd failed: reason withheld" in said
    assert "etcd Degraded 0 of 1 member ready" in said


def test_a_cluster_without_nodes_says_no_agent_has_joined(
    site: LightPortal, alice: requests.Session, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        apiServer=UP,
        etcd={"members": 1, "readyMembers": 1},
        konnectivity={"observed": True, "agents": 0, "connectedAgents": 0},
    )

    said = words(health_part(alice, site, cluster))

    assert "Konnectivity No agents no node has joined yet" in said
