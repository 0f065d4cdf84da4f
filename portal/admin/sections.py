"""The admin's sections: each kind of thing the admin area lists, adds, edits and deletes.

The catalog's kinds (compute and storage profiles, images, zones), VDCs and the Kubernetes versions
tenants' clusters are offered, each a :class:`Section` that names its form, the services that read and
change it, and the columns of its list. Images are published through ``image_cache`` (which starts
caching them on every host), and their list says which hosts have each cached. The views of
:mod:`portal.admin.views` serve every section alike; the URLs follow :data:`SECTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from orchestrator.models import Image, StorageProfile, Zone
from orchestrator.services import catalog, image_cache, vdcs
from orchestrator.services.context import Context
from portal.admin.actions import action
from portal.admin.forms import (
    AdminForm,
    ComputeProfileForm,
    ImageForm,
    KubernetesVersionForm,
    StorageProfileForm,
    VdcForm,
    ZoneForm,
)
from portal.templatetags.sizes import size


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Any], object]


@dataclass(frozen=True)
class Section:
    """One kind of thing the admin lists, adds, edits and deletes, and the services that do it."""

    kind: str  # names its URLs and its actions: "compute-profile" -> compute-profile.create, ...
    slug: str  # its URL segment under admin/
    title: str
    noun: str
    form: type[AdminForm]
    read: Callable[[Context], Sequence[Any]]
    get: Callable[[Context, str], Any]
    create: Callable[[Context, Mapping[str, Any]], Any]
    update: Callable[[Context, str, Mapping[str, Any]], Any]
    delete: Callable[[Context, str], Any]
    ident: Callable[[Any], str]  # the id of a listed object
    columns: tuple[Column, ...]
    # What deleting one means, said on the confirmation page.
    on_delete: str
    # An offering VDCs allow (a profile, an image): its deletion removes it from them, and says so.
    offering: bool = False

    def url(self, what: str, *args: str) -> str:
        return reverse(f"portal-admin:{self.kind}-{what}", args=args)

    def action(self, what: str) -> str:
        return action(f"{self.kind}.{what}")


def _limits(p: StorageProfile) -> str:
    parts = [
        f"{label} {value}"
        for label, value in (
            ("read MiB/s", p.read_mbps),
            ("write MiB/s", p.write_mbps),
            ("read IOPS", p.read_iops),
            ("write IOPS", p.write_iops),
        )
        if value is not None
    ]
    return ", ".join(parts) or "none"


@dataclass(frozen=True)
class ImageRow:
    """An image of the list, with the hosts that have it cached (``image_cache``)."""

    image: Image
    hosts: tuple[image_cache.HostImage, ...]


def _images(ctx: Context) -> list[ImageRow]:
    """The images, each with its cache per host: one read of each zone's Proxmox for the whole list."""
    images = catalog.list_images(ctx)
    by_image = image_cache.image_hosts(ctx)
    return [ImageRow(image, tuple(by_image.get(image.name, ()))) for image in images]


_CACHE_STATES = (
    (image_cache.CACHED, "cached on"),
    (image_cache.IMPORTING, "importing on"),
    (image_cache.MISSING, "not yet on"),
    (image_cache.UNKNOWN, "unknown on"),
)


def _external_network(zone: Zone) -> str:
    """Where the zone's edge gateways have their uplink, or that it has none (no public IPs there)."""
    if not zone.has_external_network:
        return "none: no edge gateways or public IPs"
    vlan = f", VLAN {zone.external_vlan}" if zone.external_vlan else ""
    return f"{zone.external_cidr} on {zone.external_bridge}{vlan}"


def _cached_on(row: ImageRow) -> str:
    """Where the image is cached, and where not yet, host by host (with the storage where a zone has more
    than one)."""
    storages: dict[str, set[str]] = {}
    for entry in row.hosts:
        storages.setdefault(entry.host, set()).add(entry.storage)

    def named(entry: image_cache.HostImage) -> str:
        return f"{entry.host} ({entry.storage})" if len(storages[entry.host]) > 1 else entry.host

    parts = []
    for state, words in _CACHE_STATES:
        hosts = [named(e) for e in row.hosts if e.state == state]
        if hosts:
            parts.append(f"{words} {', '.join(hosts)}")
    return "; ".join(parts) or "no host takes VMs yet"


def _of(used: int, allowed: int, unit: str = "") -> str:
    """Used of allowed: sizes (``unit`` MiB or GiB) in binary units, counts as they are."""
    if unit:
        return f"{size(used, unit)} of {size(allowed, unit)}"
    return f"{used} of {allowed}"


