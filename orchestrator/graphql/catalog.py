"""The platform catalog's offerings: compute and storage profiles, and images (zones and hosts:
``graphql.zones`` and ``graphql.hosts``).

Reading needs USER or ADMIN; every mutation needs ADMIN (a caller without it gets a top-level
FORBIDDEN error). A mutation's expected failures are data: ``errors { field message code }``.
A create may allow the new offering in VDCs (``allowInVdcs``); a delete removes it from the VDCs
that allowed it and names them (``removedFromVdcs``): the service decides both. Publishing an image
(``createImage``, ``updateImage`` of its URL or checksum) starts caching it on the hosts of the zones
that offer it and says where it started (``caching``: ``services.image_cache``).
"""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.graphql.core import ADMIN, ServiceMutation, flexplane
from orchestrator.graphql.errors import domain_errors, error_code_enum, error_type
from orchestrator.graphql.inputs import input_type
from orchestrator.models import ComputeProfile as ComputeProfileModel
from orchestrator.models import Image as ImageModel
from orchestrator.models import StorageProfile as StorageProfileModel
from orchestrator.models.catalog import COMPUTE_PROFILE_INPUTS, IMAGE_INPUTS, STORAGE_PROFILE_INPUTS
from orchestrator.services import catalog, image_cache
from orchestrator.services.catalog import Withdrawn
from orchestrator.services.image_cache import CacheStart, Published

CatalogErrorCode = error_code_enum("CatalogErrorCode")
CatalogError = error_type("CatalogError", CatalogErrorCode)


# ------------------------------------------------------------------------------------------ types


class ComputeProfile(graphene.ObjectType):
    """A VM size offered by the platform."""

    name = graphene.String(required=True)
    vcpus = graphene.Int(required=True, description="Virtual CPUs.")
    memory_mib = graphene.Int(required=True, description="Memory, MiB.")
    cpu_type = graphene.String(required=True, description="The CPU model QEMU presents, e.g. x86-64-v2-AES.")
    description = graphene.String(required=True)


class ZoneStorage(graphene.ObjectType):
    """The Proxmox storage a storage profile uses in one zone."""

    zone = graphene.String(required=True)
    storage = graphene.String(required=True, description="The Proxmox storage id, e.g. local-lvm.")


class StorageProfile(graphene.ObjectType):
    """Where and how a VM's disk lives."""

    name = graphene.String(required=True)
    storages = graphene.List(
        graphene.NonNull(ZoneStorage), required=True, description="The storage in each zone it is offered in."
    )
    default_gb = graphene.Int(required=True, description="Disk size when none is asked for, GiB.")
    min_gb = graphene.Int(required=True, description="Smallest disk, GiB.")
    max_gb = graphene.Int(required=True, description="Largest disk, GiB.")
    bus = graphene.String(required=True, description="Disk bus: scsi, virtio or sata.")
    format = graphene.String(required=True, description="Disk format: raw or qcow2.")
    read_mbps = graphene.Int(description="Read bandwidth limit, MiB/s (null: unlimited).")
    write_mbps = graphene.Int(description="Write bandwidth limit, MiB/s (null: unlimited).")
    read_iops = graphene.Int(description="Read IOPS limit (null: unlimited).")
    write_iops = graphene.Int(description="Write IOPS limit (null: unlimited).")
    description = graphene.String(required=True)

    @staticmethod
    def resolve_storages(profile: StorageProfileModel, info: graphene.ResolveInfo) -> list[ZoneStorage]:
        return [ZoneStorage(zone=zone, storage=storage) for zone, storage in sorted(profile.storages.items())]


class Image(graphene.ObjectType):
    """An OS image VMs are made from."""

    name = graphene.String(required=True)
    os_family = graphene.String(
        required=True,
        description="debian, ubuntu, rhel, rocky, alma, fedora, centos, opensuse, windows or other.",
    )
    source_url = graphene.String(required=True, description="Where hosts download it from (http or https).")
    checksum = graphene.String(required=True, description="sha256:<hex> or sha512:<hex>.")
    default_user = graphene.String(required=True, description="The login user cloud-init sets up.")
    min_disk_gb = graphene.Int(required=True, description="The smallest disk it fits on, GiB.")
    description = graphene.String(required=True)


