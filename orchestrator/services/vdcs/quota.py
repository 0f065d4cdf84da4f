"""A VDC's quota: what its VMs and volumes use, read now from every zone, against its limits.

For a decision (the quota, under the VDC's lock, ``services.locks.vdc_lock``): ``/cluster/resources``
read now, never from the request's memo, whose tags hold the size each create or resize asked for
(``fp-req``), so that a VM being made counts at that size. A zone that does not answer makes the decision
``Unavailable``.

Networks and gateways check their quotas here (giving what they hold as ``current``), so this module
imports nothing of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from orchestrator.errors import QuotaExceeded, Unavailable
from orchestrator.models import Usage, Vdc
from orchestrator.models.vms import vdc_in
from orchestrator.services import catalog
from orchestrator.services.context import Context
from orchestrator.services.vdcs.definitions import get_vdc
from orchestrator.sources.proxmox import Guest

# vdc id -> zone -> what its VMs there use
Tally = dict[str, dict[str, Usage]]


def tally(guests: Mapping[str, Iterable[Guest]]) -> Tally:
    """Per VDC and zone, what its VMs use (``guests``: each zone's VMs)."""
    out: Tally = {}
    for zone, vms in guests.items():
        for guest in vms:
            vdc = vdc_in(guest.tags)
            if vdc is None:
                continue
            per_zone = out.setdefault(vdc, {})
            per_zone[zone] = per_zone.get(zone, Usage()) + Usage.of_guest(guest)
    return out


def fresh_tally(ctx: Context, why: str) -> Tally:
    """Every VDC's usage read now, not from the request's memo; ``Unavailable`` unless every zone answered."""
    fan = ctx.proxmox.cluster_resources(catalog.zone_targets(ctx))
    if fan.failures:
        zone, failure = next(iter(sorted(fan.failures.items())))
        missing = ", ".join(sorted(fan.failures))
        raise Unavailable(zone, f"cannot {why}: zone(s) {missing} did not answer ({failure.message})")
    return tally({zone: (*resources.vms, *resources.holders) for zone, resources in fan.results.items()})


def zones_total(per_zone: Mapping[str, Usage]) -> Usage:
    """The usage of every zone, added up."""
    out = Usage()
    for usage in per_zone.values():
        out = out + usage
    return out


def vms_by_zone(counted: Tally, vdc_id: str) -> dict[str, int]:
    """How many VMs the VDC has in each zone where it has any."""
    return {zone: u.vms for zone, u in counted.get(vdc_id, {}).items() if u.vms}


def fresh_usage(ctx: Context, vdc_id: str) -> Usage:
    """What the VDC's VMs use, read from every zone now; ``Unavailable`` if a zone does not answer.

    For decisions (quota), taken under the VDC's lock: never from a read made before the lock.
    """
    get_vdc(ctx, vdc_id)
    return zones_total(fresh_tally(ctx, f"count what VDC {vdc_id!r} uses").get(vdc_id, {}))


def check_quota(ctx: Context, vdc: Vdc, add: Usage, *, current: Usage | None = None) -> Usage:
    """Refuse (``QuotaExceeded``) unless the VDC's usage plus ``add`` fits its quota; the usage after.

    ``current`` defaults to the usage read from Proxmox now (call this under ``locks.vdc_lock``).
    Only the resources ``add`` grows are checked, so that a VDC already over a quota an admin
    lowered may still shrink. The message says which resources, and by how much.
    """
    used = current if current is not None else fresh_usage(ctx, vdc.id)
    after = used + add
    over: list[str] = []
    for attr, label, unit in Usage.RESOURCES:
        asked, limit, total = getattr(add, attr), getattr(vdc.quota, attr), getattr(after, attr)
        if asked > 0 and total > limit:
            over.append(
                f"{label} by {total - limit}{unit} "
                f"({getattr(used, attr)}{unit} used + {asked}{unit} requested > {limit}{unit} allowed)"
            )
    if over:
        raise QuotaExceeded(f"this would exceed the quota of VDC {vdc.id!r}: {'; '.join(over)}")
    return after
