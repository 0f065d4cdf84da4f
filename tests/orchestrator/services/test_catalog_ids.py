"""One rule for catalog names: every name the admin API accepts for a profile or an image works in a
create, through every reader of it (the create's plan, the VM's tags, the template's name and tags
that the agent checks and writes). The catalog is held in memory here; the world test of a dotted
image is ``tests/orchestrator/graphql/test_catalog.py``."""

from __future__ import annotations

import string
from collections.abc import Iterable
from typing import Any

import pytest
from fakepve.formats import is_dns_name
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentclient.templates import check_image_name, template_name, template_tags
from devstack import seed
from orchestrator.auth import Principal
from orchestrator.errors import ValidationFailed
from orchestrator.services import catalog
from orchestrator.services.catalog import VDC, ZONE
from orchestrator.services.context import Context
from orchestrator.services.vms import create, plan
from orchestrator.sources import kube as kube_module
from orchestrator.sources.qemu_config import is_tag
from tests.orchestrator.fakekube import FakeKube
from tests.orchestrator.fakezone import FakeZone


def memory_catalog(objects: Iterable[tuple[str, dict[str, Any]]]) -> FakeKube:
    """The platform namespace's catalog in memory (the fake management cluster), holding ``objects``."""
    kube = FakeKube()
    for kind, spec in objects:
        kube.create_catalog(kind, str(spec.get("name") or spec["id"]), spec)
    return kube


def context(*roles: str, vdc: str | None = None) -> Context:
    return Context(Principal(subject="tester", name="tester", email="", roles=frozenset(roles)), vdc=vdc)


def world_of(name: str) -> FakeKube:
    """A catalog with one zone and a VDC that allows the compute profile, storage profile and image
    ``name`` (which the test's admin then creates)."""
    vdc = {
        "id": "demo",
        "zones": ["zone-a"],
        "computeProfiles": [name],
        "storageProfiles": [name],
        "images": [name],
        "quota": {"vcpus": 64, "memoryMib": 65536, "diskGb": 1000, "vms": 10},
    }
    return memory_catalog([(ZONE, {"id": "zone-a", "name": "zone-a"}), (VDC, vdc)])


def admin_creates(name: str) -> bool:
    """Whether the admin API takes ``name`` for a compute profile, a storage profile and an image."""
    admin = context("ADMIN")
    try:
        catalog.create_compute_profile(admin, {"name": name, "vcpus": 2, "memory_mib": 2048})
    except ValidationFailed as exc:
        if exc.field != "name":
            raise
        return False
    catalog.create_storage_profile(
        admin,
        {"name": name, "storages": {"zone-a": "local-lvm"}, "default_gb": 20, "min_gb": 10, "max_gb": 100},
    )
    catalog.create_image(
        admin,
        {
            "name": name,
            "os_family": "debian",
            "source_url": "http://images.example/debian-12.qcow2",
            "checksum": "sha256:" + "0" * 64,
            "default_user": "debian",
            "min_disk_gb": 10,
        },
    )
    return True


def a_create_works(name: str) -> None:
    """A create of a VM from ``name``: planned, its template named and tagged as the agent does, cloned."""
    ctx = context("USER", "vdc:demo", vdc="demo")
    spec = plan.CreateVm(name="web-1", compute_profile=name, storage_profile=name, image=name)
    planned = plan.plan(ctx, spec)
    assert (planned.compute.name, planned.storage_profile.name, planned.image.name) == (name, name, name)
    # Every catalog name is on the VM as a tag, as it is (none dropped for not being a Proxmox tag).
    assert {"fp-cp-" + name, "fp-sp-" + name, "fp-img-" + name} <= set(planned.tags)
    # The agent's (and the agent client's) check of an image's name, and what it writes to Proxmox.
    assert check_image_name(name) == name
    template = template_name(name)
    assert is_dns_name(template)
    assert all(len(label) <= 63 for label in template.split("."))
    assert all(is_tag(tag) for tag in template_tags(name, planned.storage))
    zone = FakeZone()
    made = zone.ensure_template("pve1", name, "", "", planned.storage, timeout=1.0)
    vmid, _task = create.clone(zone, planned, made, "pve1")
    assert zone.guests[vmid].name == "web-1"


# Names near the rule's edges: DNS-like names with dots, hyphens, capitals, underscores, and lengths
# around the limit; and any text at all.
_near = st.from_regex(r"[a-zA-Z0-9][a-z0-9._\-]{0,70}", fullmatch=True)
_dotted = st.lists(
    st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=20), min_size=1, max_size=5
).map(".".join)
NAMES = st.one_of(_near, _dotted, st.text(max_size=80))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=NAMES)
def test_every_name_the_admin_api_accepts_works_in_a_create(name: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", world_of(name))
        if admin_creates(name):
            a_create_works(name)


@pytest.mark.parametrize("name", ["ubuntu-24.04", "debian-12", "a", "x" * 56, "rocky-9.4.minimal"])
def test_dotted_and_longest_names_are_accepted_and_work_in_a_create(name: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", world_of(name))
        assert admin_creates(name)
        a_create_works(name)


@pytest.mark.parametrize("name", ["Ubuntu", "ubuntu_24", "ubuntu.", ".04", "a..b", "a.-b", "x" * 57, "a\n"])
def test_names_some_reader_would_refuse_are_refused_where_they_are_written(name: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube_module, "_source", world_of("web"))
        assert not admin_creates(name)


def test_the_seed_holds_only_names_the_rule_accepts() -> None:
    for spec in (*seed.COMPUTE_PROFILES, *seed.STORAGE_PROFILES, *seed.IMAGES):
        assert catalog.is_name(spec["name"]), spec["name"]
    assert "ubuntu-24.04" in {i["name"] for i in seed.IMAGES}
