"""A cluster's LoadBalancer Services read back from its VDC's edge gateways (``services.clusters.balancers``),
as the cloud controller leaves them there (its own functions write the rules: ``providers.cloud.model``), on
an in-process management cluster."""

from __future__ import annotations

from orchestrator.models.gateways import FirewallRule, Gateway, PortForward, PublicIp
from orchestrator.services.clusters.balancers import LoadBalancer, Port, load_balancers
from orchestrator.services.gateways import store
from providers.cloud.model import Balancer, host_cidr
from providers.cloud.model import Port as ServicePort
from tests.orchestrator.balancerkit import marked_rules
from tests.orchestrator.fakekube import FakeKube, context_on

ANYWHERE = "0.0.0.0/0"


def rules_for(
    cluster: str, namespace: str, name: str, address: str, *ranges: str, ports_of: bool = True
) -> list[FirewallRule]:
    """The inbound rules the cloud controller writes for a Service's address."""
    ports = (ServicePort("tcp", 80, 30080), ServicePort("tcp", 443, 30443)) if ports_of else ()
    return list(marked_rules(cluster, Balancer(namespace, name, ports, ranges, bool(ranges)), address))


def gateway(
    vdc: str, zone: str, uplink: str, ips: list[str], rules: list[FirewallRule], forwards: list[PortForward]
) -> Gateway:
    return Gateway(
        vdc,
        zone,
        uplink,
        public_ips=tuple(PublicIp(a) for a in ips),
        rules=tuple(rules),
        forwards=tuple(forwards),
    )


def test_a_clusters_services_are_its_marked_addresses_with_their_forwards_and_nothing_else() -> None:
    kube = FakeKube()
    ctx = context_on(kube, "ADMIN")
    shop = rules_for("web", "shop", "front", "203.0.113.11")
    api = rules_for("web", "default", "api", "203.0.113.12", "198.51.100.0/24")
    theirs = rules_for("other", "shop", "front", "203.0.113.13")  # another cluster of the VDC
    own = [
        FirewallRule(
            "in", "allow", "tcp", ANYWHERE, host_cidr("203.0.113.14"), (22, 22), "ssh to the bastion"
        )
    ]
    forwards = [
        PortForward("203.0.113.11", "tcp", 80, "10.0.0.21", 30080),
        PortForward("203.0.113.11", "tcp", 443, "10.0.0.22", 30443),
        PortForward("203.0.113.12", "tcp", 80, "10.0.0.21", 30080),
        PortForward("203.0.113.14", "tcp", 22, "10.0.0.5", 22),
    ]
    ips = ["203.0.113.11", "203.0.113.12", "203.0.113.13", "203.0.113.14"]
    store.save(ctx, gateway("demo", "zone-a", "203.0.113.10", ips, [*shop, *api, *theirs, *own], forwards))
    # Another VDC's gateway with a cluster of the same name: never this one's.
    store.save(
        ctx,
        gateway(
            "other",
            "zone-a",
            "203.0.113.20",
            ["203.0.113.21"],
            rules_for("web", "shop", "x", "203.0.113.21"),
            [],
        ),
    )

    found = load_balancers(context_on(kube, "ADMIN"), "demo", "web")

    assert found == [
        LoadBalancer(
            namespace="default",
            name="api",
            zone="zone-a",
            address="203.0.113.12",
            ports=(Port("tcp", 80, 30080),),
            nodes=("10.0.0.21",),
            source_ranges=("198.51.100.0/24",),
        ),
        LoadBalancer(
            namespace="shop",
            name="front",
            zone="zone-a",
            address="203.0.113.11",
            ports=(Port("tcp", 80, 30080), Port("tcp", 443, 30443)),
            nodes=("10.0.0.21", "10.0.0.22"),
            source_ranges=(ANYWHERE,),
        ),
    ]
    assert [b.service for b in found] == ["default/api", "shop/front"]


def test_an_address_released_while_its_rules_stay_is_not_shown() -> None:
    """The controller releases an address before it removes its rules: in between, nothing is served."""
    kube = FakeKube()
    ctx = context_on(kube, "ADMIN")
    rules = rules_for("web", "shop", "front", "203.0.113.11")
    store.save(ctx, gateway("demo", "zone-a", "203.0.113.10", [], rules, []))

    assert load_balancers(context_on(kube, "ADMIN"), "demo", "web") == []


def test_a_service_without_ports_yet_holds_its_address_all_the_same() -> None:
    kube = FakeKube()
    ctx = context_on(kube, "ADMIN")
    rules = rules_for("web", "shop", "front", "203.0.113.11", ports_of=False)
    store.save(ctx, gateway("demo", "zone-a", "203.0.113.10", ["203.0.113.11"], rules, []))

    [found] = load_balancers(context_on(kube, "ADMIN"), "demo", "web")

    assert (found.service, found.address, found.ports, found.source_ranges) == (
        "shop/front",
        "203.0.113.11",
        (),
        (),
    )


def test_a_cluster_without_services_or_gateways_has_none() -> None:
    assert load_balancers(context_on(FakeKube(), "ADMIN"), "demo", "web") == []
