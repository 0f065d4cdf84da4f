"""The topology page ``/vdc/<vdc>/topology/`` (issue 37, item 9): VDC demo drawn zone by zone, each network,
VM, cluster and the edge gateway's public IPs and forwards named and linked to its page, bob kept out, a
zone that does not answer said so while the rest is drawn, and the zones read once each.

``scene`` makes what the drawing shows, on the ``gateway`` fixture (demo's edge gateway in zone-a, a public
IP forwarded to a VM of its own): a second network with a VM on it, the gateway's VM on both networks, and
a tenant cluster whose two workers are VMs (the cluster's objects written into the management cluster as a
create and Cluster API would have left them: the light world runs no providers).
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import requests

from orchestrator.models.clusters import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    MACHINE,
    PROXMOX_CLUSTER,
    VDC_LABEL,
    namespace_of,
)
from orchestrator.services.clusters import objects
from tests.apikit import Api
from tests.orchestrator.fakekube import FakeClusterApi
from tests.portal.light.conftest import Gateway
from tests.portal.pagekit import get
from tests.portal.served import LightPortal
from tests.vmkit import create, restore, vm_names

PAGE = "/vdc/demo/topology/"
NICS = "query($id: ID!) { virtualMachine(id: $id) { nics { ipAddress network { id name } } } }"
VMS = "{ virtualMachines(first: 500) { edges { node { id name status zone } } } }"
NETWORKS = "{ networks { id name zone cidr } }"
CREATE_NETWORK = """mutation($input: CreateNetworkInput!) { createNetwork(input: $input) {
  network { id } errors { message } } }"""
DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { message } } }"
ATTACH = """mutation($vm: ID!, $network: String!) { attachNetwork(vm: $vm, network: $network) {
  errors { message } } }"""
DETACH = """mutation($vm: ID!, $network: String!) { detachNetwork(vm: $vm, network: $network) {
  errors { message } } }"""
VM_LINK = re.compile(r'<a href="(/vdc/demo/vms/[^"]+)"[^>]*data-topology-vm="([^"]+)"')


@dataclass
class Scene:
    """What ``scene`` made: the names of its VMs and network, its cluster, and the gateway's."""

    gateway: Gateway
    backend: str  # the second network's name
    backend_id: str
    db: str  # a VM on the second network only
    cluster: str
    workers: tuple[str, str]
    vm_ids: dict[str, str] = field(default_factory=dict)  # VM name -> id


def _ok(answer: Any, mutation: str) -> None:
    assert answer.data[mutation]["errors"] == [], answer.body


def _made(api: Api, name: str, **fields: Any) -> str:
    made = create(api, "alice", "demo", name=name, **fields)
    assert made["errors"] == [], made["errors"]
    return str(made["virtualMachine"]["id"])


def _cluster_objects(clusters: FakeClusterApi, name: str, network: str, workers: tuple[str, ...]) -> None:
    """Cluster ``name`` of demo as a create and the providers leave it (no node pools: its workers are
    counted as the VMs they are), and a Machine per worker, named as its VM (the contract)."""
    plan = objects.ClusterPlan("demo", name, "v1.33.4", "debian-12", network, 1, ())
    namespace = namespace_of("demo")
    plane = objects.proxmox_cluster(plan)
    plane["spec"]["controlPlaneEndpoint"] = {"host": "192.0.2.10", "port": 6443}
    for resource, body in (
        (PROXMOX_CLUSTER, plane),
        (FLEX_CONTROL_PLANE, objects.control_plane(plan)),
        (CLUSTER, objects.cluster(plan)),
    ):
        clusters.create(resource, namespace, body)
    for worker in workers:
        labels = {CLUSTER_NAME_LABEL: name, VDC_LABEL: "demo"}
        clusters.create(MACHINE, namespace, {"metadata": {"name": worker, "labels": labels}, "spec": {}})


def _remove_cluster(clusters: FakeClusterApi, name: str, workers: tuple[str, ...]) -> None:
    namespace = namespace_of("demo")
    for resource in (CLUSTER, FLEX_CONTROL_PLANE, PROXMOX_CLUSTER):
        clusters.delete(resource, namespace, name)
    for worker in workers:
        clusters.delete(MACHINE, namespace, worker)


