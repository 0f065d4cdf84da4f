"""Images cached on the hosts: each offered image's template made ready on the hosts ahead of creates.

A VM is cloned from its image's template on its host (``services.vms.create``), which the host's agent
makes the first time it is asked (EnsureTemplate: it downloads the image, verifies its checksum, imports
it into Proxmox). That can take minutes, and no create waits for it: the orchestrator asks for it ahead.
An image is cached on every host that may take VMs of it: the hosts (cordoned ones too: a cordon ends)
of the zones where a VDC offers it, for each storage the storage profiles name in the zone. An image in
the catalog that no VDC offers is cached nowhere (no VM can use it); offering it caches it. So caching
starts

- when an image is published: ``create_image`` (with the VDCs it is offered in), and ``update_image``
  when its URL or checksum changes (the admin's API and pages both publish through here);
- when a VDC offers images in zones it did not before (``vdc_changed``: a new VDC, images or zones
  added to one);
- when a host joins (its enrollment, or ``createHost``): ``cache_on_new_host``.

Asking is all the orchestrator does (the stateless rule): it starts the agent's EnsureTemplate and goes as
soon as the agent has looked for the template (its first report past that look, within
``START_TIMEOUT``: done at once when the template is there); the agent carries a download to its end on
its own, one job per (image, storage), and any later call (another start, a create) follows that job or
finds the template. The hosts are asked in parallel, each host's images one after another (an agent has
few call slots). A host that does not answer fails nothing: the answer and the log name it, and the next
create there (which waits a few seconds at most, then is refused saying how far the download is), or the
next publish, starts it again.

A joining host's agent starts only once its enrollment has answered (the bootstrap writes its files, then
starts the service): ``cache_on_new_host`` asks from a short-lived background thread, again after a
growing pause until the agent answers or ``JOIN_WAIT`` passes. The thread holds nothing but the host's
name: each try reads the catalog anew, and a replica that stops loses only the start, which the host's
first create or the next publish makes again.

What is cached where comes from the zones' ``/cluster/resources``, where templates are guests named and
tagged as the agents make them: one call per zone, whatever the number of hosts and images
(``host_images``, ``image_hosts``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from orchestrator.auth import Principal
from orchestrator.errors import FlexPlaneError, Unavailable
from orchestrator.models import Host, Image, StorageProfile, Vdc
from orchestrator.services import access, catalog, inventory
from orchestrator.services.context import Context, Sources
from orchestrator.sources.proxmox import ZoneApi, agent_answers

logger = logging.getLogger(__name__)

# How long the orchestrator waits for an agent to take one image's template on (its first report).
START_TIMEOUT = 5.0
# At most this many hosts are asked at once.
HOSTS_IN_PARALLEL = 16
# A joining host's agent is asked until it answers, for this long after its enrollment: first
# JOIN_FIRST_PAUSE seconds after it, then after twice the pause before, up to JOIN_MAX_PAUSE.
JOIN_WAIT = 600.0
JOIN_FIRST_PAUSE = 1.0
JOIN_MAX_PAUSE = 30.0

# An image on a host, as the zone's /cluster/resources shows it.
CACHED = "cached"  # its template is ready: a clone needs no download
IMPORTING = "importing"  # its agent is importing it (the guest exists, not yet a template)
MISSING = "missing"  # not there: being downloaded, failed, or never asked for
UNKNOWN = "unknown"  # the zone did not answer

# Who the background start acts as: it reads the catalog and calls agents, nothing a role guards.
_SERVICE = Principal(subject="flexplane-image-cache", name="image cache", email="", roles=frozenset())


@dataclass(frozen=True)
class CacheStart:
    """One image's template asked for on one host: taken on by its agent, or why not."""

    host: str  # <zone>/<node>
    image: str
    storage: str
    problem: str | None = None
    # False when the host's agent did not answer at all (a joining host whose agent is not up yet).
    answered: bool = True

    @property
    def started(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class Published:
    """An image written to the catalog, and its caching started on the hosts (empty: nothing to start)."""

    image: Image
    caching: list[CacheStart]


@dataclass(frozen=True)
class HostImage:
    """Whether a host holds an image's template on one storage: ``CACHED``, ``IMPORTING``, ``MISSING``
    or ``UNKNOWN``."""

    host: str  # <zone>/<node>
    image: str
    storage: str
    state: str


# --------------------------------------------------------------------------------------- publishing


def create_image(ctx: Context, data: Mapping[str, Any]) -> Published:
    """Add an image to the catalog (``catalog.create_image``, offered in the VDCs ``allow_in_vdcs`` names),
    then start caching it on the hosts of those VDCs' zones."""
    image = catalog.create_image(ctx, data)
    return Published(
        image, start_caching(ctx, {(image.name, zone) for zone in offered(ctx).get(image.name, ())})
    )


def update_image(ctx: Context, name: str, changes: Mapping[str, Any]) -> Published:
    """Change an image (``catalog.update_image``); a new URL or checksum starts caching it where it is
    offered (hosts that have it already answer at once)."""
    access.require_admin(ctx)
    before = catalog.image(ctx, name)
    image = catalog.update_image(ctx, name, changes)
    if (image.source_url, image.checksum) == (before.source_url, before.checksum):
        return Published(image, [])
    return Published(
        image, start_caching(ctx, {(image.name, zone) for zone in offered(ctx).get(image.name, ())})
    )


def vdc_changed(ctx: Context, before: Vdc | None, after: Vdc) -> list[CacheStart]:
    """Start caching the images a new or changed VDC offers in zones it did not offer them in before."""
    was = _pairs(before) if before is not None else set()
    return start_caching(ctx, _pairs(after) - was)


def _pairs(vdc: Vdc) -> set[tuple[str, str]]:
    return {(image, zone) for image in vdc.images for zone in vdc.zones}


def summary(starts: Sequence[CacheStart]) -> str:
    """What caching an image did, as a sentence to follow another (its leading space included; nothing
    when nothing was to cache): on how many hosts it started, where not and why."""
    if not starts:
        return ""
    hosts = sorted({s.host for s in starts})
    failed = [s for s in starts if not s.started]
    text = f" Caching it started on {len(hosts) - len({s.host for s in failed})} of {len(hosts)} host(s)."
    if failed:
        where = "; ".join(f"{s.host} ({s.problem})" for s in failed)
        text += f" Not on {where}: the next create there starts it."
    return text


# ------------------------------------------------------------------------------------------ starting


def offered(ctx: Context) -> dict[str, set[str]]:
    """Per image, the zones where a VDC offers it: where VMs may be made of it."""
    out: dict[str, set[str]] = {}
    for vdc in catalog.objects(ctx, catalog.VDC, Vdc.from_spec):
        for image, zone in _pairs(vdc):
            out.setdefault(image, set()).add(zone)
    return out


def zone_storages(ctx: Context) -> dict[str, list[str]]:
    """The storages VMs' disks go to in each zone: those the storage profiles name there."""
    found: dict[str, set[str]] = {}
    for profile in catalog.objects(ctx, catalog.STORAGE_PROFILE, StorageProfile.from_spec):
        for zone, storage in profile.storages.items():
            found.setdefault(zone, set()).add(storage)
    return {zone: sorted(storages) for zone, storages in found.items()}


def start_caching(
    ctx: Context, pairs: Iterable[tuple[str, str]], hosts: Sequence[Host] | None = None
) -> list[CacheStart]:
    """Have the agents make each (image, zone) of ``pairs`` ready: on every host of the zone (of ``hosts``
    when given), on each storage the storage profiles name there, without waiting for it
    (``ZoneApi.start_template``): the hosts in parallel, each host's images in turn. What did not start is
    logged and returned; nothing raises. Images no longer in the catalog are left out."""
    wanted: dict[str, set[str]] = {}
    for name, zone in pairs:
        wanted.setdefault(zone, set()).add(name)
    images = {i.name: i for i in catalog.objects(ctx, catalog.IMAGE, Image.from_spec)}
    storages = zone_storages(ctx)
    work: dict[str, list[tuple[Image, str]]] = {}
    asked: list[Host] = []
    for host in catalog.hosts(ctx) if hosts is None else hosts:
        names = sorted(n for n in wanted.get(host.zone, ()) if n in images)
        todo = [(images[n], storage) for n in names for storage in storages.get(host.zone, [])]
        if todo:
            work[host.key] = todo
            asked.append(host)
    if not asked:
        return []
    apis = {zone: inventory.zone_api(ctx, zone) for zone in {host.zone for host in asked}}

    def one_host(host: Host) -> list[CacheStart]:
        return _start_on(apis[host.zone], host, work[host.key])

    with ThreadPoolExecutor(
        max_workers=min(HOSTS_IN_PARALLEL, len(asked)), thread_name_prefix="image-cache"
    ) as pool:
        starts = [start for started in pool.map(one_host, asked) for start in started]
    for start in starts:
        if not start.started:
            logger.warning(
                "image %s: caching on %s (storage %s) did not start: %s",
                start.image,
                start.host,
                start.storage,
                start.problem,
            )
    logger.info(
        "image cache: %d of %d template(s) of %s started on %d host(s)",
        sum(1 for s in starts if s.started),
        len(starts),
        ", ".join(sorted({s.image for s in starts})),
        len(asked),
    )
    return starts


def _start_on(api: ZoneApi, host: Host, work: Sequence[tuple[Image, str]]) -> list[CacheStart]:
    out: list[CacheStart] = []
    for position, (image, storage) in enumerate(work):
        try:
            api.start_template(
                host.node, image.name, image.source_url, image.checksum, storage, timeout=START_TIMEOUT
            )
            out.append(CacheStart(host.key, image.name, storage))
        except Unavailable as exc:
            # Its agent did not answer: the host's other images would wait as long for nothing.
            out += [CacheStart(host.key, i.name, s, exc.message, answered=False) for i, s in work[position:]]
            break
        except FlexPlaneError as exc:  # the agent refused this one (its URL, its checksum)
            out.append(CacheStart(host.key, image.name, storage, exc.message))
    return out


# ------------------------------------------------------------------------------------------- joining


def settled(starts: Sequence[CacheStart]) -> bool:
    """Whether a joining host's caching is done asking: every image started, or refused for a reason of
    its own (its URL, its checksum). One its agent did not answer in time (busy taking on the one before,
    or not up yet) is asked again, or the host would go without that image until its first create."""
    return all(start.answered for start in starts)


def cache_on_new_host(sources: Sources, zone: str, node: str) -> None:
    """Start caching the images offered in its zone on a host that just entered the catalog, once its agent
    answers (in the background, on the sources of the request that added it: the agent of a joining node
    starts after its enrollment has answered)."""
    threading.Thread(
        target=cache_when_up, args=(sources, zone, node), name=f"image-cache-{zone}-{node}", daemon=True
    ).start()


def cache_when_up(sources: Sources, zone: str, node: str, wait: float = JOIN_WAIT) -> list[CacheStart]:
    """Ask the host's agent to cache the images offered in its zone once it answers, trying for ``wait``
    seconds; what the last try started. Each try reads the catalog anew: a host that left it is not asked
    again. Whether the agent is up is asked on a channel of its own (``agent_answers``): the process's
    channel to an agent that is not up yet would fail the next calls of every request for seconds."""
    deadline = time.monotonic() + wait
    pause = JOIN_FIRST_PAUSE
    starts: list[CacheStart] = []
    while True:
        time.sleep(pause)  # its agent starts only once its enrollment has answered
        pause = min(pause * 2, JOIN_MAX_PAUSE)
        try:
            ctx = Context(principal=_SERVICE, sources=sources)
            host = next((h for h in catalog.hosts(ctx) if (h.zone, h.node) == (zone, node)), None)
            if host is None:
                logger.info("image cache: host %s/%s left the catalog; nothing to cache", zone, node)
                return []
            if agent_answers(host.target, START_TIMEOUT):
                pairs = {(image, zone) for image, zones in offered(ctx).items() if zone in zones}
                starts = start_caching(ctx, pairs, [host])
            else:
                starts = [CacheStart(host.key, "", "", "its agent does not answer yet", answered=False)]
        except FlexPlaneError as exc:  # the catalog could not be read: try again, as for an agent away
            logger.warning("image cache for %s/%s: %s", zone, node, exc.message)
            starts = [CacheStart(f"{zone}/{node}", "", "", exc.message, answered=False)]
        except Exception:
            logger.exception("image cache for %s/%s failed", zone, node)
            return []
        if settled(starts):
            return starts
        if time.monotonic() + pause > deadline:
            logger.warning(
                "image cache: the agent of %s/%s did not answer within %.0f s of its joining; its first "
                "create, or the next image published, starts the downloads",
                zone,
                node,
                wait,
            )
            return starts


# ------------------------------------------------------------------------------------------ reading


def host_images(ctx: Context) -> dict[str, list[HostImage]]:
    """Per host of the catalog (``<zone>/<node>``), every image offered in its zone on every storage of
    the zone, and whether the host holds its template (ADMIN). One ``/cluster/resources?type=vm`` per
    zone (``inventory.zone_templates``); a zone that did not answer leaves its hosts' images ``UNKNOWN``."""
    access.require_admin(ctx)

    def build() -> dict[str, list[HostImage]]:
        templates = inventory.zone_templates(ctx)
        storages = zone_storages(ctx)
        offers = offered(ctx)
        names = {i.name for i in catalog.objects(ctx, catalog.IMAGE, Image.from_spec)}
        out: dict[str, list[HostImage]] = {}
        for host in catalog.hosts(ctx):
            held = templates.get(host.zone)
            states: dict[tuple[str, str], str] = {}
            for template in held or ():
                if template.node == host.node and states.get((template.image, template.storage)) != CACHED:
                    states[template.image, template.storage] = CACHED if template.ready else IMPORTING
            absent = UNKNOWN if held is None else MISSING
            out[host.key] = [
                HostImage(host.key, image, storage, states.get((image, storage), absent))
                for image in sorted(n for n in names if host.zone in offers.get(n, ()))
                for storage in storages.get(host.zone, [])
            ]
        return out

    return ctx.memoize(("image-cache", "hosts"), build)


def image_hosts(ctx: Context) -> dict[str, list[HostImage]]:
    """``host_images`` by image: per image offered somewhere, each host that may take VMs of it (ADMIN)."""
    by_image: dict[str, list[HostImage]] = {}
    for held in host_images(ctx).values():
        for entry in held:
            by_image.setdefault(entry.image, []).append(entry)
    return by_image
