"""A VM's usage graphs (CPU, memory, disk and network), drawn here as inline SVG: no chart library.

``/vdc/<vdc>/vms/<zone>/<vmid>/usage/?timeframe=hour`` answers the fragment ``_usage.html`` that the
VM's page loads once it is shown (htmx), and each time frame link swaps it: one Proxmox read of the VM's
RRD per time frame shown (``services.usage.vm_usage``).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from orchestrator.errors import Unavailable, UpstreamFailure
from orchestrator.models.vms import vm_id
from orchestrator.services import usage
from orchestrator.services.context import Context
from orchestrator.sources.proxmox.usage import TIMEFRAMES, UsageSample, VmUsage
from portal.context import vdc_view

# The drawing's own coordinates (the SVG scales to its box).
WIDTH, HEIGHT = 300.0, 100.0
# Series colours: Tailwind's sky-700 and amber-600.
FIRST, SECOND = "#0369a1", "#d97706"
LABELS = {"hour": "Hour", "day": "Day", "week": "Week", "month": "Month", "year": "Year"}


@dataclass(frozen=True)
class Series:
    name: str
    colour: str
    # One polyline's points per run of samples with data (a gap where Proxmox had none).
    lines: tuple[str, ...]
    latest: str


@dataclass(frozen=True)
class Graph:
    key: str
    title: str
    top: str  # what the top of the graph stands for
    series: tuple[Series, ...]

    @property
    def empty(self) -> bool:
        return not any(s.lines for s in self.series)


def _bytes(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _rate(value: float) -> str:
    return f"{_bytes(value)}/s"


def _lines(
    samples: Sequence[UsageSample], value: Callable[[UsageSample], float | None], top: float
) -> tuple[str, ...]:
    """Polyline points of the samples that have a value, split where one has none."""
    if len(samples) < 2 or top <= 0:
        return ()
    first, last = samples[0].time, samples[-1].time
    span = max(last - first, 1)
    runs: list[list[str]] = [[]]
    for sample in samples:
        number = value(sample)
        if number is None:
            if runs[-1]:
                runs.append([])
            continue
        x = (sample.time - first) / span * WIDTH
        y = HEIGHT - min(number / top, 1.0) * HEIGHT
        runs[-1].append(f"{x:.1f},{y:.1f}")
    return tuple(" ".join(run) for run in runs if len(run) >= 2)


def _latest(
    samples: Sequence[UsageSample], value: Callable[[UsageSample], float | None], show: Callable[[float], str]
) -> str:
    for sample in reversed(samples):
        number = value(sample)
        if number is not None:
            return show(number)
    return "no data"


def _peak(samples: Sequence[UsageSample], *values: Callable[[UsageSample], float | None]) -> float:
    found = [n for s in samples for value in values if (n := value(s)) is not None]
    return max(found, default=0.0)


def _nice(value: float) -> float:
    """A round top for a rate graph, at or above value (1, 2, 5 times a power of ten; at least 1 KiB)."""
    top = 1024.0
    while top < value:
        for factor in (2, 2.5, 2):
            top *= factor
            if top >= value:
                break
    return top


def graphs(data: VmUsage) -> list[Graph]:
    """The four graphs of a VM's usage: CPU (of all its cores), memory (of its memory), disk and network."""
    samples = data.samples
    cores = max((s.cores for s in samples), default=0)
    memory_total = _peak(samples, lambda s: s.memory_total)

    def cpu(s: UsageSample) -> float | None:
        return s.cpu

    def memory(s: UsageSample) -> float | None:
        return s.memory

    disk_top = _nice(_peak(samples, lambda s: s.disk_read, lambda s: s.disk_write))
    net_top = _nice(_peak(samples, lambda s: s.net_in, lambda s: s.net_out))

    def rates(
        key: str,
        title: str,
        top: float,
        names: tuple[str, str],
        values: tuple[Callable[[UsageSample], float | None], Callable[[UsageSample], float | None]],
    ) -> Graph:
        return Graph(
            key,
            title,
            _rate(top),
            tuple(
                Series(name, colour, _lines(samples, value, top), _latest(samples, value, _rate))
                for name, colour, value in zip(names, (FIRST, SECOND), values, strict=True)
            ),
        )

    return [
        Graph(
            "cpu",
            "CPU",
            f"100 % of {cores} core{'s' if cores != 1 else ''}" if cores else "100 %",
            (
                Series(
                    "used",
                    FIRST,
                    _lines(samples, cpu, 1.0),
                    _latest(samples, cpu, lambda n: f"{n * 100:.1f} %"),
                ),
            ),
        ),
        Graph(
            "memory",
            "Memory",
            _bytes(memory_total) if memory_total else "no data",
            (Series("used", FIRST, _lines(samples, memory, memory_total), _latest(samples, memory, _bytes)),),
        ),
        rates(
            "disk", "Disk I/O", disk_top, ("read", "write"), (lambda s: s.disk_read, lambda s: s.disk_write)
        ),
        rates("network", "Network", net_top, ("in", "out"), (lambda s: s.net_in, lambda s: s.net_out)),
    ]


def _when(seconds: int) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


@vdc_view
def vm_usage(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """The usage fragment of a VM's page, for ``?timeframe=`` (hour by default)."""
    timeframe = request.GET.get("timeframe", "hour")
    if timeframe not in TIMEFRAMES:
        timeframe = "hour"
    context: dict[str, object] = {
        "zone": zone,
        "vmid": vmid,
        "timeframe": timeframe,
        "timeframes": [(key, LABELS[key]) for key in TIMEFRAMES],
    }
    try:
        data = usage.vm_usage(ctx, vm_id(zone, vmid), timeframe)
    except (Unavailable, UpstreamFailure) as exc:
        context["problem"] = exc.message
        return render(request, "portal/vms/_usage.html", context)
    samples = data.samples
    context.update(
        graphs=graphs(data),
        width=int(WIDTH),
        height=int(HEIGHT),
        since=_when(samples[0].time) if samples else "",
        until=_when(samples[-1].time) if samples else "",
    )
    return render(request, "portal/vms/_usage.html", context)
