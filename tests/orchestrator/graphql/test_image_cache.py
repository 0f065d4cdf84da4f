"""Images are cached on the hosts ahead of creates, and a create never waits on a download: over the API,
through the world's agents, its fake Proxmox and its image server (services/image_cache.py,
services/vms/create.py)."""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

from devstack.images import fake_image
from devstack.world import World
from orchestrator.services.vms import TEMPLATE_WAIT
from tests import vmkit
from tests.apikit import GraphQL, eventually
from tests.orchestrator.hostkit import reached_again

PUBLISH = """mutation($input: ImageInput!) { createImage(input: $input) {
  image { name } caching { host storage started message } errors { field message code } } }"""
DELETE = "mutation($name: String!) { deleteImage(name: $name) { errors { message } } }"
CACHE = "{ hosts { id imageCache { image storage state } } }"
ZONE_A = {"zone-a/pve1", "zone-a/pve2", "zone-a/pve3"}
EVERY_HOST = ZONE_A | {"zone-b/pve1", "zone-b/pve2", "zone-b/pve3"}
# How long the agents get to download and import a small image on a busy machine.
CACHING = 90.0


def templates(world: World, image: str) -> dict[str, bool]:
    """The image's templates in the fakes, by host: ready (True) or being imported (False)."""
    return {
        f"{zone}/{vm['node']}": bool(vm["template"])
        for zone in world.fakes.zones
        for vm in vmkit.fake_vms(world, zone).values()
        if vm["name"] == f"fp-tpl-{image}"
    }


def cached_on(world: World, image: str, hosts: set[str]) -> bool:
    held = templates(world, image)
    return all(held.get(host) for host in hosts)


@contextlib.contextmanager
def new_image(api: GraphQL, world: World) -> Iterator[tuple[str, str]]:
    """An image name no host has, and its file on the world's image server; afterwards the image leaves the
    catalog, its held downloads are let go, and its templates leave the fakes once the agents are done."""
    name = f"t{uuid.uuid4().hex[:8]}"
    file = f"{name}.qcow2"
    world.images.add(file, fake_image(file))
    try:
        yield name, file
    finally:
        world.images.release(file)
        api(DELETE, user="admin", variables={"name": name})
        with contextlib.suppress(AssertionError):  # a download the test failed to start leaves nothing
            eventually(lambda: all(templates(world, name).values()), 60, "the imports under way to end")
        for zone in world.fakes.zones:
            for vmid, vm in vmkit.fake_vms(world, zone).items():
                if vm["name"] == f"fp-tpl-{name}":
                    vmkit.forget(world, zone, vmid)


def publish(api: GraphQL, world: World, name: str, url: str, file: str, vdcs: list[str]) -> dict[str, Any]:
    checksum = "sha256:" + hashlib.sha256(world.images.data(file)).hexdigest()
    answer = api(
        PUBLISH,
        user="admin",
        variables={
            "input": {
                "name": name,
                "osFamily": "debian",
                "sourceUrl": url,
                "checksum": checksum,
                "defaultUser": "debian",
                "minDiskGb": 1,
                "allowInVdcs": vdcs,
            }
        },
    )
    payload = vmkit.payload(answer, "createImage")
    assert payload["errors"] == [], payload["errors"]
    return payload


def test_the_hosts_that_joined_have_the_offered_images_cached(api: GraphQL, world: World) -> None:
    # Every node joined the world through enrollment; VDC demo offers both images in both zones. No create
    # needs to have run on a host for it to hold them: each was asked for them as it joined.
    def states() -> dict[str, dict[str, str]]:
        answer = api(CACHE, user="admin")
        assert answer.errors == [], answer.errors
        return {h["id"]: {i["image"]: i["state"] for i in h["imageCache"]} for h in answer.data["hosts"]}

    def all_cached() -> bool:
        seen = states()
        return set(seen) >= EVERY_HOST and all(
            seen[host].get(image) == "CACHED"
            for host in EVERY_HOST
            for image in ("debian-12", "ubuntu-24.04")
        )

    eventually(all_cached, CACHING, lambda: f"every host to have both images cached: {states()}")
    # Only the admin sees it.
    as_user = api(CACHE, user="alice")
    assert {h["imageCache"] is None for h in as_user.data["hosts"]} == {True}


def test_publishing_an_image_starts_its_download_on_every_host_of_the_zones_that_offer_it(
    api: GraphQL, world: World
) -> None:
    with vmkit.scratch_vdcs(api, world) as scratch, new_image(api, world) as (name, file):
        vdc = scratch(zones=("zone-a", "zone-b"))
        payload = publish(api, world, name, world.images.url(file), file, [vdc])

        assert {(c["host"], c["storage"], c["started"], c["message"]) for c in payload["caching"]} == {
            (host, "local-lvm", True, None) for host in EVERY_HOST
        }
        # The mutation answered once each agent took the work on; the agents carry it to its end.
        eventually(
            lambda: cached_on(world, name, EVERY_HOST),
            CACHING,
            lambda: f"the image's template on every host: {templates(world, name)}",
        )
        assert world.images.hits(file) == len(EVERY_HOST)  # one download per host, none by a create


