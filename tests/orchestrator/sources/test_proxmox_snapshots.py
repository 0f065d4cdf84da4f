"""Snapshots in Proxmox's terms, pure: the listing read, which disks can be snapshotted, and how a
rollback is said."""

from __future__ import annotations

import pytest

from orchestrator.errors import ValidationFailed
from orchestrator.services.snapshots import rollback_message, validate_description, validate_name
from orchestrator.sources.proxmox.snapshots import Snapshots, snapshot_blockers
from orchestrator.sources.qemu_config import parse_config

TYPES = {"local": "dir", "local-lvm": "lvmthin", "nfs1": "nfs", "ceph": "rbd", "thick": "lvm"}


def test_the_listing_leaves_out_the_present_state_and_says_what_it_descends_from() -> None:
    listing = Snapshots.parse(
        [
            {"name": "current", "parent": "two", "running": 1, "description": "You are here!"},
            {"name": "two", "snaptime": 1700000100, "parent": "one", "vmstate": 1, "description": "b\n"},
            {"name": "one", "snaptime": 1700000000, "description": "a"},
        ]
    )
    assert [e.name for e in listing.entries] == ["one", "two"]
    assert listing.current_parent == "two"
    two = listing.get("two")
    assert two is not None
    assert (two.vmstate, two.parent, two.description, two.state) == (True, "one", "b", None)


@pytest.mark.parametrize(
    ("scsi0", "blocked"),
    [
        ("local-lvm:vm-100-disk-0,size=8G", False),
        ("ceph:vm-100-disk-0,size=8G", False),
        ("local:100/vm-100-disk-0.qcow2,size=8G", False),
        ("nfs1:100/vm-100-disk-0.qcow2,size=8G", False),
        ("local:100/vm-100-disk-0.raw,size=8G", True),
        ("thick:vm-100-disk-0,size=8G", True),
        ("unknown:vm-100-disk-0,size=8G", False),
    ],
)
def test_a_disk_blocks_a_snapshot_as_proxmox_says(scsi0: str, blocked: bool) -> None:
    config = parse_config({"scsi0": scsi0, "ide2": "local:100/vm-100-cloudinit.raw,media=cdrom"})
    assert bool(snapshot_blockers(config, TYPES)) is blocked


def test_a_blocking_disk_is_named_with_its_storage() -> None:
    config = parse_config({"scsi0": "local:100/vm-100-disk-0.raw,size=8G"})
    assert snapshot_blockers(config, TYPES) == ["scsi0 (local:100/vm-100-disk-0.raw on dir storage local)"]


@pytest.mark.parametrize("name", ["", "a", "1abc", "a b", "a/b", "x" * 41, "current", "Pending", "vzdump"])
def test_a_name_proxmox_refuses_is_invalid_on_name(name: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        validate_name(name)
    assert refused.value.field == "name"


def test_a_description_with_control_characters_is_invalid() -> None:
    assert validate_description("  fine\nlines  ") == "fine\nlines"
    with pytest.raises(ValidationFailed):
        validate_description("bell\x07")


def test_a_rollback_says_what_proxmox_did() -> None:
    assert rollback_message("web", "s1", True, False, False, "stopped") == (
        "VM web was running: Proxmox stopped it and rolled it back to snapshot s1. "
        "It is stopped (start it when you are ready)."
    )
    resumed = rollback_message("web", "s1", True, True, False, "running")
    assert resumed.endswith("so it resumed where the snapshot was taken. It is running.")
    started = rollback_message("web", "s1", False, False, True, "running")
    assert started == "VM web was rolled back to snapshot s1; then started it, as asked. It is running."
