"""Tenant isolation in the portal (OWASP API Security Top 10: API1 BOLA, API5 BFLA).

bob, signed in through the identity provider, asks for every page of the portal that names a VDC, a
VM, a task, a network or a security group (the routes are read from Django's resolver, so a new page is
covered or fails here),
with alice's ids and with ids that do not exist: as a page, as an htmx fragment, and as a POST with
his CSRF token. Each pair answers the same status and the same page once the id is blanked out, in
times of the same order of magnitude. His websocket on alice's task ends as on a task that does not
exist. alice gets every admin URL refused, whatever the method, with one and the same page; under
production settings that page is the one a URL that does not exist gets. The times are taken in one
round by default, in ROUNDS under ``make test-full`` or when one round is out of bounds
(``tests.security.conftest.Timings``).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import pytest
import requests
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.typing import Origin

from devstack.identity.claims import organisation_of, subject_of
from devstack.world import World
from orchestrator.services.tasks import decode_task_id, encode_task_id
from portal.vms.actions import ACTIONS
from portal.vms.snapshots import ACTIONS as SNAPSHOT_ACTIONS
from tests.apikit import GraphQL
from tests.gatewaykit import clean_gateway, external_network
from tests.portal.clusterkit import cleaned, create_in_portal, prepare, vdc_network
from tests.portal.sessionkit import COOKIE, csrf_token, signed_in
from tests.promises import RecordFigure
from tests.security.conftest import (
    BEHIND_THE_INGRESS,
    AlicesVms,
    Production,
    ProxmoxCalls,
    Route,
    Timings,
    portal_routes,
    production_cookie,
)
from tests.vmkit import act, create, fake_vm

pytestmark = pytest.mark.promise("isolation")

SUITE = "isolation"
ROUNDS = 3
MAGNITUDE = 10.0
HTMX = {"HX-Request": "true"}
# The parts of a page that differ between two answers whatever they are about.
_TOKENS = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')

# What bob uses in place of alice's ids.
ALICES_VDC, NO_VDC, NO_VMID, NO_TASK = "demo", "nowhere", 99999, "no-such-task"
BOBS_VDC = "other"
# What bob tries, in turn, on each page.
VDC = "alice's VDC"
VM = "alice's VM under bob's VDC"
TASK = "alice's task under bob's VDC"
FOLLOWED = "alice's task followed on bob's page"
NETWORK = "alice's network under bob's VDC"
GROUP = "alice's security group under bob's VDC"
PUBLIC_IP = "alice's public IP under bob's VDC"
CLUSTER = "alice's Kubernetes cluster under bob's VDC"
# Pages that follow the task named in their query string (``?task=``).
FOLLOWING = {"vm-list"}
KNOWN_PARAMS = {"vdc", "zone", "vmid", "task_id", "action", "name", "network", "group"}
KNOWN_PARAMS |= {"address", "protocol", "port", "position"}  # the edge gateway pages
KNOWN_PARAMS |= {"cluster"}  # the Kubernetes pages
# alice's Kubernetes cluster in VDC demo (its objects: no provider runs here), a name bob's VDC has none of.
ALICES_CLUSTER, NO_CLUSTER = "alices-k8s", "no-such-k8s"
# A public IP nobody holds (alice's is allocated for the module, tests.gatewaykit's pool).
NO_PUBLIC_IP = "203.0.113.250"
PUBLIC_IPS = "{ publicIps { address } }"
# alice's network (of zone-a) and security group in VDC demo, by names bob's VDC has none of.
ALICES_NETWORK, ALICES_GROUP, NO_NETWORK, NO_GROUP = "alices-net", "alices-sg", "no-such-net", "no-such-sg"
# A snapshot name for the snapshot pages (alice's VMs have none of that name: NOT_FOUND, as for bob's).
SNAPSHOT = "before-upgrade"


def vdc_routes() -> list[Route]:
    """The pages of a VDC (the admin area's, the access pages' among them, are refused whole: below)."""
    return [
        route for route in portal_routes() if "vdc" in route.params and not route.path.startswith("admin/")
    ]


def admin_routes() -> list[Route]:
    return [route for route in portal_routes() if route.path.startswith("admin/")]


def cases() -> list[tuple[str, str, str]]:
    """(route name, what bob tries, action) for each VDC page: every id the page takes, in turn."""
    found = []
    for route in vdc_routes():
        variants = [VDC] + [VM] * ("vmid" in route.params) + [TASK] * ("task_id" in route.params)
        variants += [FOLLOWED] * (route.name in FOLLOWING)
        variants += [NETWORK] * ("network" in route.params and "vmid" not in route.params)
        variants += [GROUP] * ("group" in route.params)
        variants += [PUBLIC_IP] * ("address" in route.params)
        variants += [CLUSTER] * ("cluster" in route.params)
        actions = list(ACTIONS) if "action" in route.params else [""]
        if route.name == "vm-snapshot-action":
            actions = list(SNAPSHOT_ACTIONS)
        found += [(route.name, variant, action) for variant in variants for action in actions]
    return found


@dataclass(frozen=True)
class Pair:
    """Alice's id and one that does not exist, in the URL bob asks for."""

    foreign_url: str
    foreign_id: str
    missing_url: str
    missing_id: str


