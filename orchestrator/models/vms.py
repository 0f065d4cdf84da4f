"""Virtual machines, as Proxmox reports them in ``/cluster/resources``."""

from __future__ import annotations

import re
from typing import Any

from django.db import models

VDC_TAG_PREFIX = "fp-vdc-"
_TAG_SEPARATORS = re.compile(r"[;, ]+")


def parse_tags(raw: str | None) -> list[str]:
    """Proxmox's tag string (``a;b``; older releases also used ``,`` or spaces) as a list."""
    return [tag for tag in _TAG_SEPARATORS.split(raw or "") if tag]


def vdc_of(tags: list[str]) -> str | None:
    """The VDC a VM belongs to, from its ``fp-vdc-<vdc>`` tag; ``None`` for VMs flex.plane does not manage."""
    for tag in tags:
        if tag.startswith(VDC_TAG_PREFIX):
            return tag[len(VDC_TAG_PREFIX) :]
    return None


def vm_id(zone: str, vmid: int) -> str:
    """The global id of a VM: its zone and its Proxmox VMID."""
    return f"{zone}/{vmid}"


class VirtualMachine(models.Model):
    """A tenant's VM: a QEMU guest tagged with its VDC."""

    id = models.CharField(primary_key=True, max_length=80)
    vmid = models.PositiveIntegerField()
    name = models.CharField(max_length=63)
    status = models.CharField(max_length=16)
    zone = models.CharField(max_length=63)
    host = models.CharField(max_length=63)
    vdc = models.CharField(max_length=63)
    cores = models.PositiveIntegerField()
    memory_mb = models.PositiveIntegerField()
    disk_gb = models.FloatField()

    class Meta:
        managed = False

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @classmethod
    def from_resource(cls, zone: str, item: dict[str, Any]) -> VirtualMachine:
        """Build from one ``type=qemu`` entry of ``/cluster/resources``."""
        vmid = int(item["vmid"])
        return cls(
            id=vm_id(zone, vmid),
            vmid=vmid,
            name=item.get("name") or f"vm-{vmid}",
            status=item.get("status", "unknown"),
            zone=zone,
            host=item.get("node", ""),
            vdc=vdc_of(parse_tags(item.get("tags"))) or "",
            cores=int(item.get("maxcpu") or 0),
            memory_mb=int(item.get("maxmem") or 0) // (1024 * 1024),
            disk_gb=round(int(item.get("maxdisk") or 0) / 1024**3, 2),
        )