class ImageCaching(graphene.ObjectType):
    """An image's caching on one host: its agent asked to make the image's template ready on a storage
    (it downloads and imports it in the background; the hosts' imageCache shows when it is there)."""

    host = graphene.ID(required=True, description="<zone>/<name> of the host.")
    storage = graphene.String(required=True, description="The Proxmox storage the template goes to.")
    started = graphene.Boolean(
        required=True, description="Whether the host's agent took it on (false: no answer, or refused)."
    )
    message = graphene.String(description="Why it did not start; null when it did.")

    @staticmethod
    def resolve_message(start: CacheStart, info: graphene.ResolveInfo) -> str | None:
        return start.problem


# ----------------------------------------------------------------------------------------- inputs


class ZoneStorageInput(graphene.InputObjectType):
    zone = graphene.String(required=True, description="A zone id.")
    storage = graphene.String(required=True, description="The Proxmox storage id in that zone.")


def _allowing(name: str, generated: type[graphene.InputObjectType]) -> type[graphene.InputObjectType]:
    """A create input: the kind's declared fields, and the VDCs to allow the new offering in."""
    allow_in_vdcs = graphene.List(
        graphene.NonNull(graphene.ID),
        description="The VDCs to offer it in, as it is created (default: none; a VDC's own allow "
        "lists can add it later).",
    )
    return type(name, (generated,), {"allow_in_vdcs": allow_in_vdcs, "__doc__": generated.__doc__})


ComputeProfileInput = _allowing(
    "ComputeProfileInput", input_type("ComputeProfileInputFields", COMPUTE_PROFILE_INPUTS)
)
ComputeProfileUpdateInput = input_type("ComputeProfileUpdateInput", COMPUTE_PROFILE_INPUTS, update=True)
StorageProfileInput = _allowing(
    "StorageProfileInput",
    input_type("StorageProfileInputFields", STORAGE_PROFILE_INPUTS, lists={"storages": ZoneStorageInput}),
)
StorageProfileUpdateInput = input_type(
    "StorageProfileUpdateInput",
    STORAGE_PROFILE_INPUTS,
    update=True,
    lists={"storages": ZoneStorageInput},
    doc="The fields to change; those left out keep their value. A limit set to null is removed.",
)
ImageInput = _allowing("ImageInput", input_type("ImageInputFields", IMAGE_INPUTS))
ImageUpdateInput = input_type("ImageUpdateInput", IMAGE_INPUTS, update=True)


# -------------------------------------------------------------------------------------- mutations


class Withdraw(ServiceMutation):
    """A delete of an offering: the offering as it was, and the VDCs it was removed from."""

    class Meta:
        abstract = True

    removed_from_vdcs = graphene.List(
        graphene.NonNull(graphene.ID),
        required=True,
        description="The VDCs that allowed it until now: it was removed from their allow lists.",
    )

    @classmethod
    def answer(cls, result: Withdrawn[Any]) -> dict[str, Any]:
        return {**super().answer(result.offering), "removed_from_vdcs": result.vdcs}

    @classmethod
    def failed(cls, exc: Exception) -> dict[str, Any]:
        return {"removed_from_vdcs": []}