def pairs(
    route: Route, variant: str, action: str, vms: AlicesVms, public_ip: str = NO_PUBLIC_IP
) -> list[Pair]:
    zone, vmid = vms.stopped.split("/")
    own = {"zone": zone, "vmid": vmid, "task_id": vms.task, "action": action, "name": SNAPSHOT}
    own |= {"network": ALICES_NETWORK, "group": ALICES_GROUP}
    own |= {"address": public_ip, "protocol": "tcp", "port": "8080", "position": "0"}
    own |= {"cluster": ALICES_CLUSTER}
    if variant == CLUSTER:
        no = route.url(**{**own, "cluster": NO_CLUSTER}, vdc=BOBS_VDC)
        return [Pair(route.url(**own, vdc=BOBS_VDC), ALICES_CLUSTER, no, NO_CLUSTER)]
    if variant == PUBLIC_IP:
        no = route.url(**{**own, "address": NO_PUBLIC_IP}, vdc=BOBS_VDC)
        return [Pair(route.url(**own, vdc=BOBS_VDC), public_ip, no, NO_PUBLIC_IP)]
    if variant in (NETWORK, GROUP):
        key, foreign, absent = ("network", ALICES_NETWORK, NO_NETWORK)
        if variant == GROUP:
            key, foreign, absent = ("group", ALICES_GROUP, NO_GROUP)
        no = route.url(**{**own, key: absent}, vdc=BOBS_VDC)
        return [Pair(route.url(**own, vdc=BOBS_VDC), foreign, no, absent)]
    if variant == VDC:
        return [Pair(route.url(**own, vdc=ALICES_VDC), ALICES_VDC, route.url(**own, vdc=NO_VDC), NO_VDC)]
    if variant == VM:
        missing = {**own, "vmid": NO_VMID}
        return [
            Pair(
                route.url(**own, vdc=BOBS_VDC),
                vms.stopped,
                route.url(**missing, vdc=BOBS_VDC),
                f"{zone}/{NO_VMID}",
            )
        ]
    tasks = (NO_TASK, a_task_of_bobs_that_does_not_exist(vms.task))
    if variant == TASK:
        foreign = route.url(**own, vdc=BOBS_VDC)
        return [
            Pair(foreign, vms.task, route.url(**{**own, "task_id": task}, vdc=BOBS_VDC), task)
            for task in tasks
        ]
    page = route.url(**own, vdc=BOBS_VDC)
    return [Pair(f"{page}?task={vms.task}", vms.task, f"{page}?task={task}", task) for task in tasks]


def a_task_of_bobs_that_does_not_exist(task_id: str) -> str:
    """A well-formed task id of VDC other (signed as the portal signs them) naming no Proxmox task."""
    zone, upid, _ = decode_task_id(task_id)
    parts = upid.raw.split(":")
    parts[2] = "7FFFFFF0"  # a process id Proxmox never gave this task
    return encode_task_id(zone, ":".join(parts), BOBS_VDC)


