"""A cluster's LoadBalancer Services (``KubernetesCluster.loadBalancers``) through the GraphQL API in this
process: read back from the VDC's edge gateway, where the cluster's cloud controller marks each Service's
public IP with its firewall rules (its own functions write them here: ``providers.cloud.model``).

No provider runs here: each test writes the objects a create makes and the gateway as the cloud controller
leaves it, in a cluster and a VDC gateway of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import pytest

from orchestrator.auth import Principal
from orchestrator.errors import PermissionDenied
from orchestrator.models.clusters import namespace_of
from orchestrator.models.gateways import FirewallRule, Gateway, PortForward, PublicIp
from orchestrator.services.clusters import balancers
from orchestrator.services.context import Context
from orchestrator.services.gateways import store
from providers.cloud.model import Balancer, Port
from tests.orchestrator.balancerkit import marked_rules
from tests.orchestrator.fakekube import FakeKube, context_on
from tests.orchestrator.inprocess import InProcessApi

DELETE = """mutation($cluster: String!) { deleteKubernetesCluster(cluster: $cluster) {
  errors { field message code } } }"""
EXTERNAL = {
    "bridge": "vmbr1",
    "cidr": "203.0.113.0/24",
    "gateway": "203.0.113.1",
    "pool": ["203.0.113.10-203.0.113.60"],
}
BALANCERS = """query($name: String!) { kubernetesCluster(name: $name) { name loadBalancers {
  namespace name zone address ports { protocol port nodePort } nodes sourceRanges } } }"""
NAMESPACE = namespace_of("demo")
ADDRESS = "203.0.113.11"


@pytest.fixture
def gateway(kube: FakeKube, cluster: str) -> Iterator[Gateway]:
    """VDC demo's gateway in zone-a as the cluster's cloud controller leaves it for Service shop/front:
    its address, the rules marking it (from 198.51.100.0/24 only) and its two ports' forwards."""
    ctx = context_on(kube, "ADMIN")
    balancer = Balancer(
        "shop", "front", (Port("tcp", 80, 30080), Port("tcp", 443, 30443)), ("198.51.100.0/24",), True
    )
    rules = marked_rules(cluster, balancer, ADDRESS)
    forwards = (
        PortForward(ADDRESS, "tcp", 80, "10.0.0.21", 30080),
        PortForward(ADDRESS, "tcp", 443, "10.0.0.22", 30443),
    )
    saved = store.save(
        ctx,
        Gateway(
            "demo",
            "zone-a",
            "203.0.113.10",
            public_ips=(PublicIp(ADDRESS),),
            rules=rules,
            forwards=forwards,
        ),
    )
    yield saved
    kube.delete_catalog("gateway", saved.id)


def test_a_clusters_load_balancer_reads_with_its_address_ports_nodes_and_sources(
    api: InProcessApi, cluster: str, gateway: Gateway
) -> None:
    answer = api(BALANCERS, user="alice", vdc="demo", variables={"name": cluster})

    assert answer.errors == [], answer.body
    assert answer.data["kubernetesCluster"]["loadBalancers"] == [
        {
            "namespace": "shop",
            "name": "front",
            "zone": "zone-a",
            "address": ADDRESS,
            "ports": [
                {"protocol": "tcp", "port": 80, "nodePort": 30080},
                {"protocol": "tcp", "port": 443, "nodePort": 30443},
            ],
            "nodes": ["10.0.0.21", "10.0.0.22"],
            "sourceRanges": ["198.51.100.0/24"],
        }
    ]


@pytest.fixture
def external(kube: FakeKube) -> Iterator[None]:
    """zone-a with an external network (its gateways' home), as an admin sets it; as before afterwards."""
    before = kube.get_catalog("zone", "zone-a")
    assert before is not None
    kube.replace_catalog("zone", "zone-a", {**before.spec, "external": EXTERNAL}, before.resource_version)
    yield
    now = kube.get_catalog("zone", "zone-a")
    assert now is not None
    kube.replace_catalog("zone", "zone-a", before.spec, now.resource_version)


def held_more(
    ctx: Context, addresses: list[str], rules: Sequence[FirewallRule], *, forwards: bool = True
) -> None:
    """VDC demo's gateway in zone-a holding ``addresses`` and ``rules`` besides its own (and, without
    ``forwards``, none of its forwards)."""
    current = store.load(ctx, "demo", "zone-a")
    assert current is not None
    store.save(
        ctx,
        replace(
            current,
            public_ips=(*current.public_ips, *(PublicIp(a) for a in addresses)),
            rules=(*current.rules, *rules),
            forwards=current.forwards if forwards else (),
        ),
    )


def test_deleting_the_cluster_gives_its_addresses_back_and_leaves_the_rest_of_the_gateway(
    api: InProcessApi, kube: FakeKube, cluster: str, gateway: Gateway, external: None
) -> None:
    """Its controller, revoked with it, could no longer release them: the delete does (the gateway's host
    does not answer in the light world: the change is recorded, which is what counts)."""
    ctx = context_on(kube, "ADMIN")
    own = FirewallRule("in", "allow", "tcp", "0.0.0.0/0", "203.0.113.12/32", (22, 22), "ssh to the bastion")
    other = marked_rules("other", Balancer("shop", "front", ()), "203.0.113.13")
    held_more(ctx, ["203.0.113.12", "203.0.113.13"], [own, *other])

    answer = api(DELETE, user="alice", vdc="demo", variables={"cluster": cluster})

    assert answer.errors == [], answer.body
    assert answer.data["deleteKubernetesCluster"]["errors"] == []
    after = store.load(ctx, "demo", "zone-a")
    assert after is not None
    assert [ip.address for ip in after.public_ips] == ["203.0.113.12", "203.0.113.13"]
    assert after.forwards == ()
    assert list(after.rules) == [own, *other]


def test_a_cluster_without_load_balancers_lists_none(api: InProcessApi, cluster: str) -> None:
    answer = api(BALANCERS, user="alice", vdc="demo", variables={"name": cluster})

    assert answer.errors == [], answer.body
    assert answer.data["kubernetesCluster"]["loadBalancers"] == []


def test_a_sweep_gives_back_what_gateways_hold_for_clusters_that_are_gone(
    api: InProcessApi, kube: FakeKube, cluster: str, gateway: Gateway, external: None
) -> None:
    """A controller may take an address while its cluster is being deleted (it runs until its control
    plane's namespace goes, its token minted before the revocation): each pass of the gateway reconciler
    (``manage.py reconcile_gateways``) sweeps, giving back what is held for a cluster no longer there and
    leaving the clusters that are (the gateway's host does not answer in the light world: the change is
    recorded, which is what counts)."""
    ctx = context_on(kube, "ADMIN")
    gone = marked_rules("gone", Balancer("shop", "late", ()), "203.0.113.13")
    # Its forwards go to nodes on no network of this light gateway: no change of it would validate.
    held_more(ctx, ["203.0.113.13"], gone, forwards=False)
    reconciler = Context(Principal("flexplane-gateways", "flex.plane gateways", "", frozenset({"ADMIN"})))

    assert balancers.sweep(reconciler) == {("demo", "gone"): []}

    after = store.load(ctx, "demo", "zone-a")
    assert after is not None
    assert [ip.address for ip in after.public_ips] == [ADDRESS]  # the living cluster's stays
    assert list(after.rules) == list(gateway.rules)
    assert balancers.sweep(reconciler) == {}  # nothing left to give back


def test_only_the_admin_sweeps(api: InProcessApi, kube: FakeKube) -> None:
    with pytest.raises(PermissionDenied):
        balancers.sweep(context_on(kube, "USER", vdc="demo"))
