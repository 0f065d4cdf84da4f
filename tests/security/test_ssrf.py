"""SSRF on image URLs: a URL reaching loopback, link-local or private addresses, or a file, is refused
before any download starts, at both layers that see it.

- The orchestrator's createImage refuses what the URL itself shows (a literal address, a scheme). A
  host name and a redirect it cannot judge: the name resolves on the node, the redirect happens there.
  It stores such an image, and a VM made from it fails with INVALID on its image.
- The agent refuses every case itself (the orchestrator is not its only caller), checking the name's
  addresses and each redirect target before following it.

The world's image server stands for the public internet (the agents and the orchestrator allowlist it,
as an admin would a mirror); an "internal" server on loopback, not allowlisted, stands for what an
attacker wants reached. It must see no request at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentclient import AgentPool, AgentTarget, ClientTLS, ImageRefused
from devstack.images import ImageServer
from devstack.world import World
from devstack.world.config import ORCHESTRATOR_CLIENT_CN
from tests.apikit import GraphQL
from tests.promises import RecordFigure
from tests.security.conftest import ProxmoxCalls
from tests.vmkit import CREATE, SMALL, STANDARD

pytestmark = pytest.mark.promise("ssrf")

SUITE = "ssrf"
FILE = "debian-12.qcow2"
STORAGE = "local-lvm"

# name -> the URL, given the internal server and the world's (public) one
Url = Callable[[ImageServer, ImageServer], str]
LITERALS: dict[str, Url] = {
    "127.0.0.1": lambda internal, _: internal.url(FILE),
    "169.254.169.254": lambda *_: "http://169.254.169.254/latest/meta-data/debian-12.qcow2",
    "10.0.0.0/8": lambda *_: "http://10.20.30.40/images/debian-12.qcow2",
    "[::1]": lambda internal, _: f"http://[::1]:{internal.port}/images/{FILE}",
    "[::ffff:127.0.0.1]": lambda internal, _: f"http://[::ffff:127.0.0.1]:{internal.port}/images/{FILE}",
    "file://": lambda *_: "file:///etc/passwd",
}
# What only the node can judge: where a name resolves there, where a redirect leads.
INDIRECT: dict[str, Url] = {
    "a name resolving to a private address": lambda internal, _: (
        f"http://localhost:{internal.port}/images/{FILE}"
    ),
    "a public URL redirecting to an internal one": lambda internal, public: public.redirect_url(
        internal.url(FILE)
    ),
}
EVERY_CASE = {**LITERALS, **INDIRECT}

CREATE_IMAGE = """mutation($input: ImageInput!) {
  createImage(input: $input) { image { name sourceUrl } errors { field message code } } }"""
DELETE_IMAGE = "mutation($name: String!) { deleteImage(name: $name) { errors { message } } }"
CREATE_VDC = "mutation($input: VdcInput!) { createVdc(input: $input) { vdc { id } errors { message } } }"
DELETE_VDC = "mutation($id: ID!) { deleteVdc(id: $id) { errors { message } } }"


@pytest.fixture(scope="module")
def internal() -> Iterator[ImageServer]:
    """What an attacker wants reached: a server on loopback that nothing allowlists."""
    with ImageServer("127.0.0.1") as server:
        yield server


@pytest.fixture(autouse=True)
def nothing_downloaded(internal: ImageServer) -> Iterator[None]:
    """Whatever the test did, the internal server saw no request."""
    internal.reset()
    yield
    assert internal.requests == []


@pytest.fixture(scope="module")
def refusals(record_figure: RecordFigure) -> Iterator[dict[str, list[str]]]:
    by_layer: dict[str, list[str]] = {"createImage": [], "createVirtualMachine": [], "the agent": []}
    yield by_layer
    for layer, cases in by_layer.items():
        record_figure(SUITE, f"refused by {layer}", len(cases))
    record_figure(SUITE, "requests reaching the internal server", 0)


def image_input(name: str, url: str, checksum: str) -> dict[str, Any]:
    return {
        "name": name,
        "osFamily": "debian",
        "sourceUrl": url,
        "checksum": checksum,
        "defaultUser": "debian",
        "minDiskGb": 2,
    }


# --------------------------------------------------------------------------- the orchestrator


@pytest.mark.parametrize("case", list(LITERALS))
def test_create_image_refuses_a_url_that_shows_where_it_leads(
    api: GraphQL,
    world: World,
    internal: ImageServer,
    proxmox_calls: ProxmoxCalls,
    refusals: dict[str, list[str]],
    case: str,
) -> None:
    name = f"ssrf-{uuid.uuid4().hex[:8]}"
    url = LITERALS[case](internal, world.images)

    answer = api(
        CREATE_IMAGE, user="admin", variables={"input": image_input(name, url, internal.checksum(FILE))}
    )

    payload = answer.data["createImage"]
    assert payload["image"] is None
    assert [(e["field"], e["code"]) for e in payload["errors"]] == [("sourceUrl", "INVALID")]
    assert name not in [i["name"] for i in api("{ images { name } }", user="admin").data["images"]]
    assert proxmox_calls.since_mark() == []
    refusals["createImage"].append(case)


@pytest.fixture(scope="module")
def indirect_images(api: GraphQL, world: World, internal: ImageServer) -> Iterator[dict[str, str]]:
    """The indirect cases as catalog images (the orchestrator stores them), and a VDC allowing them."""
    suffix = uuid.uuid4().hex[:8]
    names = {case: f"ssrf-{index}-{suffix}" for index, case in enumerate(INDIRECT)}
    for case, name in names.items():
        url = INDIRECT[case](internal, world.images)
        answer = api(
            CREATE_IMAGE, user="admin", variables={"input": image_input(name, url, internal.checksum(FILE))}
        )
        assert answer.data["createImage"]["errors"] == [], answer.body
    vdc = f"ssrf-{suffix}"
    quota = {"vcpus": 8, "memoryMib": 8192, "diskGb": 100, "vms": 4}
    spec = {
        "id": vdc,
        "zones": ["zone-a"],
        "computeProfiles": [SMALL],
        "storageProfiles": [STANDARD],
        "images": list(names.values()),
        "quota": quota,
    }
    assert api(CREATE_VDC, user="admin", variables={"input": spec}).data["createVdc"]["errors"] == []
    try:
        yield {"vdc": vdc, **names}
    finally:
        api(DELETE_VDC, user="admin", variables={"id": vdc})
        for name in names.values():
            api(DELETE_IMAGE, user="admin", variables={"name": name})


@pytest.mark.parametrize("case", list(INDIRECT))
def test_a_vm_from_an_image_the_node_must_refuse_fails_before_anything_is_downloaded_or_made(
    api: GraphQL,
    indirect_images: dict[str, str],
    proxmox_calls: ProxmoxCalls,
    refusals: dict[str, list[str]],
    case: str,
) -> None:
    values = {
        "name": f"ssrf-{uuid.uuid4().hex[:8]}",
        "computeProfile": SMALL,
        "storageProfile": STANDARD,
        "image": indirect_images[case],
        "zone": "zone-a",
    }
    headers = {"Authorization": f"Bearer {api.token('admin')}", "FlexPlane-VDC-ID": indirect_images["vdc"]}

    answer = api.raw(CREATE, headers=headers, variables={"input": values}, timeout=120)

    payload = answer.data["createVirtualMachine"]
    assert payload["virtualMachine"] is None
    assert [(e["field"], e["code"]) for e in payload["errors"]] == [("image", "INVALID")]
    assert "cannot be used" in payload["errors"][0]["message"]
    assert proxmox_calls.writes_since_mark() == []
    refusals["createVirtualMachine"].append(case)


# ---------------------------------------------------------------------------------- the agent


@pytest.fixture(scope="module")
def agent_pool(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentPool]:
    """A pool with a client certificate of the world's platform CA, as the orchestrator has."""
    assert world.ca is not None
    directory: Path = tmp_path_factory.mktemp("ssrf-client")
    cert, key = world.ca.issue_client(ORCHESTRATOR_CLIENT_CN, directory, "client")
    with AgentPool(ClientTLS.from_files(world.ca.cert_path, cert, key), timeout=10.0) as pool:
        yield pool


@pytest.fixture(scope="module")
def node(world: World) -> AgentTarget:
    agent = world.agents[("zone-a", "pve1")]
    return AgentTarget(identity=agent.identity, address=agent.endpoint)


@pytest.mark.parametrize("case", list(EVERY_CASE))
def test_the_agent_refuses_the_url_before_downloading(
    agent_pool: AgentPool,
    node: AgentTarget,
    world: World,
    internal: ImageServer,
    proxmox_calls: ProxmoxCalls,
    refusals: dict[str, list[str]],
    case: str,
) -> None:
    url = EVERY_CASE[case](internal, world.images)

    with pytest.raises(ImageRefused):
        agent_pool.ensure_template(node, "ssrf-probe", url, internal.checksum(FILE), STORAGE, timeout=30)

    assert proxmox_calls.writes_since_mark() == []
    refusals["the agent"].append(case)