def blanked(response: requests.Response, ident: str) -> tuple[int, str, str]:
    """The answer with the id asked about, and the per-answer CSRF tokens, blanked out."""
    body = _TOKENS.sub(r"\1<token>", response.text).replace(ident, "<id>")
    return response.status_code, response.headers.get("Content-Type", ""), body


# ------------------------------------------------------------------------------------------ fixtures

bob = signed_in("bob")
alice = signed_in("alice")
admin = signed_in("admin")


@pytest.fixture(scope="module")
def alices_network_and_group(api: GraphQL) -> Iterator[None]:
    """alice's network and security group in VDC demo (made for the module, deleted after it)."""
    network = {"name": ALICES_NETWORK, "zone": "zone-a", "cidr": "10.250.0.0/24"}
    made = api(CREATE_NETWORK, user="alice", vdc=ALICES_VDC, variables={"input": network})
    assert made.data["createNetwork"]["errors"] == [], made.body
    group = api(CREATE_GROUP, user="alice", vdc=ALICES_VDC, variables={"input": {"name": ALICES_GROUP}})
    assert group.data["createSecurityGroup"]["errors"] in ([], [{"code": "CONFLICT"}]), group.body
    yield
    api(DELETE_NETWORK, user="alice", vdc=ALICES_VDC, variables={"id": f"zone-a/{ALICES_NETWORK}"})
    api(DELETE_GROUP, user="alice", vdc=ALICES_VDC, variables={"name": ALICES_GROUP})


@pytest.fixture(scope="module")
def alices_public_ip(api: GraphQL, world: World) -> Iterator[str]:
    """A public IP of alice's VDC demo in zone-a, recorded in its gateway's desired state: the zone's
    gateways may run on no host of this world (UNAVAILABLE, the state kept), so that no host builds
    demo's gateway, whose name the worlds of parallel workers share."""
    with external_network(api, world, "i", nodes="no-such-host"):
        made = api(
            'mutation { allocatePublicIp(zone: "zone-a") { errors { code } } }', user="alice", vdc=ALICES_VDC
        )
        assert made.data["allocatePublicIp"]["errors"] == [{"code": "UNAVAILABLE"}], made.body
        [address] = [p["address"] for p in api(PUBLIC_IPS, user="alice", vdc=ALICES_VDC).data["publicIps"]]
        try:
            yield str(address)
        finally:
            clean_gateway(api, ALICES_VDC)


@pytest.fixture(scope="module")
def alices_cluster(world: World, api: GraphQL, alice: requests.Session) -> Iterator[None]:
    """alice's Kubernetes cluster in VDC demo, made through the portal's create form, deleted after the
    module."""
    management = prepare(world, api)
    with vdc_network(api) as network, cleaned(management, ALICES_VDC, ALICES_CLUSTER):
        made = create_in_portal(world, alice, ALICES_CLUSTER, network)
        assert made.status_code == 303, made.text[:2000]
        # Followed, as the browser does: the page shows (and so clears) the create's message, which would
        # otherwise show on whichever page alice asks for next and make it differ from the others.
        assert alice.get(f"{world.url}{made.headers['Location']}", timeout=60).ok
        yield


@pytest.fixture(scope="module")
def ratios(record_figure: RecordFigure) -> Iterator[list[float]]:
    found: list[float] = []
    yield found
    if found:
        record_figure(
            SUITE,
            "portal pages: time of another VDC's / of none",
            f"median {statistics.median(found):.2f}, from {min(found):.2f} to {max(found):.2f} "
            f"({len(found)} pages)",
        )


class Asker:
    """Asks the world's portal as one signed-in user: a page, its htmx fragment, or a POST with the CSRF
    token (and a confirmation, which the destructive actions want)."""

    def __init__(self, world: World, session: requests.Session) -> None:
        self.world = world
        self.session = session

    def __call__(self, method: str, path: str) -> tuple[requests.Response, float]:
        started = time.monotonic()
        if method == "POST":
            token = csrf_token(self.session, self.world)
            response = self.session.post(
                f"{self.world.url}{path}",
                data={"csrfmiddlewaretoken": token, "confirm": "yes"},
                headers={"X-CSRFToken": token},
                allow_redirects=False,
                timeout=60,
            )
        else:
            headers = HTMX if method == "HTMX" else {}
            response = self.session.get(
                f"{self.world.url}{path}", headers=headers, allow_redirects=False, timeout=60
            )
        return response, time.monotonic() - started


