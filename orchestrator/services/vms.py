"""Virtual machines: listing (the lifecycle comes with the VM issue)."""

from __future__ import annotations

import base64
import binascii
import heapq
import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from orchestrator.errors import ValidationFailed
from orchestrator.models import VirtualMachine
from orchestrator.models.vms import parse_tags, vdc_of
from orchestrator.services import access, inventory
from orchestrator.services.context import Context

DEFAULT_PAGE_SIZE = 50

SortKey = tuple[str, str, int]


@dataclass(frozen=True)
class Page:
    """One page of a listing, with keyset cursors (stable while VMs come and go)."""

    items: list[VirtualMachine]
    cursors: list[str]
    has_next: bool

    @property
    def end_cursor(self) -> str | None:
        return self.cursors[-1] if self.cursors else None


def encode_cursor(key: SortKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str) -> SortKey:
    try:
        name, zone, vmid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return (str(name), str(zone), int(vmid))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ValidationFailed("after", "'after' is not a cursor this API handed out") from None


def _sort_key(zone: str, item: dict[str, Any]) -> SortKey:
    return (str(item.get("name") or ""), zone, int(item["vmid"]))


def list_vms(ctx: Context, first: int | None = None, after: str | None = None) -> Page:
    """The VMs of the VDCs the request may see, sorted by name, one Proxmox call per zone."""
    size = DEFAULT_PAGE_SIZE if first is None else first
    if not 1 <= size <= settings.FLEXPLANE_PAGE_SIZE_MAX:
        raise ValidationFailed("first", f"'first' must be between 1 and {settings.FLEXPLANE_PAGE_SIZE_MAX}")
    start = decode_cursor(after) if after else None
    vdcs = access.visible_vdcs(ctx)

    rows: list[tuple[SortKey, str, dict[str, Any]]] = []
    for zone, guests in inventory.zone_resources(ctx).guests.items():
        for item in guests:
            vdc = vdc_of(parse_tags(item.get("tags")))
            if vdc is None or (vdcs is not None and vdc not in vdcs):
                continue
            key = _sort_key(zone, item)
            if start is None or key > start:
                rows.append((key, zone, item))
    # Only the page (and one more, to know whether another follows) is sorted and built.
    page = heapq.nsmallest(size + 1, rows, key=lambda row: row[0])
    return Page(
        items=[VirtualMachine.from_resource(zone, item) for _, zone, item in page[:size]],
        cursors=[encode_cursor(key) for key, _, _ in page[:size]],
        has_next=len(page) > size,
    )
