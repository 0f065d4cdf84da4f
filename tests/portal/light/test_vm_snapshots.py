"""A VM's snapshots on its page, as a browser uses them (the portal served from this process, the light
world's fake Proxmox): taken from a form, rolled back and deleted after a confirmation, each followed live;
checked in the fake's own snapshot state."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
import requests

from tests.apikit import Api
from tests.orchestrator.api.light.test_snapshots import fake_snapshots
from tests.portal.pagekit import get, post
from tests.portal.served import LightPortal
from tests.vmkit import create, ok, present, scratch_vdcs


@pytest.fixture(scope="module")
def scratch(api: Api, site: LightPortal) -> Iterator[tuple[str, str]]:
    """(VDC, VM id) of a running VM of a scratch VDC, gone with its VDC afterwards."""
    with scratch_vdcs(api, site) as make:
        vdc = make()
        vm = ok(create(api, "admin", vdc, name=f"psnap-{uuid.uuid4().hex[:6]}"))["virtualMachine"]["id"]
        yield vdc, vm


def test_a_snapshot_is_taken_rolled_back_and_deleted_from_the_vms_page(
    site: LightPortal, admin: requests.Session, scratch: tuple[str, str]
) -> None:
    vdc, vm = scratch
    base = f"/vdc/{vdc}/vms/{vm}"
    page = get(admin, site, f"{base}/")
    assert "data-snapshots" in page.text
    assert 'data-action="snapshot-create"' in page.text

    taken = post(admin, site, f"{base}/snapshots/new/", {"name": "before-upgrade", "description": "v1"})
    assert taken.status_code == 303, taken.text[:2000]
    assert taken.headers["Location"].startswith(f"{base}/?task=")
    assert fake_snapshots(site, vm)["before-upgrade"]["description"] == "v1"
    followed = get(admin, site, taken.headers["Location"])
    assert 'data-task-state="succeeded"' in followed.text  # the task, followed on the VM's page
    assert 'data-snapshot="before-upgrade"' in followed.text
    assert "Snapshot before-upgrade of VM" in followed.text

    action = f"{base}/snapshots/before-upgrade/rollback/"
    asked = get(admin, site, action)
    assert 'data-confirm="snapshot-rollback"' in asked.text
    unconfirmed = post(admin, site, action, {})
    assert unconfirmed.status_code == 200  # asked again: nothing happens without the confirmation
    assert present(site, vm)["status"] == "running"
    rolled = post(admin, site, action, {"confirm": "yes"})
    assert rolled.status_code == 303
    assert present(site, vm)["status"] == "stopped"
    said = get(admin, site, rolled.headers["Location"]).text
    assert "Proxmox stopped it and rolled it back to snapshot before-upgrade" in said

    deleted = post(admin, site, f"{base}/snapshots/before-upgrade/delete/", {"confirm": "yes"})
    assert deleted.status_code == 303
    assert "before-upgrade" not in fake_snapshots(site, vm)


def test_a_name_proxmox_would_refuse_is_said_next_to_the_field(
    site: LightPortal, admin: requests.Session, scratch: tuple[str, str]
) -> None:
    vdc, vm = scratch
    answer = post(admin, site, f"/vdc/{vdc}/vms/{vm}/snapshots/new/", {"name": "1bad"})
    assert answer.status_code == 200
    assert re.search(r'data-error-for="name"', answer.text)
    assert set(fake_snapshots(site, vm)) <= {"@parent"}


def test_another_vdcs_vm_snapshots_are_the_404_page(
    site: LightPortal, bob: requests.Session, scratch: tuple[str, str]
) -> None:
    vdc, vm = scratch
    for path in (f"/vdc/{vdc}/vms/{vm}/snapshots/new/", f"/vdc/{vdc}/vms/{vm}/snapshots/x1/delete/"):
        assert get(bob, site, path).status_code == 404