def alices_vms_as_they_were(world: World, vms: AlicesVms) -> None:
    for ident, status in ((vms.running, "running"), (vms.stopped, "stopped")):
        vm = fake_vm(world, ident)
        assert vm is not None, ident
        assert (vm["status"], vm["lock"]) == (status, None), (ident, vm)


# ------------------------------------------------------------------------------------------ bob


@pytest.mark.parametrize(("name", "variant", "action"), cases(), ids=[" ".join(c).strip() for c in cases()])
def test_bob_gets_the_same_page_for_alices_ids_as_for_ids_that_do_not_exist(
    world: World,
    bob: requests.Session,
    alices_vms: AlicesVms,
    alices_network_and_group: None,
    alices_public_ip: str,
    alices_cluster: None,
    proxmox_calls: ProxmoxCalls,
    ratios: list[float],
    timing_full: bool,
    name: str,
    variant: str,
    action: str,
) -> None:
    route = next(route for route in vdc_routes() if route.name == name)
    unknown = set(route.params) - KNOWN_PARAMS
    assert not unknown, f"{route.path}: give the parameters {unknown} values in {__name__}.pairs"
    ask = Asker(world, bob)
    for pair in pairs(route, variant, action, alices_vms, alices_public_ip):
        for method in ("GET", "HTMX", "POST"):
            timings = Timings(partial(ask, method), pair.foreign_url, pair.missing_url)
            answers = timings.take(ROUNDS if timing_full else 1).answers

            foreign, missing = answers[pair.foreign_url], answers[pair.missing_url]
            assert foreign.status_code < 500, (method, pair.foreign_url, foreign.text[:2000])
            assert blanked(foreign, pair.foreign_id) == blanked(missing, pair.missing_id), (
                method,
                pair.foreign_url,
            )
            ratio = timings.ratio_within(MAGNITUDE, ROUNDS)
            assert 1 / MAGNITUDE < ratio < MAGNITUDE, (method, pair.foreign_url, timings.times)
            ratios.append(ratio)

    assert proxmox_calls.writes_since_mark() == []
    alices_vms_as_they_were(world, alices_vms)


def test_every_page_of_a_vdc_is_in_the_cases() -> None:
    """The VDC pages the cases cover are those the resolver has: a new one joins them by itself, and
    one taking a parameter the cases cannot fill fails the test above, saying which."""
    assert {name for name, _, _ in cases()} == {route.name for route in vdc_routes()}
    assert {"vdc-dashboard", "task", "vm-list", "vm-create", "vm-detail", "vm-row", "vm-action"} <= {
        route.name for route in vdc_routes()
    }


def socket_end(world: World, session: requests.Session, task_id: str) -> tuple[list[object], int | None]:
    """What the task's websocket sends bob until it closes, and its close code."""
    cookie = session.cookies.get(COOKIE, domain=world.cfg.orchestrator_host)
    url = f"ws://{world.cfg.orchestrator_host}:{world.cfg.orchestrator_port}/ws/tasks/{task_id}/"
    received: list[object] = []
    with connect(
        url, additional_headers={"Cookie": f"{COOKIE}={cookie}"}, origin=Origin(world.url), open_timeout=10
    ) as socket:
        try:
            while True:
                received.append(json.loads(socket.recv(timeout=30)))
        except ConnectionClosed as closed:
            return received, closed.rcvd.code if closed.rcvd else None


def test_bobs_websocket_on_alices_task_ends_as_on_a_task_that_does_not_exist(
    world: World, bob: requests.Session, alices_vms: AlicesVms
) -> None:
    foreign = socket_end(world, bob, alices_vms.task)

    for missing_id in (NO_TASK, a_task_of_bobs_that_does_not_exist(alices_vms.task)):
        missing = socket_end(world, bob, missing_id)
        assert json.dumps(foreign).replace(alices_vms.task, "<id>") == json.dumps(missing).replace(
            missing_id, "<id>"
        )
    assert foreign[1] == 4404  # NOT_FOUND, after one message saying so


# ------------------------------------------------------------------------------------------ alice


