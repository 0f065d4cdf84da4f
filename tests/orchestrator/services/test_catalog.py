"""The catalog services against the world's management cluster: layout, reads, rules, authorization."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import kmock
import pytest
from kubernetes import client

from devstack import seed
from devstack.world import World
from orchestrator.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from orchestrator.services import catalog
from orchestrator.sources.kube import KubeSource
from tests.orchestrator.services.conftest import MakeContext


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def config_map(source: KubeSource, name: str) -> tuple[dict[str, str], dict[str, Any]]:
    """A ConfigMap of the platform namespace, read with the official client: its labels and its spec."""
    item = source.core.read_namespaced_config_map(name, seed.NAMESPACE)
    assert item.metadata is not None
    assert item.data is not None
    return dict(item.metadata.labels or {}), json.loads(item.data["spec"])


def config_map_lists(world: World, after: int) -> int:
    """How many ConfigMap list requests the emulator served since request id ``after``."""
    return sum(
        1
        for r in list(world.kube.emulator)
        if r.id > after and r.method == kmock.method.GET and r.url.path.endswith("/configmaps")
    )


def last_request(world: World) -> int:
    return max((r.id for r in list(world.kube.emulator)), default=-1)


def proxmox_state(world: World) -> dict[str, tuple[int, list[int]]]:
    """Per zone: how many requests the fake has served, and its VM ids."""

    def read(pve: Any) -> tuple[int, list[int]]:
        return len(pve.requests), sorted(vm.vmid for vm in pve.vms)

    return {zone: world.fakes.on_loop(read, fake.pve) for zone, fake in world.fakes.zones.items()}


@pytest.fixture
def profile_name(make_context: MakeContext) -> Iterator[str]:
    """A unique compute profile name, deleted after the test if it was made."""
    name = unique("cp")
    yield name
    with contextlib.suppress(NotFound):
        catalog.delete_compute_profile(make_context("ADMIN"), name)


def small_profile(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "vcpus": 2, "memory_mib": 2048, **extra}


# ------------------------------------------------------------------------------------------ reads


def test_a_request_reads_every_kind_it_needs_with_one_list_call(
    world: World, make_context: MakeContext
) -> None:
    ctx = make_context("USER", "vdc:demo")
    before = last_request(world)
    assert [p.name for p in catalog.list_compute_profiles(ctx)] == ["large", "medium", "small"]
    assert [p.name for p in catalog.list_storage_profiles(ctx)] == ["standard"]
    assert [i.name for i in catalog.list_images(ctx)] == ["debian-12", "ubuntu-24.04"]
    assert [z.id for z in catalog.list_zones(ctx)] == ["zone-a", "zone-b"]
    assert len(catalog.list_hosts(ctx)) == 6
    assert catalog.compute_profile(ctx, "medium").memory_mib == 4096
    assert config_map_lists(world, before) == 1


def test_the_seeded_catalog_reads_back_as_typed_objects(make_context: MakeContext) -> None:
    ctx = make_context("ADMIN")
    standard = catalog.storage_profile(ctx, "standard")
    assert standard.storages == {"zone-a": "local-lvm", "zone-b": "local-lvm"}
    assert (standard.min_gb, standard.default_gb, standard.max_gb) == (10, 20, 200)
    assert standard.storage_in("zone-b") == "local-lvm"
    assert standard.disk_limits() == {}
    debian = catalog.image(ctx, "debian-12")
    algorithm, _, digest = debian.checksum.partition(":")
    assert (algorithm, len(digest)) == ("sha256", 64)
    host = catalog.host(ctx, "zone-a", "pve2")
    assert (host.key, host.memory_overcommit, host.cpu_overcommit, host.cordoned) == (
        "zone-a/pve2",
        1.0,
        4.0,
        False,
    )
    assert host.target.identity.startswith("pve2")


def test_a_missing_object_is_not_found(make_context: MakeContext) -> None:
    with pytest.raises(NotFound, match="compute profile 'huge' does not exist"):
        catalog.compute_profile(make_context("USER"), "huge")


def test_reading_needs_user_or_admin(make_context: MakeContext) -> None:
    with pytest.raises(PermissionDenied):
        catalog.list_images(make_context("vdc:demo"))


def test_an_unreadable_config_map_is_skipped_not_fatal(
    world: World, wired: KubeSource, make_context: MakeContext
) -> None:
    name = unique("broken")
    wired.core.create_namespaced_config_map(
        seed.NAMESPACE,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(
                name=f"compute-profile-{name}",
                labels={"flexplane.io/kind": "compute-profile", "flexplane.io/id": name},
            ),
            data={"spec": "{not json"},
        ),
    )
    try:
        assert name not in [p.name for p in catalog.list_compute_profiles(make_context("USER"))]
    finally:
        wired.core.delete_namespaced_config_map(f"compute-profile-{name}", seed.NAMESPACE)


def test_the_catalog_is_read_whole_across_pages(wired: KubeSource, monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog longer than a page is read with the server's continue tokens, each object once."""
    from orchestrator.sources import kube

    kinds = ("compute-profile", "storage-profile", "image", "zone", "host", "vdc")
    whole = wired.list_catalog(kinds)
    monkeypatch.setattr(kube, "LIST_PAGE_SIZE", 2)

    paged = wired.list_catalog(kinds)

    assert len(whole) > 4
    assert sorted((e.kind, e.ident, e.resource_version) for e in paged) == sorted(
        (e.kind, e.ident, e.resource_version) for e in whole
    )
    assert all(isinstance(e.spec, dict) and e.labels["flexplane.io/kind"] == e.kind for e in paged)