def test_a_host_whose_agent_does_not_answer_is_named_and_the_image_is_published_all_the_same(
    api: GraphQL, world: World
) -> None:
    away = ("zone-a", "pve3")
    with vmkit.scratch_vdcs(api, world) as scratch, new_image(api, world) as (name, file):
        vdc = scratch()  # zone-a
        world.stop_agent(*away)
        try:
            payload = publish(api, world, name, world.images.url(file), file, [vdc])
        finally:
            world.start_agent(*away)
            reached_again(api, *away)
            eventually(
                lambda: not api("{ hosts { id agentVersion } }", user="admin").errors, 30, "agents back"
            )
        started = {c["host"]: c for c in payload["caching"]}
        assert {h for h, c in started.items() if c["started"]} == ZONE_A - {"zone-a/pve3"}
        assert started["zone-a/pve3"]["started"] is False
        assert "pve3" in started["zone-a/pve3"]["message"]
        eventually(
            lambda: cached_on(world, name, ZONE_A - {"zone-a/pve3"}),
            CACHING,
            lambda: f"the image's template on the hosts that answered: {templates(world, name)}",
        )
        assert "zone-a/pve3" not in templates(world, name)  # its next create there, or a publish, starts it


def test_an_image_no_vdc_offers_is_cached_nowhere(api: GraphQL, world: World) -> None:
    with new_image(api, world) as (name, file):
        payload = publish(api, world, name, world.images.url(file), file, [])
        assert payload["caching"] == []
        time.sleep(1)
        assert world.images.hits(file) == 0
        assert templates(world, name) == {}


def test_a_create_on_a_host_still_downloading_its_image_is_refused_within_seconds_and_its_retry_makes_it(
    api: GraphQL, world: World, vm_name: Any
) -> None:
    with vmkit.scratch_vdcs(api, world) as scratch, new_image(api, world) as (name, file):
        vdc = scratch()  # zone-a
        # The image server sends half of the file, then holds every download of it until released.
        payload = publish(api, world, name, world.images.held_url(file), file, [vdc])
        assert {c["host"] for c in payload["caching"] if c["started"]} == ZONE_A
        eventually(lambda: world.images.hits(file) == len(ZONE_A), 30, "the three downloads to begin")
        time.sleep(0.5)  # the agents read the first half and report it

        asked = {
            "name": vm_name("early"),
            "computeProfile": vmkit.SMALL,
            "storageProfile": vmkit.STANDARD,
            "image": name,
            "zone": "zone-a",
            "idempotencyKey": f"early-{name}",
        }
        headers = {"Authorization": f"Bearer {api.token('admin')}", "FlexPlane-VDC-ID": vdc}
        started = time.monotonic()
        # Before, this request was held until the download ended (up to 30 minutes): it would time out here.
        answer = api.raw(
            vmkit.CREATE, headers=headers, variables={"input": asked}, timeout=TEMPLATE_WAIT + 25
        )
        took = time.monotonic() - started
        refused = vmkit.payload(answer, "createVirtualMachine")

        assert took < TEMPLATE_WAIT + 15, f"the create took {took:.1f} s"
        assert refused["virtualMachine"] is None
        [error] = refused["errors"]
        assert error["code"] == "UNAVAILABLE"
        message = error["message"]
        assert f"image {name} is not ready on host pve" in message
        # How far it is: some of the first half, as the agent last reported it.
        assert re.search(
            r"of zone zone-a yet: its agent is downloading it, [\d.]+ KiB of 384 KiB \(\d+%\)", message
        )
        assert "The create made nothing: retry it" in message
        assert vmkit.named(world, asked["name"]) == []  # nothing half-made

        # The agents carry on: once the downloads end and the templates are made, the retry makes the VM.
        world.images.release(file)
        eventually(
            lambda: cached_on(world, name, ZONE_A),
            CACHING,
            lambda: f"the image's template on zone-a's hosts: {templates(world, name)}",
        )
        made = vmkit.ok(vmkit.create(api, "admin", vdc, **{k: v for k, v in asked.items() if k != "zone"}))
        assert made["virtualMachine"]["status"] == "running"
        assert made["virtualMachine"]["image"] == name
        assert any(r.startswith(f"has image {name} cached") for r in made["placement"]["reasons"])
        assert world.images.hits(file) == len(ZONE_A)  # the creates downloaded nothing themselves
