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
from typing import Any

from orchestrator.errors import Conflict, NotFound, Unavailable
from orchestrator.models import Host
from orchestrator.services import access, catalog, image_cache, inventory, mesh
from orchestrator.services.context import Context
from orchestrator.services.hosts import records
from orchestrator.services.hosts.records import where

# ------------------------------------------------------------------------------------------ adding


def add_host(ctx: Context, data: Mapping[str, Any]) -> Host:
    """Add a host by hand (``catalog.create_host``: its zone, node, agent endpoint, overcommit); the
    images its zone offers are cached on it once its agent answers, as on a host that joined."""
    host = catalog.create_host(ctx, data)
    image_cache.cache_on_new_host(host.zone, host.node)
    return host


# ------------------------------------------------------------------------------------ cordon, uncordon


def host_of(ctx: Context, zone: str, node: str) -> Host:
    for host in catalog.hosts(ctx):
        if host.zone == zone and host.node == node:
            return host
    raise NotFound("host", f"{zone}/{node}")


def cordon_host(ctx: Context, zone: str, node: str) -> Host:
    """Keep new VMs off the host; the VMs on it keep running."""
    access.require_admin(ctx)
    host = host_of(ctx, zone, node)
    return host if host.cordoned else catalog.update_host(ctx, zone, node, {"cordoned": True})


def uncordon_host(ctx: Context, zone: str, node: str) -> Host:
    """Let placement use the host again; refused (``Conflict``) while a drain of it runs. Its drain
    record goes: the host is back in service."""
    access.require_admin(ctx)
    host = host_of(ctx, zone, node)
    drain = records.load(ctx, zone, node)
    if drain is not None and drain.active:
        raise Conflict(f"{where(zone, node)} is being drained: uncordon it once the drain has ended")
    if drain is not None:
        records.forget(ctx, zone, node)
    return catalog.update_host(ctx, zone, node, {"cordoned": False}) if host.cordoned else host


# ------------------------------------------------------------------------------------------ removal


def remove_host(ctx: Context, zone: str, node: str, *, force: bool = False) -> Host:
    """Remove the host from the catalog: Proxmox and the node are untouched, and flex.plane no longer
    dials its agent. Refused (``Conflict``) while VMs are on it: drain it first.

    When no host of the zone answers, whether VMs are on it cannot be told: that is ``Unavailable``,
    unless ``force`` (a dead zone, a host added with a wrong address); VMs known to be there always refuse.
    """
    access.require_admin(ctx)
    host_of(ctx, zone, node)

    def empty(_host: Host) -> None:
        try:
            vms = inventory.zone_api(ctx, zone).resources("vm").vms
        except Unavailable as exc:
            if force:
                return
            raise Unavailable(
                exc.where,
                f"cannot tell whether VMs are on {where(zone, node)}: {exc.message}; "
                "remove it with force to remove it anyway",
            ) from exc
        names = sorted(g.name or str(g.vmid) for g in vms if g.node == node)
        if names:
            count = f"{len(names)} VM" + ("s are" if len(names) > 1 else " is")
            raise Conflict(f"{count} still on {where(zone, node)} ({', '.join(names)}): drain the host first")

    removed = catalog.drop_host(ctx, zone, node, empty)
    records.forget(ctx, zone, node)
    mesh.forget(ctx.kube, zone, node)  # the hub drops its peer on its next pass: the node's key is refused
    return removed
