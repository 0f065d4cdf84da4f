"""A cluster's LoadBalancer Services on its page (issue 35): each with its public address, its ports and who
may connect, read back from the VDC's edge gateway where the cluster's cloud controller marks them (its own
functions write the rules here: ``providers.cloud.model``), on the tenant clusters' objects in memory."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import requests

from orchestrator.models.clusters import namespace_of
from orchestrator.models.gateways import Gateway, PortForward, PublicIp
from orchestrator.services.gateways import store
from providers.cloud.model import Balancer, Port
from tests.orchestrator.balancerkit import marked_rules
from tests.orchestrator.fakekube import context_on
from tests.orchestrator.lightworld import LightWorld
from tests.portal.pagekit import HTMX, get
from tests.portal.served import LightPortal

NAMESPACE = namespace_of("demo")
ADDRESS = "203.0.113.31"


@pytest.fixture
def served_web(light: LightWorld, cluster: str) -> Iterator[None]:
    """Service shop/web of the cluster on VDC demo's gateway in zone-a, port 80 from anywhere."""
    balancer = Balancer("shop", "web", (Port("tcp", 80, 31080),))
    rules = marked_rules(cluster, balancer, ADDRESS)
    forwards = (PortForward(ADDRESS, "tcp", 80, "10.0.0.21", 31080),)
    gateway = Gateway(
        "demo", "zone-a", "203.0.113.30", public_ips=(PublicIp(ADDRESS),), rules=rules, forwards=forwards
    )
    saved = store.save(context_on(light.kube, "ADMIN"), gateway)
    yield
    light.kube.delete_catalog("gateway", saved.id)


def balancers_part(session: requests.Session, site: LightPortal, name: str, *, polled: bool = False) -> str:
    headers = {**HTMX, "HX-Target": "cluster-status"} if polled else {}
    page = get(session, site, f"/vdc/demo/kubernetes/{name}/", **headers)
    assert page.status_code == 200, page.text[:2000]
    found = re.search(r"<section [^>]*data-balancers.*?</section>", page.text, re.S)
    assert found is not None, page.text[:3000]
    return found.group(0)


def words(part: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", part).split())


def test_a_clusters_load_balancer_shows_with_its_address_ports_and_sources(
    site: LightPortal, alice: requests.Session, cluster: str, served_web: None
) -> None:
    for polled in (False, True):  # the page, and its status part as htmx follows it
        part = balancers_part(alice, site, cluster, polled=polled)
        assert 'data-balancer="shop/web"' in part
        said = words(part)
        assert f"shop/web {ADDRESS} (zone-a) 80/tcp → 31080 1 anywhere" in said


def test_a_cluster_without_load_balancers_says_how_one_gets_there(
    site: LightPortal, alice: requests.Session, cluster: str
) -> None:
    said = words(balancers_part(alice, site, cluster))

    assert "None yet. A Service of type LoadBalancer gets a public IP of the VDC" in said


def test_another_vdcs_user_never_sees_the_clusters_page(
    site: LightPortal, bob: requests.Session, cluster: str, served_web: None
) -> None:
    page = get(bob, site, f"/vdc/demo/kubernetes/{cluster}/")

    assert page.status_code in (403, 404)
    assert ADDRESS not in page.text
