"""Hosts over their life: added by hand, cordon, uncordon, and removal from the catalog (``hosts.drain``
drains one). A host added (here, or by enrollment) gets its zone's offered images cached (``image_cache``).

Cordoning flips the catalog host's ``cordoned``: placement puts no new VM there, the VMs on it keep
running. Removing a host only removes its catalog entry (Proxmox is untouched), and is refused while
VMs are on it (or, unless forced, while its zone cannot say); from then on nothing dials its agent,
because every call finds its agents in the catalog. "VMs" are every QEMU guest of the node, flex.plane's
or not; templates (the images' copies on each host) are not VMs and stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from orchestrator.errors import Conflict, NotFound, Unavailable, ValidationFailed
from orchestrator.models import Host
from orchestrator.models.catalog import HOST_INPUTS as CATALOG_HOST_INPUTS
from orchestrator.services import access, catalog, image_cache, inventory, mesh
from orchestrator.services.context import Context
from orchestrator.services.hosts import records
from orchestrator.services.hosts.records import where

# ------------------------------------------------------------------------------------------ adding

# A host's inputs as this service takes them: the catalog's declaration, its Proxmox node name called
# ``host`` as everywhere above the catalog (which stores it as ``node``).
HOST_INPUTS = replace(
    CATALOG_HOST_INPUTS,
    inputs=tuple(replace(i, name="host") if i.name == "node" else i for i in CATALOG_HOST_INPUTS.inputs),
)


def add_host(ctx: Context, data: Mapping[str, Any]) -> Host:
    """Add a host by hand (``HOST_INPUTS``: its zone, host name, agent endpoint, overcommit); the images
    its zone offers are cached on it once its agent answers, as on a host that joined."""
    spec = {("node" if name == "host" else name): value for name, value in data.items()}
    try:
        host = catalog.create_host(ctx, spec)
    except ValidationFailed as exc:
        if exc.field != "node":
            raise
        raise ValidationFailed("host", exc.message) from exc
    image_cache.cache_on_new_host(ctx.sources, host.zone, host.node)
    return host


# ------------------------------------------------------------------------------------ cordon, uncordon


def host_of(ctx: Context, zone: str, host: str) -> Host:
    for found in catalog.hosts(ctx):
        if found.zone == zone and found.node == host:
            return found
    raise NotFound("host", f"{zone}/{host}")


def cordon_host(ctx: Context, zone: str, host: str) -> Host:
    """Keep new VMs off the host; the VMs on it keep running."""
    access.require_admin(ctx)
    found = host_of(ctx, zone, host)
    return found if found.cordoned else catalog.update_host(ctx, zone, host, {"cordoned": True})


def uncordon_host(ctx: Context, zone: str, host: str) -> Host:
    """Let placement use the host again; refused (``Conflict``) while a drain of it runs. Its drain
    record goes: the host is back in service."""
    access.require_admin(ctx)
    found = host_of(ctx, zone, host)
    drain = records.load(ctx, zone, host)
    if drain is not None and drain.active:
        raise Conflict(f"{where(zone, host)} is being drained: uncordon it once the drain has ended")
    if drain is not None:
        records.forget(ctx, zone, host)
    return catalog.update_host(ctx, zone, host, {"cordoned": False}) if found.cordoned else found


# ------------------------------------------------------------------------------------------ removal


def remove_host(ctx: Context, zone: str, host: str, *, force: bool = False) -> Host:
    """Remove the host from the catalog: Proxmox and the node are untouched, and flex.plane no longer
    dials its agent. Refused (``Conflict``) while VMs are on it: drain it first.

    When no host of the zone answers, whether VMs are on it cannot be told: that is ``Unavailable``,
    unless ``force`` (a dead zone, a host added with a wrong address); VMs known to be there always refuse.
    """
    access.require_admin(ctx)
    host_of(ctx, zone, host)

    def empty(_host: Host) -> None:
        try:
            vms = inventory.zone_api(ctx, zone).resources("vm").vms
        except Unavailable as exc:
            if force:
                return
            raise Unavailable(
                exc.where,
                f"cannot tell whether VMs are on {where(zone, host)}: {exc.message}; "
                "remove it with force to remove it anyway",
            ) from exc
        names = sorted(g.name or str(g.vmid) for g in vms if g.node == host)
        if names:
            count = f"{len(names)} VM" + ("s are" if len(names) > 1 else " is")
            raise Conflict(f"{count} still on {where(zone, host)} ({', '.join(names)}): drain the host first")

    removed = catalog.drop_host(ctx, zone, host, empty)
    records.forget(ctx, zone, host)
    mesh.forget(ctx.kube, zone, host)  # the hub drops its peer on its next pass: the node's key is refused
    return removed
