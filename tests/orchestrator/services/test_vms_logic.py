"""The VM services' own logic against an in-memory zone (tests/orchestrator/fakezone.py): create
planning, configuration, resize checks, quota usage, clean-up. No world: the wiring is proven by the
world tests (tests/orchestrator/graphql/test_vm_*.py)."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from orchestrator.errors import Conflict, UpstreamFailure, ValidationFailed
from orchestrator.models import ComputeProfile, Image, StorageProfile, Usage, Vdc
from orchestrator.models.vms import VirtualMachine
from orchestrator.services.tasks import TaskFailed, run
from orchestrator.services.vms import create, lifecycle, plan
from orchestrator.sources.proxmox import ClusterResources, ConfigChange
from orchestrator.sources.qemu_config import parse_config
from tests.orchestrator.fakezone import GIB, FakeZone, guest

SMALL = ComputeProfile(name="small", vcpus=2, memory_mib=2048, cpu_type="host")
LARGE = ComputeProfile(name="large", vcpus=8, memory_mib=16384, cpu_type="host")
FAST = StorageProfile(
    name="fast", storages={"zone-a": "local-lvm"}, default_gb=20, min_gb=10, max_gb=100, read_iops=500
)
DEBIAN = Image(
    name="debian-12",
    os_family="linux",
    source_url="http://images.example/debian.qcow2",
    checksum="sha256:" + "0" * 64,
    default_user="debian",
    min_disk_gb=10,
)
DEMO = Vdc(
    id="demo",
    name="demo",
    zones=["zone-a"],
    compute_profiles=["small", "large"],
    storage_profiles=["fast"],
    images=["debian-12"],
    quota_vcpus=16,
    quota_memory_mib=32768,
    quota_disk_gb=500,
    quota_vms=10,
)


def a_plan(**changes: object) -> plan.Plan:
    values: dict[str, object] = {
        "vdc": DEMO,
        "name": "web-1",
        "compute": SMALL,
        "storage_profile": FAST,
        "image": DEBIAN,
        "zone": "zone-a",
        "storages": {"zone-a": "local-lvm"},
        "disk_gb": 20,
        "ssh_keys": ["ssh-ed25519 AAAAC3Nz me@laptop"],
        "user_data": None,
        "idempotency_key": "create-42",
        "requested_by": "Alice (alice@example.com)",
    }
    values.update(changes)
    return plan.Plan(**values)  # type: ignore[arg-type]  # the test's overrides are the right types


# ------------------------------------------------------------------------------------------ planning


def test_a_plan_tags_the_vm_with_its_vdc_its_create_and_what_it_was_made_from() -> None:
    tags = a_plan().tags
    assert tags[0] == "fp-vdc-demo"
    assert tags[1].startswith("fp-idem-")
    assert tags[2:-1] == (
        "fp-cp-small",
        "fp-sp-fast",
        "fp-img-debian-12",
        "fp-sg-default",
        "fp-req-2c2048m20g",
    )
    assert tags[-1] == a_plan().spec_tag
    assert tags[-1].startswith("fp-spec-")


def test_a_plan_counts_one_vm_against_the_quota_and_asks_placement_for_its_size() -> None:
    planned = a_plan()
    assert planned.usage == Usage(vcpus=2, memory_mib=2048, disk_gb=20, vms=1)
    request = planned.placement_request
    assert (request.zone, request.vdc, request.storage, request.disk_gb) == (
        "zone-a",
        "demo",
        "local-lvm",
        20,
    )


def test_the_vdcs_usage_counts_its_vms_in_every_zone_and_nothing_else() -> None:
    zone_a = ClusterResources(
        (
            guest(100, tags="fp-vdc-demo", cpus=2, memory=2 * GIB, disk=20 * GIB),
            guest(101, tags="fp-vdc-other", cpus=4),
            guest(9000, tags="fp-vdc-demo", template=True),
            guest(102, tags="fp-vdc-demo", kind="lxc"),
        )
    )
    zone_b = ClusterResources((guest(200, tags="fp-cp-small;fp-vdc-demo", disk=GIB // 2),))
    assert plan.usage([zone_a, zone_b], DEMO) == Usage(vcpus=3, memory_mib=3072, disk_gb=21, vms=2)


def test_a_clone_counts_against_the_quota_at_the_size_its_create_asked_for_before_it_has_it() -> None:
    # The clone is tagged under the VDC's lock and only then configured and grown, outside it: until
    # then it has its template's size, and the next create must not see that as room.
    zone = FakeZone()
    template = zone.ensure_template("pve1", "debian-12", "", "", "local-lvm", timeout=1.0)
    planned = a_plan(compute=LARGE, disk_gb=80)
    vmid, _task = create.clone(zone, planned, template, "pve1")
    zone.guests[vmid] = zone.guests[vmid]._replace(cpus=1, memory=512 * 1024**2, disk=0)  # the template's
    zone.set_config("pve1", vmid, ConfigChange(tags=planned.tags))
    assert plan.usage([zone.resources()], DEMO) == Usage(vcpus=8, memory_mib=16384, disk_gb=80, vms=1)
    # Configured, grown and started, it counts at its live size, as before.
    create.configure(zone, planned, "pve1", vmid, None)
    zone.resize_disk("pve1", vmid, "scsi0", 80 * GIB)
    assert plan.usage([zone.resources()], DEMO) == Usage(vcpus=8, memory_mib=16384, disk_gb=80, vms=1)


def test_a_vm_counts_at_the_larger_of_its_live_size_and_the_size_asked_for_in_each_resource() -> None:
    grown = guest(100, tags="fp-vdc-demo;fp-req-2c2048m20g", cpus=1, memory=4 * GIB, disk=30 * GIB)
    assert plan.usage([ClusterResources((grown,))], DEMO) == Usage(
        vcpus=2, memory_mib=4096, disk_gb=30, vms=1
    )
    # Only the exact tag counts: another one that looks like it, or digits of another script, do not.
    for tags in (
        "fp-vdc-demo;fp-req-2c2048m20gx",
        "fp-vdc-demo;xfp-req-9c9m9g",
        "fp-vdc-demo;fp-req-\u0669c1m1g",
    ):
        odd = guest(101, tags=tags, cpus=1, memory=GIB, disk=GIB)
        assert plan.usage([ClusterResources((odd,))], DEMO) == Usage(
            vcpus=1, memory_mib=1024, disk_gb=1, vms=1
        )


def test_an_earlier_create_is_found_by_its_key_before_its_name() -> None:
    planned = a_plan()
    assert planned.idempotency_tag is not None
    by_name = guest(100, name="web-1", tags="fp-vdc-demo")
    by_key = guest(101, name="renamed", tags=f"fp-vdc-demo;{planned.idempotency_tag}")
    other_vdc = guest(102, name="web-1", tags="fp-vdc-other")
    found = plan.existing({"zone-a": ClusterResources((other_vdc, by_name, by_key))}, planned)
    assert found is not None
    assert found.id == "zone-a/101"
    assert plan.existing({"zone-a": ClusterResources((other_vdc,))}, planned) is None


def test_a_create_of_a_taken_name_with_the_same_spec_is_a_retry_and_returns_the_vm() -> None:
    # Placed by placement in zone-a, having named no zone: the same request names none again.
    first = a_plan(idempotency_key="first-form", zone=None, storages={"zone-a": "a", "zone-b": "b"})
    assert first.in_zone("zone-a").spec_tag == first.spec_tag
    first = first.in_zone("zone-a")
    made = guest(100, name="web-1", tags=";".join(first.tags))
    again = a_plan(idempotency_key="second-form", zone=None, storages={"zone-a": "a", "zone-b": "b"})
    found = plan.existing({"zone-a": ClusterResources((made,))}, again)
    assert found is not None
    assert found.id == "zone-a/100"


@pytest.mark.parametrize(
    "changes",
    [
        {"compute": LARGE},
        {"disk_gb": 30},
        {"ssh_keys": ["ssh-ed25519 AAAAC3Nz other@laptop"]},
        {"user_data": "#cloud-config\n"},
        {"storages": {"zone-b": "local-lvm"}, "zone": "zone-b"},
    ],
    ids=["profile", "disk", "ssh-keys", "user-data", "zone"],
)
def test_a_create_of_a_taken_name_with_another_spec_is_refused_on_the_name(changes: dict[str, Any]) -> None:
    made = guest(100, name="web-1", tags=";".join(a_plan(idempotency_key="first-form").tags))
    other = a_plan(idempotency_key="second-form", **changes)
    with pytest.raises(ValidationFailed, match="already has a VM named 'web-1'") as refused:
        plan.existing({"zone-a": ClusterResources((made,))}, other)
    assert refused.value.field == "name"
    # The same idempotency key is a retry whatever it asks for: the first VM.
    retry = a_plan(idempotency_key="first-form", **changes)
    found = plan.existing({"zone-a": ClusterResources((made,))}, retry)
    assert found is not None
    assert found.id == "zone-a/100"


def test_a_vm_made_before_specs_were_recorded_is_compared_by_what_its_tags_say() -> None:
    legacy = guest(100, name="web-1", tags="fp-vdc-demo;fp-cp-small;fp-sp-fast;fp-img-debian-12")
    assert plan.existing({"zone-a": ClusterResources((legacy,))}, a_plan()) is not None
    with pytest.raises(ValidationFailed):
        plan.existing({"zone-a": ClusterResources((legacy,))}, a_plan(compute=LARGE))


def test_leftovers_are_the_untagged_vms_in_the_vdcs_pool_not_being_cloned() -> None:
    left = guest(100, pool=DEMO.pool)
    cloning = guest(101, pool=DEMO.pool, lock="clone")
    tagged = guest(102, pool=DEMO.pool, tags="fp-vdc-demo")
    elsewhere = guest(103, pool="fp-other")
    zones = {"zone-a": ClusterResources((left, cloning, tagged, elsewhere))}
    assert create.leftovers(zones, DEMO) == [("zone-a", left)]


# ------------------------------------------------------------------------------------------ configuring


def test_a_clone_is_configured_with_its_profile_cloud_init_and_limits_in_one_write() -> None:
    zone = FakeZone()
    zone.add(
        guest(100),
        {"scsi0": "local-lvm:vm-100-disk-0,size=2G", "ide2": "none,media=cdrom", "boot": "order=scsi0"},
    )
    disk = create.configure(zone, a_plan(), "pve1", 100, "vendor=local:snippets/x.yaml")
    assert (disk.key, disk.size) == ("scsi0", 2 * GIB)
    [write] = zone.writes
    assert write.params["cores"] == 2
    assert write.params["memory"] == 2048
    assert write.params["agent"] == "1"
    assert write.params["ciuser"] == "debian"
    assert "ipconfig0" not in write.params  # its NICs and addresses were set with its tags, under the lock
    assert write.params["cicustom"] == "vendor=local:snippets/x.yaml"
    assert urllib.parse.unquote(write.params["sshkeys"]) == "ssh-ed25519 AAAAC3Nz me@laptop\n"
    assert write.params["ide3"] == "local-lvm:cloudinit"  # ide2 holds an empty CD-ROM
    assert write.params["scsi0"] == "local-lvm:vm-100-disk-0,size=2G,iops_rd=500"


def test_a_clone_that_has_a_cloud_init_drive_gets_no_second_one() -> None:
    config = parse_config(
        {"virtio0": "local-lvm:vm-1-disk-0,size=8G", "ide2": "local-lvm:vm-1-cloudinit,media=cdrom"}
    )
    change, disk = create.configuration(
        a_plan(storage_profile=StorageProfile(name="plain")), config, None, "zone-a"
    )
    assert disk.key == "virtio0"
    assert change.drives == ()
    assert "cicustom" not in change.render()


def test_a_template_without_a_disk_cannot_be_configured() -> None:
    with pytest.raises(UpstreamFailure, match="no disk to boot from"):
        create.configuration(a_plan(), parse_config({"ide2": "none,media=cdrom"}), None, "zone-a")


def test_a_template_without_a_free_ide_slot_cannot_take_cloud_init() -> None:
    full = {f"ide{n}": "none,media=cdrom" for n in range(4)} | {"scsi0": "local-lvm:d,size=1G"}
    with pytest.raises(UpstreamFailure, match="no free IDE slot"):
        create.configuration(a_plan(), parse_config(full), None, "zone-a")


def test_a_clone_whose_vmid_another_create_took_asks_for_another() -> None:
    zone = FakeZone()
    zone.add(guest(100, name="someone-elses"))
    template = zone.ensure_template("pve1", "debian-12", "", "", "local-lvm", timeout=1.0)
    zone.handing_out = [100, 101]
    vmid, task = create.clone(zone, a_plan(), template, "pve2")
    assert vmid == 101
    assert task.succeeded
    assert zone.guests[101].node == "pve2"
    assert zone.guests[100].name == "someone-elses"


def test_a_failed_create_removes_the_half_made_vm_and_says_so() -> None:
    zone = FakeZone()
    zone.add(guest(100, status="running"))
    error = UpstreamFailure("zone-a", "the start failed")
    create.discard(zone, a_plan(), 100, error, tagged=True)
    assert 100 not in zone.guests
    assert [w.call for w in zone.writes] == ["stop", "destroy"]
    assert error.message == "the start failed; the half-made VM zone-a/100 was removed"


def test_a_half_made_vm_that_cannot_be_removed_is_left_with_a_note_where() -> None:
    zone = FakeZone()
    zone.add(guest(100))
    zone.failing.add("qmdestroy")
    error = UpstreamFailure("zone-a", "the tag failed")
    create.discard(zone, a_plan(), 100, error, tagged=False)
    assert "could not be removed" in error.message
    assert f"untagged in pool {DEMO.pool}" in error.message


# ------------------------------------------------------------------------------------------ tasks, disks


def test_growing_a_disk_follows_its_task_and_smaller_sizes_do_nothing() -> None:
    zone = FakeZone()
    zone.add(guest(100, disk=10 * GIB))
    assert lifecycle.grow(zone, "demo", "pve1", 100, "scsi0", 10 * GIB, 10) is None
    task = lifecycle.grow(zone, "demo", "pve1", 100, "scsi0", 10 * GIB, 25)
    assert task is not None
    assert task.succeeded
    assert zone.writes[-1].params == {"disk": "scsi0", "size": 25 * GIB}


def test_a_task_that_ends_in_error_raises_with_proxmoxs_message() -> None:
    zone = FakeZone()
    zone.add(guest(100))
    zone.failing.add("qmstart")
    with pytest.raises(TaskFailed, match="boom") as failed:
        run(zone, zone.power("pve1", 100, "start"), "demo", "starting VM web-1", 5.0)
    assert failed.value.task.kind == "qmstart"


def test_a_write_that_answers_no_task_is_an_upstream_failure() -> None:
    with pytest.raises(UpstreamFailure, match="instead of a task id"):
        run(FakeZone(), None, "demo", "starting VM web-1", 5.0)


# ------------------------------------------------------------------------------------------ resize


def vm(**fields: Any) -> VirtualMachine:
    values: dict[str, Any] = {
        "cpus": 2,
        "memory": 2 * GIB,
        "disk": 20 * GIB,
        "tags": "fp-vdc-demo;fp-cp-small",
    }
    values.update(fields)
    return VirtualMachine.from_guest("zone-a", guest(100, **values))


def test_a_resize_to_a_bigger_profile_and_disk_adds_the_difference_to_the_usage() -> None:
    change = lifecycle.resize_of(vm(), LARGE, 50)
    assert change.compute == LARGE
    assert change.grow_gb == 50
    assert change.delta == Usage(vcpus=6, memory_mib=14336, disk_gb=30)


def test_a_resize_to_what_the_vm_has_changes_nothing() -> None:
    assert lifecycle.resize_of(vm(), SMALL, 20).nothing


def test_a_disk_never_shrinks() -> None:
    with pytest.raises(ValidationFailed, match="disks only grow"):
        lifecycle.resize_of(vm(), None, 10)


def test_a_running_vm_keeps_its_profile_until_stopped() -> None:
    with pytest.raises(Conflict, match="stop it before"):
        lifecycle.resize_of(vm(status="running"), LARGE, None)
    assert lifecycle.resize_of(vm(status="running"), None, 30).grow_gb == 30


def test_a_new_profile_replaces_the_profile_tag_and_keeps_the_others() -> None:
    change = lifecycle.profile_change(vm(tags="fp-vdc-demo;fp-cp-small;fp-img-debian-12"), LARGE)
    assert change == ConfigChange(
        cores=8,
        sockets=1,
        memory_mib=16384,
        cpu="host",
        tags=("fp-vdc-demo", "fp-img-debian-12", "fp-cp-large", "fp-req-8c16384m20g"),
    )


def test_a_new_profile_records_its_size_asked_for_with_the_disk_asked_for_before() -> None:
    asked = vm(tags="fp-vdc-demo;fp-cp-large;fp-req-8c16384m80g", disk=20 * GIB)
    assert lifecycle.profile_change(asked, SMALL).tags == ("fp-vdc-demo", "fp-cp-small", "fp-req-2c2048m80g")