class CreateComputeProfile(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, catalog.create_compute_profile, "compute_profile", CatalogError
        description = "Add a compute profile."

    class Arguments:
        input = ComputeProfileInput(required=True)

    compute_profile = graphene.Field(ComputeProfile)


class UpdateComputeProfile(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, catalog.update_compute_profile, "compute_profile", CatalogError
        description = "Change a compute profile; VMs already made keep their size."

    class Arguments:
        name = graphene.String(required=True)
        input = ComputeProfileUpdateInput(required=True)

    compute_profile = graphene.Field(ComputeProfile)


class DeleteComputeProfile(Withdraw):
    class Meta:
        role, service, result, error = ADMIN, catalog.delete_compute_profile, "compute_profile", CatalogError
        description = (
            "Remove a compute profile from the catalog "
            "and the VDCs that allow it; VMs made from it keep running."
        )

    class Arguments:
        name = graphene.String(required=True)

    compute_profile = graphene.Field(ComputeProfile, description="The profile as it was.")


class CreateStorageProfile(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, catalog.create_storage_profile, "storage_profile", CatalogError
        description = "Add a storage profile."

    class Arguments:
        input = StorageProfileInput(required=True)

    storage_profile = graphene.Field(StorageProfile)


class UpdateStorageProfile(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, catalog.update_storage_profile, "storage_profile", CatalogError
        description = "Change a storage profile; existing disks are untouched."

    class Arguments:
        name = graphene.String(required=True)
        input = StorageProfileUpdateInput(required=True)

    storage_profile = graphene.Field(StorageProfile)


class DeleteStorageProfile(Withdraw):
    class Meta:
        role, service, result, error = ADMIN, catalog.delete_storage_profile, "storage_profile", CatalogError
        description = (
            "Remove a storage profile from the catalog "
            "and the VDCs that allow it; existing disks are untouched."
        )

    class Arguments:
        name = graphene.String(required=True)

    storage_profile = graphene.Field(StorageProfile, description="The profile as it was.")


class Publish(ServiceMutation):
    """A write of an image: the image, and its caching started on the hosts."""

    class Meta:
        abstract = True

    caching = graphene.List(
        graphene.NonNull(ImageCaching),
        required=True,
        description="Where caching the image started, per host and storage: every host of the zones where a "
        "VDC offers the image, each storage its zone's storage profiles name (empty when nothing was to "
        "cache: no VDC offers it, or its URL and checksum did not change). A host that did not answer is "
        "named with why; its next create of the image starts it.",
    )

    @classmethod
    def answer(cls, result: Published) -> dict[str, Any]:
        return {"image": result.image, "caching": result.caching}

    @classmethod
    def failed(cls, exc: Exception) -> dict[str, Any]:
        return {"caching": []}


class CreateImage(Publish):
    class Meta:
        role, service, result, error = ADMIN, image_cache.create_image, "image", CatalogError
        description = (
            "Add an image, and start caching it on the hosts of the zones of the VDCs it is offered in (see "
            "caching): each host's agent downloads it and keeps it as a template, in the background."
        )

    class Arguments:
        input = ImageInput(required=True)

    image = graphene.Field(Image)


class UpdateImage(Publish):
    class Meta:
        role, service, result, error = ADMIN, image_cache.update_image, "image", CatalogError
        description = (
            "Change an image; a new source URL or checksum starts caching it on the hosts where it is "
            "offered that lack it (see caching)."
        )

    class Arguments:
        name = graphene.String(required=True)
        input = ImageUpdateInput(required=True)

    image = graphene.Field(Image)


class DeleteImage(Withdraw):
    class Meta:
        role, service, result, error = ADMIN, catalog.delete_image, "image", CatalogError
        description = (
            "Remove an image from the catalog and the VDCs that allow it; VMs made from it keep running."
        )

    class Arguments:
        name = graphene.String(required=True)

    image = graphene.Field(Image, description="The image as it was.")


# ------------------------------------------------------------------------------------------- root


class Query(graphene.ObjectType):
    compute_profiles = graphene.List(
        graphene.NonNull(ComputeProfile),
        required=True,
        description="Every compute profile. Needs USER or ADMIN.",
    )
    storage_profiles = graphene.List(
        graphene.NonNull(StorageProfile),
        required=True,
        description="Every storage profile. Needs USER or ADMIN.",
    )
    images = graphene.List(
        graphene.NonNull(Image), required=True, description="Every image. Needs USER or ADMIN."
    )

    @staticmethod
    @domain_errors
    def resolve_compute_profiles(root: None, info: graphene.ResolveInfo) -> list[ComputeProfileModel]:
        return catalog.list_compute_profiles(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_storage_profiles(root: None, info: graphene.ResolveInfo) -> list[StorageProfileModel]:
        return catalog.list_storage_profiles(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_images(root: None, info: graphene.ResolveInfo) -> list[ImageModel]:
        return catalog.list_images(flexplane(info))


class Mutation(graphene.ObjectType):
    create_compute_profile = CreateComputeProfile.Field()
    update_compute_profile = UpdateComputeProfile.Field()
    delete_compute_profile = DeleteComputeProfile.Field()
    create_storage_profile = CreateStorageProfile.Field()
    update_storage_profile = UpdateStorageProfile.Field()
    delete_storage_profile = DeleteStorageProfile.Field()
    create_image = CreateImage.Field()
    update_image = UpdateImage.Field()
    delete_image = DeleteImage.Field()
