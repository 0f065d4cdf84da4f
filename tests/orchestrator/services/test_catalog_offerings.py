"""The catalog keeps offerings and the VDCs that allow them in step: a new profile or image may be
allowed in VDCs as it is created, and a deleted one leaves every VDC that allowed it (in memory: the
world test is tests/orchestrator/graphql/test_catalog.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from orchestrator.errors import NotFound, PermissionDenied, ValidationFailed
from orchestrator.services import catalog
from orchestrator.services.catalog import COMPUTE_PROFILE, IMAGE, STORAGE_PROFILE, VDC, ZONE
from orchestrator.services.context import Context
from orchestrator.sources import kube as kube_module
from tests.orchestrator.fakekube import FakeKube
from tests.orchestrator.services.test_catalog_ids import context, memory_catalog


def vdc(ident: str, **allowed: list[str]) -> dict[str, Any]:
    lists = {"computeProfiles": [], "storageProfiles": [], "images": [], **allowed}
    return {"id": ident, "zones": ["zone-a"], "quota": {"vcpus": 8}, **lists}


@pytest.fixture
def store() -> Iterator[FakeKube]:
    memory = memory_catalog(
        [
            (ZONE, {"id": "zone-a", "name": "zone-a"}),
            (COMPUTE_PROFILE, {"name": "small", "vcpus": 1, "memoryMib": 1024}),
            (
                STORAGE_PROFILE,
                {
                    "name": "fast",
                    "storages": {"zone-a": "local-lvm"},
                    "defaultGb": 20,
                    "minGb": 10,
                    "maxGb": 90,
                },
            ),
            (
                IMAGE,
                {
                    "name": "debian-12",
                    "osFamily": "debian",
                    "sourceUrl": "http://images.example/d.qcow2",
                    "checksum": "sha256:" + "0" * 64,
                    "defaultUser": "debian",
                    "minDiskGb": 3,
                },
            ),
            (VDC, vdc("demo", computeProfiles=["small"], storageProfiles=["fast"], images=["debian-12"])),
            (VDC, vdc("other", computeProfiles=["small", "medium"], images=["debian-12"])),
            (VDC, vdc("empty")),
        ]
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", memory)
        yield memory


def allowed(store: FakeKube, vdc_id: str, field: str) -> list[str]:
    entry = store.get_catalog(VDC, vdc_id)
    assert entry is not None
    listed: list[str] = entry.spec[field]
    return listed


OFFERINGS: list[tuple[str, str, str, Callable[..., Any], dict[str, Any]]] = [
    (
        COMPUTE_PROFILE,
        "small",
        "computeProfiles",
        catalog.create_compute_profile,
        {"vcpus": 2, "memory_mib": 2048},
    ),
    (
        STORAGE_PROFILE,
        "fast",
        "storageProfiles",
        catalog.create_storage_profile,
        {"storages": {"zone-a": "local-lvm"}, "default_gb": 20, "min_gb": 10, "max_gb": 100},
    ),
    (
        IMAGE,
        "debian-12",
        "images",
        catalog.create_image,
        {
            "os_family": "debian",
            "source_url": "http://images.example/u.qcow2",
            "checksum": "sha256:" + "1" * 64,
            "default_user": "ubuntu",
            "min_disk_gb": 3,
        },
    ),
]
DELETES: dict[str, Callable[[Context, str], catalog.Withdrawn[Any]]] = {
    COMPUTE_PROFILE: catalog.delete_compute_profile,
    STORAGE_PROFILE: catalog.delete_storage_profile,
    IMAGE: catalog.delete_image,
}


@pytest.mark.parametrize(("kind", "existing", "field", "create", "values"), OFFERINGS)
def test_a_deleted_offering_leaves_every_vdc_that_allowed_it_and_names_them(
    store: FakeKube, kind: str, existing: str, field: str, create: Any, values: dict[str, Any]
) -> None:
    admin = context("ADMIN")
    before = {"other": list(allowed(store, "other", field))}
    allowing = ["demo", "other"] if field != "storageProfiles" else ["demo"]
    assert catalog.allowed_in(admin, kind, existing) == allowing
    withdrawn = DELETES[kind](admin, existing)
    assert (withdrawn.offering.name, withdrawn.vdcs) == (existing, allowing)
    assert store.get_catalog(kind, existing) is None
    for ident in ("demo", "other", "empty"):
        assert existing not in allowed(store, ident, field)
    # The rest of each VDC's list is kept, in its order.
    assert allowed(store, "other", field) == [n for n in before["other"] if n != existing]
    assert catalog.allowed_in(context("ADMIN"), kind, existing) == []


@pytest.mark.parametrize(("kind", "existing", "field", "create", "values"), OFFERINGS)
def test_a_new_offering_is_allowed_in_the_vdcs_its_create_names_and_no_others(
    store: FakeKube, kind: str, existing: str, field: str, create: Any, values: dict[str, Any]
) -> None:
    create(context("ADMIN"), {"name": "new-1.0", **values, "allow_in_vdcs": ["empty", "demo", "empty"]})
    assert allowed(store, "empty", field) == ["new-1.0"]
    assert allowed(store, "demo", field)[-1] == "new-1.0"
    assert "new-1.0" not in allowed(store, "other", field)
    assert catalog.allowed_in(context("ADMIN"), kind, "new-1.0") == ["demo", "empty"]


@pytest.mark.parametrize(("kind", "existing", "field", "create", "values"), OFFERINGS)
def test_a_new_offering_without_vdcs_is_allowed_nowhere(
    store: FakeKube, kind: str, existing: str, field: str, create: Any, values: dict[str, Any]
) -> None:
    create(context("ADMIN"), {"name": "new-2", **values})
    assert catalog.allowed_in(context("ADMIN"), kind, "new-2") == []


def test_an_unknown_vdc_is_refused_before_the_offering_is_stored(store: FakeKube) -> None:
    with pytest.raises(ValidationFailed) as refused:
        catalog.create_compute_profile(
            context("ADMIN"),
            {"name": "new", "vcpus": 2, "memory_mib": 2048, "allow_in_vdcs": ["demo", "nope"]},
        )
    assert (refused.value.field, refused.value.message) == ("allow_in_vdcs", "there is no VDC 'nope'")
    assert store.get_catalog(COMPUTE_PROFILE, "new") is None
    assert "new" not in allowed(store, "demo", "computeProfiles")


def test_vdcs_cannot_be_named_on_a_zone_or_on_an_update(store: FakeKube) -> None:
    admin = context("ADMIN")
    with pytest.raises(ValidationFailed) as zone:
        catalog.create_zone(admin, {"id": "zone-b", "allow_in_vdcs": ["demo"]})
    assert zone.value.field == "allow_in_vdcs"
    with pytest.raises(ValidationFailed) as update:
        catalog.update_compute_profile(admin, "small", {"allow_in_vdcs": ["empty"]})
    assert update.value.field == "allow_in_vdcs"


def test_deleting_a_missing_offering_touches_no_vdc_and_only_admin_may_ask(store: FakeKube) -> None:
    with pytest.raises(NotFound):
        catalog.delete_compute_profile(context("ADMIN"), "medium")  # "other" still lists it
    assert allowed(store, "other", "computeProfiles") == ["small", "medium"]
    with pytest.raises(PermissionDenied):
        catalog.allowed_in(context("USER", "vdc:demo"), COMPUTE_PROFILE, "small")
    with pytest.raises(PermissionDenied):
        catalog.create_compute_profile(
            context("USER", "vdc:demo"),
            {"name": "new", "vcpus": 1, "memory_mib": 512, "allow_in_vdcs": ["demo"]},
        )