@contextmanager
def scene(api: Api, site: LightPortal, clusters: FakeClusterApi, gateway: Gateway) -> Iterator[Scene]:
    """On top of ``gateway``: network ``backend`` of zone-a with VM ``db`` on it alone, the gateway's VM
    on it too, and cluster ``kube`` whose workers are two VMs on the default network. All gone after."""
    web_id = next(
        vm["node"]["id"]
        for vm in api(VMS, user="alice", vdc="demo").data["virtualMachines"]["edges"]
        if vm["node"]["name"] == gateway.vm_name
    )
    suffix = uuid.uuid4().hex[:6]
    backend = f"back{suffix}"
    cluster = f"kube{suffix}"
    values = {"name": backend, "zone": "zone-a", "cidr": f"10.{100 + int(suffix[:2], 16) % 100}.7.0/24"}
    made = api(CREATE_NETWORK, user="alice", vdc="demo", variables={"input": values})
    _ok(made, "createNetwork")
    backend_id = str(made.data["createNetwork"]["network"]["id"])
    workers: tuple[str, str] = ("", "")
    try:
        _ok(
            api(ATTACH, user="alice", vdc="demo", variables={"vm": web_id, "network": backend}),
            "attachNetwork",
        )
        with vm_names(api, site) as names:
            db = names("db")
            ids = {gateway.vm_name: web_id, db: _made(api, db, networks=[{"network": backend}])}
            workers = (f"{cluster}-md-{suffix}a", f"{cluster}-md-{suffix}b")
            for worker in workers:
                ids[worker] = _made(api, worker)
            default = api(NICS, user="alice", vdc="demo", variables={"id": ids[workers[0]]})
            network = default.data["virtualMachine"]["nics"][0]["network"]["id"]
            _cluster_objects(clusters, cluster, network, workers)
            try:
                yield Scene(gateway, backend, backend_id, db, cluster, workers, ids)
            finally:
                _remove_cluster(clusters, cluster, workers)
                # Its VMs go as ``vm_names`` ends; the gateway's VM is the fixture's, and leaves the network.
                api(DETACH, user="alice", vdc="demo", variables={"vm": web_id, "network": backend})
    finally:
        api(DELETE_NETWORK, user="alice", vdc="demo", variables={"id": backend_id})


def page_of(session: requests.Session, site: LightPortal, path: str = PAGE) -> str:
    answer = get(session, site, path)
    assert answer.status_code == 200, answer.text[:500]
    return answer.text


def drawings(page: str) -> str:
    """The page's SVGs, and nothing else of it."""
    return "".join(re.findall(r"<svg [^>]*data-topology-drawing.*?</svg>", page, re.S))


def lists(page: str) -> str:
    """The page's text alternative: the details elements."""
    return "".join(re.findall(r"<details [^>]*data-topology-list.*?</details>", page, re.S))


def test_the_drawing_names_and_links_every_network_vm_cluster_and_forward_of_demo(
    site: LightPortal, api: Api, alice: requests.Session, tenant_clusters: FakeClusterApi, gateway: Gateway
) -> None:
    with scene(api, site, tenant_clusters, gateway) as made:
        page = page_of(alice, site)
        vms = [e["node"] for e in api(VMS, user="alice", vdc="demo").data["virtualMachines"]["edges"]]
        networks = api(NETWORKS, user="alice", vdc="demo").data["networks"]
    svg, listed = drawings(page), html.unescape(lists(page))
    for vm in vms:
        zone, vmid = vm["id"].split("/")
        href = f"/vdc/demo/vms/{zone}/{vmid}/"
        assert f'<a href="{href}"' in svg, vm
        assert f"VM {vm['name']}: {vm['status']}" in html.unescape(svg), vm  # its title: name and status
        assert f'href="{href}">{vm["name"]}</a>: {vm["status"]}' in listed, vm
    assert dict((i, link) for link, i in VM_LINK.findall(svg)) == {
        vm["id"]: f"/vdc/demo/vms/{vm['id']}/" for vm in vms
    }
    for network in networks:
        assert f'data-topology-network="{network["id"]}"' in svg, network
        assert f"Network {network['name']} ({network['cidr']})" in html.unescape(svg)
        assert f">Network {network['name']}</a> ({network['cidr']})" in listed
    assert f'href="/vdc/demo/kubernetes/{made.cluster}/"' in svg
    assert f"Kubernetes cluster {made.cluster}" in svg
    for worker in made.workers:
        assert f"{worker}</a>: running" in listed
        assert f"a node of Kubernetes cluster {made.cluster}" in listed
    text = html.unescape(svg)
    assert "Edge gateway · uplink" in text
    assert 'href="/vdc/demo/gateway-firewall/"' in svg
    assert f"{made.gateway.address}:8080/tcp → {made.gateway.vm_name} {made.gateway.vm_address}:80" in text
    assert 'href="/vdc/demo/port-forwards/"' in svg
    assert 'href="/vdc/demo/public-ips/"' in svg
    # The gateway's VM is on both networks: a dot on each bus, and both addresses in the list.
    web = re.search(rf'href="[^"]+">{re.escape(made.gateway.vm_name)}</a>: running, ([0-9.]+)', listed)
    assert web is not None
    assert listed.count(f">{made.gateway.vm_name}</a>: running") == 2
    assert f">{made.db}</a>: running" in listed.split(f"Network {made.backend}</a>")[1]


