"""A VM's RRD usage data, which fakepve answers only from its schema (a value of no use to a graph).

``GET /nodes/{node}/qemu/{vmid}/rrddata?timeframe=...&cf=...`` answers as Proxmox does: about 70 rows,
one per step of the time frame (a minute for an hour, half an hour for a day, ...), each with ``time``
and the averages over that step: ``cpu`` (a fraction of ``maxcpu`` cores), ``mem``/``maxmem`` and
``disk``/``maxdisk`` in bytes, ``diskread``/``diskwrite``/``netin``/``netout`` in bytes per second.
A stopped guest's rows carry ``time`` alone, as Proxmox's do where it has no data. The values follow a
smooth curve of the time and the VM id, so a graph has a shape and tests can expect it. ``rrd_reads``
counts the reads, for the tests' budget of one Proxmox call per graph range.
"""

from __future__ import annotations

import math
import time
from typing import Any

from fakepve import PveError

# Proxmox's steps per time frame (PVE::RRD): about 70 rows each.
STEPS = {"hour": 60, "day": 1800, "week": 10800, "month": 43200, "year": 604800}
ROWS = 70
MIB = 1024 * 1024


def _size_bytes(drive: str) -> int:
    for part in str(drive).split(","):
        if part.startswith("size="):
            number, unit = part[5:-1], part[-1]
            factor = {"K": 1024, "M": MIB, "G": 1024 * MIB, "T": 1024 * 1024 * MIB}.get(unit)
            if factor is None:
                return int(part[5:]) if part[5:].isdigit() else 0
            try:
                return int(float(number) * factor)
            except ValueError:
                return 0
    return 0


def usage_rows(vm: Any, timeframe: str, now: float) -> list[dict[str, Any]]:
    """The rows Proxmox's rrddata answers for vm over timeframe, the last one ending at now."""
    step = STEPS[timeframe]
    last = int(now // step) * step
    cores = int(vm.config.get("cores", 1) or 1) * int(vm.config.get("sockets", 1) or 1)
    maxmem = int(vm.config.get("memory", 512) or 512) * MIB
    maxdisk = sum(
        _size_bytes(value)
        for key, value in vm.config.items()
        if key.startswith(("scsi", "virtio", "sata", "ide")) and "media=cdrom" not in str(value)
    )
    running = vm.status == "running"
    rows = []
    for index in range(ROWS):
        at = last - (ROWS - 1 - index) * step
        row: dict[str, Any] = {"time": at}
        if running:
            wave = 0.5 + 0.5 * math.sin(at / (step * 9) + vm.vmid)
            row.update(
                cpu=round(0.05 + 0.4 * wave, 4),
                maxcpu=cores,
                mem=int(maxmem * (0.25 + 0.3 * wave)),
                maxmem=maxmem,
                disk=0,
                maxdisk=maxdisk,
                diskread=round(2048 * wave, 2),
                diskwrite=round(8192 * (1 - wave), 2),
                netin=round(1500 * wave, 2),
                netout=round(900 * (1 - wave) + 100, 2),
            )
        rows.append(row)
    return rows


class UsageRrd:
    """A mixin placed before ``FakePve`` in the harness's bases (``devstack.fakezones.HarnessPve``)."""

    # How many rrddata reads this zone answered.
    rrd_reads = 0

    def _routes_qemu_rrddata(self) -> list[tuple[str, str, Any]]:
        return [("GET", "/nodes/{node}/qemu/{vmid}/rrddata", self._qemu_rrddata)]

    async def _qemu_rrddata(self, values: dict[str, Any], user: str) -> Any:
        vm = self.find(values["node"], int(values["vmid"]))  # type: ignore[attr-defined]  # FakePve's
        timeframe = str(values.get("timeframe", ""))
        if timeframe not in STEPS:
            raise PveError(400, "Parameter verification failed.", {"timeframe": "value is not in enum"})
        self.rrd_reads += 1
        return usage_rows(vm, timeframe, time.time())