# ----------------------------------------------------------------------------------------- writes


def test_a_profile_is_a_labelled_config_map_with_its_spec_as_json(
    wired: KubeSource, make_context: MakeContext, profile_name: str
) -> None:
    catalog.create_compute_profile(
        make_context("ADMIN"), small_profile(profile_name, description="for tests")
    )
    labels, spec = config_map(wired, f"compute-profile-{profile_name}")
    assert labels == {"flexplane.io/kind": "compute-profile", "flexplane.io/id": profile_name}
    assert spec == {
        "name": profile_name,
        "vcpus": 2,
        "memoryMib": 2048,
        "cpuType": "x86-64-v2-AES",
        "description": "for tests",
    }


def test_a_request_sees_its_own_writes_without_listing_again(
    world: World, make_context: MakeContext, profile_name: str
) -> None:
    ctx = make_context("ADMIN")
    catalog.list_compute_profiles(ctx)
    before = last_request(world)
    catalog.create_compute_profile(ctx, small_profile(profile_name))
    assert profile_name in [p.name for p in catalog.list_compute_profiles(ctx)]
    assert config_map_lists(world, before) == 0


def test_an_update_changes_only_the_fields_given(make_context: MakeContext, profile_name: str) -> None:
    catalog.create_compute_profile(make_context("ADMIN"), small_profile(profile_name, cpu_type="host"))
    updated = catalog.update_compute_profile(make_context("ADMIN"), profile_name, {"vcpus": 3})
    assert (updated.vcpus, updated.memory_mib, updated.cpu_type) == (3, 2048, "host")
    fresh = catalog.compute_profile(make_context("USER"), profile_name)
    assert (fresh.vcpus, fresh.memory_mib, fresh.cpu_type) == (3, 2048, "host")


def test_a_name_never_changes(make_context: MakeContext, profile_name: str) -> None:
    catalog.create_compute_profile(make_context("ADMIN"), small_profile(profile_name))
    with pytest.raises(ValidationFailed) as caught:
        catalog.update_compute_profile(make_context("ADMIN"), profile_name, {"name": "renamed"})
    assert caught.value.field == "name"


def test_a_write_based_on_a_stale_read_is_a_conflict(make_context: MakeContext, profile_name: str) -> None:
    catalog.create_compute_profile(make_context("ADMIN"), small_profile(profile_name))
    slow = make_context("ADMIN")
    catalog.list_compute_profiles(slow)  # reads the profile at its current version
    catalog.update_compute_profile(make_context("ADMIN"), profile_name, {"vcpus": 4})
    with pytest.raises(Conflict, match="changed meanwhile, retry"):
        catalog.update_compute_profile(slow, profile_name, {"vcpus": 8})
    assert catalog.compute_profile(make_context("USER"), profile_name).vcpus == 4


