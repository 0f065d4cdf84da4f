"""The volume pages as a browser uses them: ``requests`` sessions signed in as the portal's login records
them, the portal served from this process (tests/portal/served.py) on the light world.

Alice creates a volume beside a running VM, attaches it, sees it on the VM's page with its disk in the VM's
config, grows it, detaches it and deletes it; each step is checked where it lands (the fake's Proxmox), and
bob, of another VDC, gets the 404 page for every one of her volume's pages.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
import requests

from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.portal.pagekit import field_error, get, post, served
from tests.portal.served import LightPortal
from tests.vmkit import create, fake_vm, ok, present

ROW = re.compile(r'<tr data-volume="([^"]+)" data-status="([^"]+)">')
LIST = "{ volumes { id name vdc status } }"


@pytest.fixture
def running_vm(api: InProcessApi) -> Iterator[dict[str, str]]:
    vm = ok(create(api, "alice", "demo", name=f"vp{uuid.uuid4().hex[:6]}"))["virtualMachine"]
    yield vm
    for volume in api(LIST, user="admin").data["volumes"]:
        if volume["name"].startswith("pagevol"):
            for mutation in ("detachVolume", "deleteVolume"):
                document = f"mutation($id: ID!) {{ {mutation}(id: $id) {{ errors {{ code }} }} }}"
                api(document, user="admin", variables={"id": volume["id"]})
    api(
        "mutation($id: ID!) { deleteVirtualMachine(id: $id) { errors { code } } }",
        user="admin",
        variables={"id": vm["id"]},
    )


def rows(session: requests.Session, site: LightPortal) -> dict[str, str]:
    return dict(ROW.findall(served(session, site, "/vdc/demo/volumes/")))


def test_alice_creates_a_volume_attaches_it_to_a_running_vm_and_sees_it_in_its_config(
    api: InProcessApi,
    site: LightPortal,
    light: LightWorld,
    alice: requests.Session,
    bob: requests.Session,
    running_vm: dict[str, str],
) -> None:
    name = f"pagevol-{uuid.uuid4().hex[:6]}"
    vm = running_vm
    zone, vmid = vm["id"].split("/")

    # Create, beside the running VM.
    served(alice, site, "/vdc/demo/volumes/new/")
    form = {"name": name, "storage_profile": "standard", "size_gb": "12", "near": vm["id"], "zone": ""}
    made = post(alice, site, "/vdc/demo/volumes/new/", form)
    assert made.status_code == 303, made.text[:3000]
    assert rows(alice, site)[name] == "available"
    [volume] = [v for v in api(LIST, user="alice", vdc="demo").data["volumes"] if v["name"] == name]
    vzone, vvmid = volume["id"].split("/")
    base = f"/vdc/demo/volumes/{vzone}/{vvmid}"

    # Attach, to the running VM: hot-plugged into its config.
    page = served(alice, site, f"{base}/attach/")
    assert vm["id"] in page
    attached = post(alice, site, f"{base}/attach/", {"vm": vm["id"]})
    assert attached.status_code == 303, attached.text[:3000]
    assert rows(alice, site)[name] == "in-use"
    config = present(light, vm["id"])["config"]
    [disk] = [key for key, value in config.items() if f"serial=fpvol-{vvmid}" in str(value)]
    assert disk == "scsi1"

    # The VM's page shows it, with its disk in the VM's config.
    detail = served(alice, site, f"/vdc/demo/vms/{zone}/{vmid}/")
    section = detail[detail.index("data-volumes") :]
    assert f'data-volume="{name}"' in section
    assert re.search(r"data-disk>scsi1<", section)

    # Another VDC's user finds none of its pages.
    for path in ("attach/", "detach/", "resize/", "delete/"):
        assert get(bob, site, f"{base}/{path}").status_code == 404
    assert name not in served(bob, site, "/vdc/other/volumes/")

    # Grow: never below its size.
    small = post(alice, site, f"{base}/resize/", {"size_gb": "5"})
    assert small.status_code == 200
    assert "only grow" in field_error(small.text, "size_gb")
    grown = post(alice, site, f"{base}/resize/", {"size_gb": "20"})
    assert grown.status_code == 303
    assert "size=20G" in present(light, vm["id"])["config"][disk]

    # Delete is refused while attached; detach, then delete.
    refused = post(alice, site, f"{base}/delete/", {"confirm": "yes"})
    assert refused.status_code == 409
    assert "detach it first" in refused.text
    detached = post(alice, site, f"{base}/detach/", {"confirm": "yes"})
    assert detached.status_code == 303
    assert disk not in present(light, vm["id"])["config"]
    deleted = post(alice, site, f"{base}/delete/", {"confirm": "yes"})
    assert deleted.status_code == 303
    assert name not in rows(alice, site)
    assert fake_vm(light, volume["id"]) is None


def test_a_create_refused_says_why_next_to_the_field(
    site: LightPortal, alice: requests.Session, running_vm: dict[str, str]
) -> None:
    served(alice, site, "/vdc/demo/volumes/new/")
    form = {
        "name": "pagevol-big",
        "storage_profile": "standard",
        "size_gb": "9999",
        "near": "",
        "zone": "zone-a",
    }
    page = post(alice, site, "/vdc/demo/volumes/new/", form)
    assert page.status_code == 200
    assert "allows volumes of" in field_error(page.text, "size_gb")
