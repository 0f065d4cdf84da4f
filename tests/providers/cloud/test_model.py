"""What the cloud controller wants, decided without the tenant cluster or flex.plane: a Node's patches from
its VM, a Service's balancer, its gateway rules and forwards, and the rules' owner convention."""

from __future__ import annotations

from typing import Any

from providers.cloud.model import (
    UNINITIALIZED_TAINT,
    Balancer,
    Forward,
    Machine,
    Port,
    Rule,
    backend,
    balancer_of,
    ingress_patch,
    node_patch,
    owned_by,
    owner,
    status_patch,
    wanted_forwards,
    wanted_rules,
)

VM = Machine(
    "zone-a/101", "w1", "zone-a", "pve2", "small", "AB12CD34-0000-4000-8000-000000000001", ("10.0.0.4",)
)
TAINT = {"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}


def node(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w1"}, "spec": spec, "status": {}}


def service(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "shop", "name": "web"}, "spec": {"type": "LoadBalancer", **spec}}


def test_a_new_node_gets_the_vms_provider_id_labels_and_loses_only_the_taint() -> None:
    other = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}

    patch = node_patch(node(taints=[TAINT, other]), VM, initialize=True)

    assert patch == {
        "metadata": {
            "labels": {
                "topology.kubernetes.io/region": "zone-a",
                "topology.kubernetes.io/zone": "pve2",
                "node.kubernetes.io/instance-type": "small",
            }
        },
        "spec": {"providerID": "proxmox://ab12cd34-0000-4000-8000-000000000001", "taints": [other]},
    }


def test_a_provider_id_the_kubelet_set_is_never_replaced() -> None:
    patch = node_patch(node(providerID="proxmox://something-else", taints=[TAINT]), VM, initialize=True)

    assert patch is not None
    assert "providerID" not in patch["spec"]
    assert patch["spec"]["taints"] is None  # the last taint gone: the list removed


def test_a_settled_node_needs_nothing_and_follows_its_vms_host() -> None:
    settled = node(providerID="proxmox://x")
    settled["metadata"]["labels"] = {
        "topology.kubernetes.io/region": "zone-a",
        "topology.kubernetes.io/zone": "pve2",
        "node.kubernetes.io/instance-type": "small",
    }

    assert node_patch(settled, VM, initialize=False) is None
    moved = Machine(VM.id, VM.name, "zone-a", "pve3", "small")
    assert node_patch(settled, moved, initialize=False) == {
        "metadata": {"labels": {"topology.kubernetes.io/zone": "pve3"}}
    }


def test_the_nodes_addresses_are_its_nics_and_its_name() -> None:
    assert status_patch(node(), VM) == {
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.4"},
                {"type": "Hostname", "address": "w1"},
            ]
        }
    }
    patched = status_patch(node(), VM)
    assert patched is not None
    done = {**node(), "status": patched["status"]}
    assert status_patch(done, VM) is None


def test_only_a_ready_initialized_node_is_a_backend() -> None:
    ready = node()
    ready["status"] = {
        "conditions": [{"type": "Ready", "status": "True"}],
        "addresses": [{"type": "InternalIP", "address": "10.0.0.4"}],
    }
    tainted = {**ready, "spec": {"taints": [TAINT]}}
    not_ready = {**ready, "status": {**ready["status"], "conditions": [{"type": "Ready", "status": "False"}]}}
    excluded = {
        **ready,
        "metadata": {"name": "w1", "labels": {"node.kubernetes.io/exclude-from-external-load-balancers": ""}},
    }

    assert backend(ready) == "10.0.0.4"
    assert [backend(n) for n in (tainted, not_ready, excluded)] == [None, None, None]


def test_a_load_balancer_service_is_a_balancer_and_other_services_are_not() -> None:
    found = balancer_of(
        service(
            ports=[
                {"port": 80, "nodePort": 30080, "protocol": "TCP"},
                {"port": 53, "nodePort": 30053, "protocol": "UDP"},
                {"port": 9, "protocol": "TCP"},  # no NodePort yet
            ],
            loadBalancerSourceRanges=["198.51.100.7/24", "2001:db8::/32"],
        )
    )

    assert found == Balancer(
        "shop", "web", (Port("tcp", 80, 30080), Port("udp", 53, 30053)), ("198.51.100.0/24",), True
    )
    assert balancer_of(service(type="ClusterIP")) is None
    assert balancer_of(service(loadBalancerClass="example.com/other")) is None


def test_without_source_ranges_each_port_is_allowed_from_anywhere() -> None:
    balancer = Balancer("shop", "web", (Port("tcp", 443, 30443), Port("tcp", 80, 30080)))

    assert wanted_rules(balancer, "203.0.113.12") == [
        Rule("allow", "tcp", "0.0.0.0/0", "203.0.113.12/32", 80, 80),
        Rule("allow", "tcp", "0.0.0.0/0", "203.0.113.12/32", 443, 443),
    ]


def test_source_ranges_allow_each_port_from_each_and_deny_the_rest() -> None:
    balancer = Balancer("shop", "web", (Port("tcp", 80, 30080),), ("198.51.100.0/24", "192.0.2.0/28"), True)

    assert wanted_rules(balancer, "203.0.113.12") == [
        Rule("allow", "tcp", "198.51.100.0/24", "203.0.113.12/32", 80, 80),
        Rule("allow", "tcp", "192.0.2.0/28", "203.0.113.12/32", 80, 80),
        Rule("deny", "any", "0.0.0.0/0", "203.0.113.12/32"),
    ]


def test_ranges_none_of_which_is_ipv4_let_nothing_in() -> None:
    balancer = balancer_of(
        service(ports=[{"port": 80, "nodePort": 30080}], loadBalancerSourceRanges=["::/0"])
    )

    assert balancer is not None
    assert wanted_rules(balancer, "203.0.113.12") == [Rule("deny", "any", "0.0.0.0/0", "203.0.113.12/32")]


def test_the_owner_names_cluster_and_service_and_only_this_clusters_rules_are_read_back() -> None:
    description = owner("web", "shop", "front")

    assert owned_by(description, "web") == ("shop", "front")
    assert owned_by(description, "we") is None
    assert owned_by("a rule of the tenant's own", "web") is None


def test_each_port_forwards_to_a_ready_node_and_stays_there_while_it_is_ready() -> None:
    balancer = Balancer("shop", "web", (Port("tcp", 80, 30080), Port("udp", 53, 30053)))

    first = wanted_forwards(balancer, ["10.0.0.4", "10.0.0.5"], [])
    assert {(f.protocol, f.port, f.to_port) for f in first} == {("tcp", 80, 30080), ("udp", 53, 30053)}
    assert all(f.to_address in ("10.0.0.4", "10.0.0.5") for f in first)
    # A node joining moves nothing; the node a port went to leaving moves that port.
    assert wanted_forwards(balancer, ["10.0.0.4", "10.0.0.5", "10.0.0.6"], first) == first
    kept = Forward("tcp", 80, "10.0.0.9", 30080)
    moved = wanted_forwards(balancer, ["10.0.0.4"], [kept])
    assert [f.to_address for f in moved] == ["10.0.0.4", "10.0.0.4"]
    assert wanted_forwards(balancer, [], first) == []


def test_the_ingress_is_patched_only_when_it_differs() -> None:
    assert ingress_patch(service(), "203.0.113.12") == {
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.12"}]}}
    }
    done = {**service(), "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.12"}]}}}
    assert ingress_patch(done, "203.0.113.12") is None
    assert ingress_patch(done, None) == {"status": {"loadBalancer": {"ingress": None}}}
    assert ingress_patch(service(), None) is None