# Real objects of the world for the pages an admin sees (devstack/seed.py), by the section of the route.
# The access pages (admin/access/) name a user (Zitadel's id: bob's, the same in every world) and a VDC.
# The organization pages name an organization: acme's (the same in every world).
REAL = {
    "zone": "zone-a",
    "host": "pve1",
    "user": subject_of("bob"),
    "vdc": "demo",
    "org": organisation_of("acme")[0],
}
REAL_IDENT = {
    "compute-profile": "small",
    "storage-profile": "standard",
    "image": "debian-12",
    "zone": "zone-a",
    "vdc": "demo",
    "kubernetes-version": "v1.29.9",  # none offered: see NO_SEEDED_OBJECT
}
# What alice POSTs to: objects that do not exist, so that were she let through, nothing would change
# (and the page would say the object is missing, not that the page is).
NOTHING = {
    "zone": "zone-a",
    "host": "no-such-host",
    "ident": "no-such-thing",
    "user": "404404404",
    "vdc": "no-such-thing",
    "org": "404404404",
}


# Admin routes whose real values name nothing the seeded world holds.
NO_SEEDED_OBJECT = {
    "admin/access/organizations/<str:org>/vdcs/<str:vdc>/edit/",
    # Confirmations: acme has no allowance (nor VDCs) in the seeded world, and bob no membership of demo.
    "admin/access/organizations/<str:org>/delete/",
    "admin/access/organizations/<str:org>/vdcs/<str:vdc>/delete/",
    "admin/access/users/<str:user>/vdcs/<str:vdc>/revoke/",
    # The world offers Kubernetes versions only when it runs the providers (make dev's does).
    "admin/kubernetes-versions/<str:ident>/edit/",
    "admin/kubernetes-versions/<str:ident>/delete/",
}


def admin_url(route: Route, values: dict[str, str]) -> str:
    section = route.name.rsplit("-", 1)[0]
    return route.url(**{"ident": REAL_IDENT.get(section, ""), **values})


def refusal(response: requests.Response, path: str) -> tuple[int, str]:
    """The page with the path it names blanked out."""
    return response.status_code, _TOKENS.sub(r"\1<token>", response.text).replace(path, "<path>")


@pytest.fixture(scope="module")
def alices_refusal(world: World, alice: requests.Session) -> tuple[int, str]:
    """What alice gets for the admin area's start page: the page every admin URL must answer her."""
    return refusal(alice.get(f"{world.url}/admin/", timeout=30), "/admin/")


@pytest.mark.parametrize("path", [route.path for route in admin_routes()])
def test_alice_gets_every_admin_url_refused_whatever_the_method(
    world: World,
    alice: requests.Session,
    admin: requests.Session,
    alices_refusal: tuple[int, str],
    proxmox_calls: ProxmoxCalls,
    path: str,
) -> None:
    route = next(route for route in admin_routes() if route.path == path)
    real, nothing = admin_url(route, REAL), admin_url(route, NOTHING)
    ask = Asker(world, alice)

    for method, url in (("GET", real), ("POST", nothing)):
        response, _ = ask(method, url)
        assert refusal(response, url) == alices_refusal, (method, url)

    assert alices_refusal[0] == 404
    assert "page &#x27;<path>&#x27; does not exist" in alices_refusal[1]
    # The control: the URL is a real page, which admin gets; where the seeded world has no object behind
    # it (an organization's VDC: none is seeded), the page itself answers that its object is missing.
    control = admin.get(f"{world.url}{real}", allow_redirects=False, timeout=30)
    if route.path in NO_SEEDED_OBJECT:
        assert control.status_code == 404, control.text[:2000]
        assert "does not exist" in control.text
        assert "page &#x27;" not in control.text  # not the answer of a URL that is no page
    else:
        assert control.status_code in (200, 405)
    assert proxmox_calls.writes_since_mark() == []


def test_alices_pages_do_not_link_to_the_admin_area(
    world: World, alice: requests.Session, admin: requests.Session
) -> None:
    assert 'href="/admin/' not in alice.get(f"{world.url}/vdc/demo/", timeout=30).text
    assert 'href="/admin/' in admin.get(f"{world.url}/admin/", timeout=30).text


