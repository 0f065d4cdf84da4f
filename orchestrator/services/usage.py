"""A VM's usage graphs' data: who may read it, and one Proxmox read per time frame."""

from __future__ import annotations

from orchestrator.errors import ValidationFailed
from orchestrator.services.context import Context
from orchestrator.services.vms.listing import locate
from orchestrator.sources.proxmox.usage import TIMEFRAMES, VmUsage


def vm_usage(ctx: Context, ident: str, timeframe: str = "hour") -> VmUsage:
    """The VM's CPU, memory, disk and network use over ``timeframe`` (hour, day, week, month, year).

    Needs USER or ADMIN and membership of the VM's VDC; another VDC's VM is NotFound, exactly like a
    missing one. Two Proxmox calls: the zone's guests (where the VM is, whose it is), then its RRD.
    """
    if timeframe not in TIMEFRAMES:
        raise ValidationFailed("timeframe", f"the time frame must be one of {', '.join(TIMEFRAMES)}")
    api, vm = locate(ctx, ident)
    return api.usage(vm.host, vm.vmid, timeframe)
