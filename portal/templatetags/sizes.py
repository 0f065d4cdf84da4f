"""Sizes in binary units, one way everywhere: ``{{ bytes|size }}``, ``{{ mib|size:"MiB" }}``,
``{{ gib|size:"GiB" }}`` -> ``512 MiB``, ``2 GiB``, ``1.5 TiB``.

A size is shown in the largest binary unit (KiB, MiB, GiB, TiB, PiB) in which it is at least 1, with
at most one decimal; never decimal units (kB, MB, GB), whose values differ from Proxmox's own.
"""

from __future__ import annotations

from django import template

register = template.Library()

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def size(value: float | int | str | None, unit: str = "B") -> str:
    """``value`` counted in ``unit`` (one of ``UNITS``) in the largest binary unit it fills; "—" for None."""
    if value is None or value == "":
        return "—"
    amount = float(value)
    if unit not in UNITS:
        raise ValueError(f"{unit!r} is not a binary unit ({', '.join(UNITS)})")
    step = UNITS.index(unit)
    while abs(amount) >= 1024 and step < len(UNITS) - 1:
        amount /= 1024
        step += 1
    while 0 < abs(amount) < 1 and step > 0:
        amount *= 1024
        step -= 1
    shown = f"{amount:.1f}".removesuffix(".0")
    return f"{shown} {UNITS[step]}"


register.filter("size", size)
