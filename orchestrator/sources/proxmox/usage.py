"""A VM's usage over time, from Proxmox's RRD (``/nodes/{node}/qemu/{vmid}/rrddata``), as typed values.

Proxmox keeps about 70 averaged rows per time frame (``hour``: a row a minute, ``day``: half an hour,
``week``: three hours, ``month``: twelve, ``year``: a week). A row where Proxmox has no data (the guest
was off) carries its time alone: its values are ``None`` here, a gap in a graph rather than a zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TIMEFRAMES = ("hour", "day", "week", "month", "year")


def _number(row: dict[str, Any], key: str) -> float | None:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and number >= 0 else None  # NaN and negatives are no data


@dataclass(frozen=True)
class UsageSample:
    """One row: its time (Unix seconds) and the averages over its step; ``None`` where Proxmox had none.

    ``cpu`` is the fraction of the VM's ``cores`` in use (0 to 1); memory in bytes; the rates in bytes
    per second.
    """

    time: int
    cpu: float | None = None
    cores: int = 0
    memory: float | None = None
    memory_total: float | None = None
    disk_read: float | None = None
    disk_write: float | None = None
    net_in: float | None = None
    net_out: float | None = None

    @classmethod
    def parse(cls, row: dict[str, Any]) -> UsageSample | None:
        at = _number(row, "time")
        if at is None:
            return None
        cores = _number(row, "maxcpu")
        return cls(
            time=int(at),
            cpu=_number(row, "cpu"),
            cores=int(cores or 0),
            memory=_number(row, "mem"),
            memory_total=_number(row, "maxmem"),
            disk_read=_number(row, "diskread"),
            disk_write=_number(row, "diskwrite"),
            net_in=_number(row, "netin"),
            net_out=_number(row, "netout"),
        )


@dataclass(frozen=True)
class VmUsage:
    """The rows of one time frame, oldest first."""

    timeframe: str
    samples: tuple[UsageSample, ...]

    @classmethod
    def parse(cls, timeframe: str, data: Any) -> VmUsage:
        rows = data if isinstance(data, list) else []
        samples = [s for row in rows if isinstance(row, dict) and (s := UsageSample.parse(row)) is not None]
        return cls(timeframe, tuple(sorted(samples, key=lambda s: s.time)))