def test_bob_cannot_see_demos_topology_and_his_own_names_none_of_demos_vms(
    site: LightPortal, api: Api, bob: requests.Session
) -> None:
    alices = get(bob, site, PAGE)
    made_up = get(bob, site, "/vdc/nowhere/topology/")
    assert alices.status_code == made_up.status_code == 404
    own = page_of(bob, site, "/vdc/other/topology/")
    demo = [e["node"] for e in api(VMS, user="alice", vdc="demo").data["virtualMachines"]["edges"]]
    assert demo
    assert all(f'data-topology-vm="{vm["id"]}"' not in own for vm in demo)
    assert "/vdc/demo/" not in own


def test_a_zone_that_does_not_answer_is_shown_unavailable_and_the_other_is_drawn(
    site: LightPortal, alice: requests.Session
) -> None:
    try:
        for node in ("pve1", "pve2", "pve3"):
            site.fakes.set_node_offline("zone-b", node)
        page = page_of(alice, site)
    finally:
        restore(site)
    zone_b = page.split('data-topology-zone="zone-b"')[1]
    assert "data-zone-unavailable" in zone_b
    assert "zone-b did not answer" in zone_b
    zone_a = page.split('data-topology-zone="zone-a"')[1].split('data-topology-zone="zone-b"')[0]
    assert 'data-topology-vm="zone-a/100"' in zone_a  # web-1, seeded
    assert "data-zone-unavailable" not in zone_a


def proxmox_calls(site: LightPortal) -> dict[tuple[str, str, str], int]:
    """How often each zone's fake was asked each (method, path), since it started."""

    def count(pve: Any) -> dict[tuple[str, str], int]:
        counted: dict[tuple[str, str], int] = {}
        for method, path, _body in pve.requests:
            key = (method, path.removeprefix("/api2/json"))
            counted[key] = counted.get(key, 0) + 1
        return counted

    zones = site.fakes.zones.items()
    return {(zone, *key): n for zone, fake in zones for key, n in site.fakes.on_loop(count, fake.pve).items()}


def test_the_page_reads_each_zone_once_and_no_vm_on_its_own(
    site: LightPortal, alice: requests.Session
) -> None:
    page_of(alice, site)  # the catalog's reads, cached by the process, are not the page's
    before = proxmox_calls(site)
    page_of(alice, site)
    after = proxmox_calls(site)
    made = {key: n - before.get(key, 0) for key, n in after.items() if n != before.get(key, 0)}
    assert made == {
        **{(zone, "GET", "/cluster/resources"): 1 for zone in site.fakes.zones},
        **{(zone, "GET", "/cluster/sdn/vnets"): 1 for zone in site.fakes.zones},
    }


def test_the_dashboard_links_the_topology(site: LightPortal, alice: requests.Session) -> None:
    dashboard = page_of(alice, site, "/vdc/demo/")
    assert f'href="{PAGE}" data-topology-link' in dashboard
