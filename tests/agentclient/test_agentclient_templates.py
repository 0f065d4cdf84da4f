"""Template names and tags, progress reports, and ensure_template's checks before it calls."""

from __future__ import annotations

import pytest

from agentclient import AgentPool, AgentTarget, ClientTLS, TemplatePhase, TemplateProgress
from agentclient.pool import template_progress
from agentclient.proto.flexplane.agent.v1 import agent_pb2
from agentclient.templates import (
    check_image_name,
    check_storage_id,
    is_template_of,
    split_tags,
    template_name,
    template_tags,
)

CHECKSUM = "sha256:" + "ab" * 32


def test_a_template_is_named_after_its_image() -> None:
    assert template_name("debian-12") == "fp-tpl-debian-12"


def test_a_template_is_tagged_with_its_image_and_storage() -> None:
    assert template_tags("debian-12", "local-lvm") == (
        "fp-template",
        "fp-image-debian-12",
        "fp-storage-local-lvm",
    )


@pytest.mark.parametrize("image", ["debian-12", "a", "ubuntu-24-04", "ubuntu-24.04", "x" * 56])
def test_an_image_name_is_a_catalog_name(image: str) -> None:
    assert check_image_name(image) == image


@pytest.mark.parametrize(
    "image", ["", "Debian", "-debian", "debian-", "ubuntu_24", "ubuntu.", "a..b", "x" * 57, "a b"]
)
def test_an_image_name_that_is_not_a_catalog_name_is_refused(image: str) -> None:
    with pytest.raises(ValueError, match="is not a catalog name"):
        check_image_name(image)


@pytest.mark.parametrize("storage", ["local", "local-lvm", "ceph_rbd", "nfs.store1"])
def test_a_storage_id_is_accepted(storage: str) -> None:
    assert check_storage_id(storage) == storage


@pytest.mark.parametrize("storage", ["", "l", "1local", "local-", "local/lvm", "local lvm", "Local"])
def test_a_malformed_storage_id_is_refused(storage: str) -> None:
    with pytest.raises(ValueError, match="is not a Proxmox storage id"):
        check_storage_id(storage)


def test_tags_split_on_semicolons_commas_and_spaces_in_lowercase() -> None:
    assert split_tags("fp-template;FP-Image-x, fp-storage-y  other") == {
        "fp-template",
        "fp-image-x",
        "fp-storage-y",
        "other",
    }


def test_a_resource_with_the_name_and_every_tag_is_the_template() -> None:
    resource = {
        "type": "qemu",
        "name": "fp-tpl-debian-12",
        "tags": "fp-image-debian-12;fp-storage-local-lvm;fp-template;extra",
    }

    assert is_template_of(resource, "debian-12", "local-lvm")


@pytest.mark.parametrize(
    "resource",
    [
        {"type": "qemu", "name": "fp-tpl-debian-12", "tags": "fp-image-debian-12;fp-template"},
        {
            "type": "qemu",
            "name": "fp-tpl-debian-12",
            "tags": "fp-image-debian-12;fp-storage-ceph;fp-template",
        },
        {"type": "qemu", "name": "web-1", "tags": "fp-image-debian-12;fp-storage-local-lvm;fp-template"},
        {
            "type": "lxc",
            "name": "fp-tpl-debian-12",
            "tags": "fp-image-debian-12;fp-storage-local-lvm;fp-template",
        },
        {"type": "qemu", "name": "fp-tpl-debian-12"},
    ],
)
def test_a_resource_missing_the_name_a_tag_or_the_type_is_not_the_template(
    resource: dict[str, object],
) -> None:
    assert not is_template_of(resource, "debian-12", "local-lvm")


def test_a_progress_message_becomes_the_dataclass() -> None:
    message = agent_pb2.TemplateProgress(
        phase=agent_pb2.TemplateProgress.PHASE_DOWNLOADING,
        bytes_done=10,
        bytes_total=40,
        message="downloading",
        node="pve1",
    )

    assert template_progress(message) == TemplateProgress(
        phase=TemplatePhase.DOWNLOADING, bytes_done=10, bytes_total=40, message="downloading", node="pve1"
    )


def test_a_progress_message_of_an_unknown_phase_is_skipped() -> None:
    assert (
        template_progress(agent_pb2.TemplateProgress(phase=agent_pb2.TemplateProgress.PHASE_UNSPECIFIED))
        is None
    )


@pytest.mark.parametrize(
    ("image", "url", "checksum", "storage", "reason"),
    [
        ("Debian", "http://mirror/x", CHECKSUM, "local-lvm", "is not a catalog name"),
        ("debian-12", "http://mirror/x", CHECKSUM, "local/lvm", "is not a Proxmox storage id"),
        ("debian-12", "http://mirror/x", "md5:" + "a" * 32, "local-lvm", "'md5' is not supported"),
        ("debian-12", "http://mirror/x", "sha256:abc", "local-lvm", "64 hexadecimal digits"),
        ("debian-12", "", CHECKSUM, "local-lvm", "the image URL is empty"),
    ],
)
def test_ensure_template_refuses_a_malformed_request_before_calling(
    client_tls: ClientTLS, target: AgentTarget, image: str, url: str, checksum: str, storage: str, reason: str
) -> None:
    with AgentPool(client_tls) as pool, pytest.raises(ValueError, match=reason):
        pool.ensure_template(target, image, url, checksum, storage, timeout=5)