def test_a_duplicate_name_is_a_conflict(make_context: MakeContext, profile_name: str) -> None:
    catalog.create_compute_profile(make_context("ADMIN"), small_profile(profile_name))
    with pytest.raises(Conflict, match="already exists"):
        catalog.create_compute_profile(make_context("ADMIN"), small_profile(profile_name))


def test_writes_need_admin(make_context: MakeContext, profile_name: str) -> None:
    with pytest.raises(PermissionDenied):
        catalog.create_compute_profile(make_context("USER", "vdc:demo"), small_profile(profile_name))
    with pytest.raises(PermissionDenied):
        catalog.delete_compute_profile(make_context("USER"), "small")


def test_io_limits_are_optional_and_can_be_removed_again(make_context: MakeContext) -> None:
    admin = make_context("ADMIN")
    name = unique("sp")
    data = {
        "name": name,
        "storages": [{"zone": "zone-a", "storage": "local-lvm"}],
        "default_gb": 20,
        "min_gb": 10,
        "max_gb": 100,
        "bus": "virtio",
        "format": "qcow2",
        "read_mbps": 200,
        "write_iops": 5000,
    }
    try:
        made = catalog.create_storage_profile(admin, data)
        assert made.disk_limits() == {"mbps_rd": 200, "iops_wr": 5000}
        changed = catalog.update_storage_profile(make_context("ADMIN"), name, {"read_mbps": None})
        assert changed.disk_limits() == {"iops_wr": 5000}
        assert (changed.bus, changed.format, changed.storages) == ("virtio", "qcow2", {"zone-a": "local-lvm"})
    finally:
        catalog.delete_storage_profile(make_context("ADMIN"), name)


def test_deleting_a_profile_or_image_touches_no_vm(world: World, make_context: MakeContext) -> None:
    admin = make_context("ADMIN")
    name = unique("img")
    catalog.create_image(
        admin,
        {
            "name": name,
            "os_family": "debian",
            "source_url": "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2",
            "checksum": "sha512:" + "ab" * 64,
            "default_user": "debian",
            "min_disk_gb": 2,
        },
    )
    before = proxmox_state(world)
    deleted = catalog.delete_image(make_context("ADMIN"), name)
    assert deleted.offering.name == name
    assert proxmox_state(world) == before
    with pytest.raises(NotFound):
        catalog.image(make_context("USER"), name)


def test_an_image_url_on_an_allowlisted_host_is_accepted(make_context: MakeContext, settings: Any) -> None:
    settings.FLEXPLANE_IMAGE_ALLOW_HOSTS = ["127.0.0.1:8080"]
    name = unique("img")
    data = {
        "name": name,
        "os_family": "other",
        "source_url": "http://127.0.0.1:8080/images/tiny.raw",
        "checksum": "SHA256:" + "AB" * 32,
        "default_user": "root",
        "min_disk_gb": 1,
    }
    try:
        made = catalog.create_image(make_context("ADMIN"), data)
        assert made.checksum == "sha256:" + "ab" * 32  # normalized
    finally:
        catalog.delete_image(make_context("ADMIN"), name)
    settings.FLEXPLANE_IMAGE_ALLOW_HOSTS = []
    with pytest.raises(ValidationFailed, match="loopback") as caught:
        catalog.create_image(make_context("ADMIN"), data)
    assert caught.value.field == "source_url"


# ---------------------------------------------------------------------------------- zones and hosts


def test_a_host_needs_an_existing_zone(make_context: MakeContext) -> None:
    with pytest.raises(ValidationFailed, match="no zone 'atlantis'") as caught:
        catalog.create_host(
            make_context("ADMIN"), {"zone": "atlantis", "node": "pve1", "endpoint": "10.0.0.1:7443"}
        )
    assert caught.value.field == "zone"


