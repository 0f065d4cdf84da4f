"""An edge gateway's counters in words: ``{% for c in state.counters|gateway_counters %}{{ c }}{% endfor %}``.

The agent reports each nftables counter of a gateway as ``<name>_bytes`` and ``<name>_packets``
(``agent.gateways.net``): each name becomes one reading, its bytes in binary units (the ``size`` filter)
and its packets counted with thousands separators, e.g. ``outbound 27.4 GiB (1,234,567 packets)``. A
page reads the counters once, so it shows no rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django import template

from portal.templatetags.sizes import size

register = template.Library()

# The gateway's counters (agent/gateways/rules.py), in the words of the page; another name is shown as it is.
LABELS = {"ingress": "inbound", "egress": "outbound", "dropped": "dropped"}
ORDER = tuple(LABELS)


@dataclass(frozen=True)
class Reading:
    """One named counter: what went through it, in bytes and packets (None: not reported); ``count``, a
    value of another kind, shown as a number."""

    name: str
    bytes: int | None = None
    packets: int | None = None
    count: int | None = None

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name.replace("_", " "))

    @property
    def amount(self) -> str:
        """``27.4 GiB (1,234,567 packets)``: what was reported of it."""
        packets = (
            None if self.packets is None else f"{self.packets:,} packet{'' if self.packets == 1 else 's'}"
        )
        if self.bytes is not None:
            return size(self.bytes) + ("" if packets is None else f" ({packets})")
        if packets is not None:
            return packets
        return "" if self.count is None else f"{self.count:,}"

    def __str__(self) -> str:
        return f"{self.label} {self.amount}"


def gateway_counters(counters: Mapping[str, int] | None) -> list[Reading]:
    """The counters as readings, the gateway's own first (inbound, outbound, dropped), then any other by
    name."""
    found: dict[str, dict[str, int]] = {}
    for key, value in (counters or {}).items():
        name, _, kind = key.rpartition("_")
        if kind in ("bytes", "packets") and name:
            found.setdefault(name, {})[kind] = int(value)
        else:
            found.setdefault(key, {})["count"] = int(value)
    names = sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    return [Reading(n, **found[n]) for n in names]


register.filter("gateway_counters", gateway_counters)