def test_in_production_an_admin_url_answers_alice_as_a_url_that_does_not_exist(
    world: World, production_orchestrator: Production
) -> None:
    """Under production settings (no debug page), the admin area is not even told apart from nothing."""
    cookie = production_cookie(production_orchestrator, world, ["USER", "vdc:demo"], "alice")
    headers = {"Cookie": f"{COOKIE}={cookie}", **BEHIND_THE_INGRESS}

    def get(path: str) -> tuple[int, str]:
        response = requests.get(
            f"{production_orchestrator.url}{path}", headers=headers, allow_redirects=False, timeout=30
        )
        return refusal(response, path)

    admin_page, no_page = get("/admin/hosts/"), get("/admin/no-such-page/")
    assert admin_page[0] == 404
    assert admin_page == no_page


CREATE_NETWORK = "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) { errors { code } } }"
DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { code } } }"
CREATE_GROUP = """mutation($input: CreateSecurityGroupInput!) {
  createSecurityGroup(input: $input) { errors { code } } }"""
DELETE_GROUP = "mutation($name: String!) { deleteSecurityGroup(name: $name) { errors { code } } }"
DASHBOARD_TASK = re.compile(r'data-task-id="([^"]+)" data-task-kind="([^"]+)"\s+data-task-vm="([^"]+)"')
CORDON = "mutation($zone: String!, $host: String!) { %s(zone: $zone, host: $host) { errors { message } } }"


@contextmanager
def only_host(api: GraphQL, world: World, zone: str, keep: str) -> Iterator[None]:
    """The zone's other hosts cordoned (as admin), so that placement picks ``keep``; uncordoned after."""
    others = [node for node in world.fakes[zone].node_addresses if node != keep]
    try:
        for host in others:
            answer = api(CORDON % "cordonHost", user="admin", variables={"zone": zone, "host": host})
            assert answer.data["cordonHost"]["errors"] == [], answer.body
        yield
    finally:
        for host in others:
            api(CORDON % "uncordonHost", user="admin", variables={"zone": zone, "host": host})


def test_a_vmid_proxmox_hands_out_again_brings_none_of_the_former_vdcs_tasks(
    world: World, api: GraphQL, alice: requests.Session, alices_vms: AlicesVms
) -> None:
    """Proxmox gives a new VM the lowest free VMID: alice's new VM may get the number of one of bob's
    that is gone, on the same host. The tasks of bob's VM (its stop, its destroy, their logs) stay his."""
    with only_host(api, world, "zone-a", "pve2"):
        bobs = create(api, "bob", BOBS_VDC, name=alices_vms.names("bobs-gone"))["virtualMachine"]
        act(api, "bob", "stopVirtualMachine", bobs["id"])
        act(api, "bob", "deleteVirtualMachine", bobs["id"])
        alices = create(api, "alice", ALICES_VDC, name=alices_vms.names("reborn"))["virtualMachine"]

    assert (alices["id"], alices["host"]) == (bobs["id"], bobs["host"]), "the premise: the VMID came back"
    dashboard = alice.get(f"{world.url}/vdc/{ALICES_VDC}/", timeout=30).text
    kinds = {kind for _, kind, vm in DASHBOARD_TASK.findall(dashboard) if vm == alices["id"]}
    assert "qmstart" in kinds  # her VM's own
    assert not kinds & {"qmstop", "qmdestroy"}, kinds
    zone, vmid = alices["id"].split("/")
    page = alice.get(f"{world.url}/vdc/{ALICES_VDC}/vms/{zone}/{vmid}/", timeout=30).text
    assert ">qmdestroy<" not in page
    assert ">qmstop<" not in page
    # The API's listing of her tasks, and of that VM's, alike.
    for variables in ({}, {"vm": alices["id"]}):
        answer = api(
            "query($vm: ID) { tasks(first: 100, vm: $vm) { type virtualMachineId } }",
            user="alice",
            variables=variables,
        )
        kinds = {task["type"] for task in answer.data["tasks"] if task["virtualMachineId"] == alices["id"]}
        assert "qmstart" in kinds
        assert not kinds & {"qmstop", "qmdestroy"}, (variables, kinds)