def test_a_zone_with_hosts_cannot_be_deleted_and_hosts_move_nowhere(
    wired: KubeSource, make_context: MakeContext
) -> None:
    zone = unique("zone")
    catalog.create_zone(make_context("ADMIN"), {"id": zone, "name": "Test zone"})
    host = catalog.create_host(
        make_context("ADMIN"),
        {"zone": zone, "node": "pve9", "endpoint": "pve9.example.net:7443", "cpu_overcommit": 2},
    )
    try:
        labels, spec = config_map(wired, f"host-{zone}.pve9")
        assert labels == {
            "flexplane.io/kind": "host",
            "flexplane.io/id": f"{zone}.pve9",
            "flexplane.io/zone": zone,
        }
        assert spec["endpoint"] == "pve9.example.net:7443"
        assert (host.cordoned, host.memory_overcommit, host.cpu_overcommit) == (False, 1.0, 2.0)
        with pytest.raises(Conflict, match=r"still has 1 host\(s\) \(pve9\)"):
            catalog.delete_zone(make_context("ADMIN"), zone)
        with pytest.raises(ValidationFailed) as caught:
            catalog.update_host(make_context("ADMIN"), zone, "pve9", {"zone": "zone-a"})
        assert caught.value.field == "zone"
        cordoned = catalog.update_host(make_context("ADMIN"), zone, "pve9", {"cordoned": True})
        assert cordoned.cordoned is True
        assert catalog.host(make_context("USER"), zone, "pve9").cordoned is True
    finally:
        catalog.drop_host(make_context("ADMIN"), zone, "pve9")
    assert catalog.delete_zone(make_context("ADMIN"), zone).name == "Test zone"
    assert zone not in [z.id for z in catalog.list_zones(make_context("USER"))]


def test_a_zone_a_vdc_allows_cannot_be_deleted(wired: KubeSource, make_context: MakeContext) -> None:
    # zone-a has hosts too; a zone with no hosts that a VDC allows shows the VDC rule alone.
    zone = unique("zone")
    catalog.create_zone(make_context("ADMIN"), {"id": zone})
    vdc_spec = {"id": zone, "zones": [zone], "quota": {"vcpus": 1}}
    entry = wired.create_catalog("vdc", zone, vdc_spec)
    try:
        with pytest.raises(Conflict, match=f"allowed in VDC\\(s\\) {zone}"):
            catalog.delete_zone(make_context("ADMIN"), zone)
    finally:
        wired.delete_catalog("vdc", zone, entry.resource_version)
    catalog.delete_zone(make_context("ADMIN"), zone)


def test_the_endpoint_of_a_host_is_shown_to_admin_only(make_context: MakeContext) -> None:
    host = catalog.host(make_context("ADMIN"), "zone-a", "pve1")
    assert catalog.host_endpoint(make_context("ADMIN"), host) == host.endpoint
    assert catalog.host_endpoint(make_context("USER", "vdc:demo"), host) is None


def test_zone_targets_name_every_agent_of_each_zone(make_context: MakeContext) -> None:
    targets = {t.zone: t.targets for t in catalog.zone_targets(make_context("ADMIN"))}
    assert set(targets) == {"zone-a", "zone-b"}
    assert all(len(agents) == 3 for agents in targets.values())


def test_a_zone_a_storage_profile_names_cannot_be_deleted(make_context: MakeContext) -> None:
    zone = unique("zone")
    profile = unique("sp")
    catalog.create_zone(make_context("ADMIN"), {"id": zone})
    catalog.create_storage_profile(
        make_context("ADMIN"),
        {"name": profile, "storages": {zone: "local-zfs"}, "default_gb": 10, "min_gb": 10, "max_gb": 10},
    )
    try:
        with pytest.raises(Conflict, match=f"has a storage in storage profile\\(s\\) {profile}"):
            catalog.delete_zone(make_context("ADMIN"), zone)
    finally:
        catalog.delete_storage_profile(make_context("ADMIN"), profile)
    catalog.delete_zone(make_context("ADMIN"), zone)