SECTIONS: dict[str, Section] = {
    s.kind: s
    for s in (
        Section(
            kind="compute-profile",
            slug="compute-profiles",
            title="Compute profiles",
            noun="compute profile",
            form=ComputeProfileForm,
            read=catalog.list_compute_profiles,
            get=catalog.compute_profile,
            create=catalog.create_compute_profile,
            update=catalog.update_compute_profile,
            delete=catalog.delete_compute_profile,
            ident=lambda p: p.name,
            columns=(
                Column("Name", lambda p: p.name),
                Column("vCPUs", lambda p: p.vcpus),
                Column("Memory", lambda p: size(p.memory_mib, "MiB")),
                Column("CPU type", lambda p: p.cpu_type),
                Column("Description", lambda p: p.description),
            ),
            on_delete="It leaves the catalog: no new VM can use it. VMs made from it keep running, "
            "with their size.",
            offering=True,
        ),
        Section(
            kind="storage-profile",
            slug="storage-profiles",
            title="Storage profiles",
            noun="storage profile",
            form=StorageProfileForm,
            read=catalog.list_storage_profiles,
            get=catalog.storage_profile,
            create=catalog.create_storage_profile,
            update=catalog.update_storage_profile,
            delete=catalog.delete_storage_profile,
            ident=lambda p: p.name,
            columns=(
                Column("Name", lambda p: p.name),
                Column("Storages", lambda p: ", ".join(f"{z}: {s}" for z, s in p.storages.items())),
                Column(
                    "Disk sizes",
                    lambda p: (
                        f"{size(p.min_gb, 'GiB')} to {size(p.max_gb, 'GiB')} "
                        f"(default {size(p.default_gb, 'GiB')})"
                    ),
                ),
                Column("Bus / format", lambda p: f"{p.bus} / {p.format}"),
                Column("I/O limits", _limits),
            ),
            on_delete="It leaves the catalog: no new disk can use it. Existing disks are untouched.",
            offering=True,
        ),
        Section(
            kind="image",
            slug="images",
            title="Images",
            noun="image",
            form=ImageForm,
            read=_images,
            get=catalog.image,
            create=image_cache.create_image,
            update=image_cache.update_image,
            delete=catalog.delete_image,
            ident=lambda r: r.image.name,
            columns=(
                Column("Name", lambda r: r.image.name),
                Column("OS", lambda r: r.image.os_family),
                Column("User", lambda r: r.image.default_user),
                Column("Smallest disk", lambda r: size(r.image.min_disk_gb, "GiB")),
                Column("Source", lambda r: r.image.source_url),
                Column("Hosts", _cached_on),
            ),
            on_delete="It leaves the catalog: no new VM can use it. VMs made from it keep running, and "
            "templates already on hosts stay there.",
            offering=True,
        ),
        Section(
            kind="zone",
            slug="zones",
            title="Zones",
            noun="zone",
            form=ZoneForm,
            read=catalog.list_zones,
            get=catalog.zone,
            create=catalog.create_zone,
            update=catalog.update_zone,
            delete=catalog.delete_zone,
            ident=lambda z: z.id,
            columns=(
                Column("Id", lambda z: z.id),
                Column("Name", lambda z: z.name),
                Column("Description", lambda z: z.description),
                Column("External network", _external_network),
            ),
            on_delete="flex.plane stops using this Proxmox cluster. It is refused while the zone has "
            "hosts, or VDCs or storage profiles name it.",
        ),
        Section(
            kind="vdc",
            slug="vdcs",
            title="VDCs",
            noun="VDC",
            form=VdcForm,
            read=vdcs.list_vdcs,
            get=vdcs.get_vdc,
            create=vdcs.create_vdc,
            update=vdcs.update_vdc,
            delete=vdcs.delete_vdc,
            ident=lambda u: u.vdc.id,
            columns=(
                Column("Id", lambda u: u.vdc.id),
                Column("Name", lambda u: u.vdc.name),
                Column("Zones", lambda u: ", ".join(u.vdc.zones) or "none"),
                Column("VMs", lambda u: _of(u.usage.vms, u.vdc.quota_vms)),
                Column("vCPUs", lambda u: _of(u.usage.vcpus, u.vdc.quota_vcpus)),
                Column("Memory", lambda u: _of(u.usage.memory_mib, u.vdc.quota_memory_mib, "MiB")),
                Column("Disk", lambda u: _of(u.usage.disk_gb, u.vdc.quota_disk_gb, "GiB")),
            ),
            on_delete="Its Proxmox pool is deleted in each of its zones. It is refused while the VDC "
            "has VMs.",
        ),
        Section(
            kind="kubernetes-version",
            slug="kubernetes-versions",
            title="Kubernetes versions",
            noun="Kubernetes version",
            form=KubernetesVersionForm,
            read=catalog.list_kubernetes_versions,
            get=catalog.kubernetes_version,
            create=catalog.create_kubernetes_version,
            update=catalog.update_kubernetes_version,
            delete=catalog.delete_kubernetes_version,
            ident=lambda v: v.version,
            columns=(
                Column("Version", lambda v: v.version),
                Column("Node image", lambda v: v.image),
            ),
            on_delete="New clusters can no longer choose it. Clusters running it keep running.",
        ),
    )
}
