"""Image templates on Proxmox nodes: how flex.plane names and tags them, and what EnsureTemplate reports.

An image is made available on a node as one Proxmox template per (image, storage),
found again by its tags alone (no state anywhere else):

    name  fp-tpl-<image>
    tags  fp-template;fp-image-<image>;fp-storage-<storage>

The orchestrator reads the same conventions to tell templates from users' VMs.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

TEMPLATE_TAG = "fp-template"
IMAGE_TAG_PREFIX = "fp-image-"
STORAGE_TAG_PREFIX = "fp-storage-"
TEMPLATE_NAME_PREFIX = "fp-tpl-"

# An image name, and the one rule for every catalog name (profiles too, which the orchestrator
# checks with it): a lowercase DNS name, labels of letters, digits and inner hyphens joined by dots
# (ubuntu-24.04), short enough that fp-tpl-<image> keeps every label within 63 characters.
# Proxmox VM names are DNS names and its tags allow [a-z0-9_.+-], so the template's name and its
# fp-image-<image> tag hold any such name as it is.
IMAGE_NAME_MAX = 56
IMAGE_NAME = re.compile(
    rf"(?=.{{1,{IMAGE_NAME_MAX}}}\Z)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
)
IMAGE_NAME_RULE = (
    f"1 to {IMAGE_NAME_MAX} lowercase letters and digits, '-' and '.' between them (ubuntu-24.04)"
)
# A Proxmox storage id (pve-storage-id), lowercase as flex.plane's catalog writes them.
_STORAGE_ID = re.compile(r"[a-z][a-z0-9._-]{0,98}[a-z0-9]")
_TAG_SEPARATORS = re.compile(r"[;,\s]+")


def check_image_name(image: str) -> str:
    """image if it is a valid image name (``IMAGE_NAME``), else ValueError."""
    if not isinstance(image, str) or not IMAGE_NAME.fullmatch(image):
        raise ValueError(f"image name {image!r} is not a catalog name: {IMAGE_NAME_RULE}")
    return image


def check_storage_id(storage: str) -> str:
    """storage if it is a valid Proxmox storage id, else ValueError."""
    if not isinstance(storage, str) or not _STORAGE_ID.fullmatch(storage):
        raise ValueError(
            f"storage {storage!r} is not a Proxmox storage id: 2 to 100 lowercase letters, digits, "
            "'-', '_' or '.', starting with a letter"
        )
    return storage


def template_name(image: str) -> str:
    """The VM name of an image's template: ``fp-tpl-<image>``."""
    return TEMPLATE_NAME_PREFIX + image


def template_tags(image: str, storage: str) -> tuple[str, str, str]:
    """The tags that identify the template of image on storage."""
    return (TEMPLATE_TAG, IMAGE_TAG_PREFIX + image, STORAGE_TAG_PREFIX + storage)


def split_tags(tags: str | None) -> set[str]:
    """The tags of a Proxmox ``tags`` value (separated by ';', ',' or spaces), lowercase."""
    return {tag.lower() for tag in _TAG_SEPARATORS.split(tags or "") if tag}


def is_template_of(resource: Mapping[str, object], image: str, storage: str) -> bool:
    """Whether a /cluster/resources entry carries the name and tags of image's template on storage.

    It says nothing of the entry's ``template`` flag: a guest with the name and tags that is
    not (yet) a template is what an interrupted import left behind.
    """
    tags = resource.get("tags")
    return (
        resource.get("type") == "qemu"
        and resource.get("name") == template_name(image)
        and split_tags(tags if isinstance(tags, str) else "").issuperset(template_tags(image, storage))
    )


class TemplatePhase(enum.Enum):
    """Where EnsureTemplate is, in the order the phases come."""

    CHECKING = "checking"
    DOWNLOADING = "downloading"
    VERIFYING = "verifying"
    IMPORTING = "importing"
    DONE = "done"


@dataclass(frozen=True)
class TemplateProgress:
    """One progress report of EnsureTemplate.

    bytes_done and bytes_total count the download (DOWNLOADING, VERIFYING) or the copy to
    Proxmox (IMPORTING); bytes_total is 0 when the size is not known yet. template_vmid is
    set on DONE only.
    """

    phase: TemplatePhase
    bytes_done: int = 0
    bytes_total: int = 0
    message: str = ""
    template_vmid: int = 0
    node: str = ""


@dataclass(frozen=True)
class TemplateRef:
    """A template ready to be cloned: its VM id and the node it is on."""

    vmid: int
    node: str
