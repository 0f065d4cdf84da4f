"""The VM pages as a browser uses them: ``requests`` sessions signed in as the portal's login records them,
the portal served from this process (tests/portal/served.py), Proxmox the light world's fakepve.

What a page did is checked where it lands: in the fake Proxmox's own state.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.apikit import Api
from tests.portal.pagekit import HTMX, add_fake_vms, create_form, field_error, get, post, row_names, served
from tests.portal.served import LightPortal
from tests.vmkit import (
    SSH_KEY,
    fake_vm,
    fake_vms,
    forget,
    named,
    present,
    scratch_vdcs,
    vm_names,
)

# The devstack's VMs (devstack/seed.py): VDC demo is alice's, VDC other bob's.
DEMO_VMS = ["db-1", "web-1", "web-2"]
OTHER_VMS = ["analytics", "ci-runner"]


@pytest.fixture
def names(api: Api, site: LightPortal) -> Iterator[Callable[[str], str]]:
    with vm_names(api, site) as make:
        yield make


@pytest.fixture
def vdc_of(api: Api, site: LightPortal) -> Iterator[Callable[..., str]]:
    with scratch_vdcs(api, site) as make:
        yield make


# ------------------------------------------------------------------------------------------ list


def test_the_list_shows_the_vdcs_vms_with_status_zone_and_host(
    site: LightPortal, alice: requests.Session
) -> None:
    text = served(alice, site, "/vdc/demo/vms/")
    shown = row_names(text)
    assert [n for n in shown if n in DEMO_VMS + OTHER_VMS + ["legacy-mail"]] == DEMO_VMS
    row = re.search(r'<tr id="vm-zone-a-101".*?</tr>', text, re.S)
    assert row is not None
    assert 'data-vm-status="stopped"' in row.group(0)
    assert ">zone-a<" in row.group(0)
    assert ">pve2<" in row.group(0)
    assert "<html" in text


def test_filters_answer_the_table_alone_for_htmx(site: LightPortal, alice: requests.Session) -> None:
    stopped = get(alice, site, "/vdc/demo/vms/?status=stopped", **HTMX, **{"HX-Target": "vm-table"})
    assert stopped.status_code == 200
    assert stopped.text.lstrip().startswith('<div id="vm-table"')
    assert "<html" not in stopped.text
    assert [n for n in row_names(stopped.text) if n in DEMO_VMS] == ["db-1"]

    in_zone_b = get(alice, site, "/vdc/demo/vms/?zone=zone-b", **HTMX, **{"HX-Target": "vm-table"})
    assert [n for n in row_names(in_zone_b.text) if n in DEMO_VMS] == ["web-2"]

    by_name = get(alice, site, "/vdc/demo/vms/?q=WEB", **HTMX, **{"HX-Target": "vm-table"})
    assert row_names(by_name.text) == ["web-1", "web-2"]


def test_a_filter_it_cannot_apply_is_said_in_words(site: LightPortal, alice: requests.Session) -> None:
    text = served(alice, site, "/vdc/demo/vms/?zone=nowhere&after=not-a-cursor")
    assert "Zone: Select a valid choice" in html.unescape(text)
    assert row_names(text) == []


def test_pages_of_fifty_follow_each_other_by_cursor(
    site: LightPortal, admin: requests.Session, vdc_of: Callable[..., str]
) -> None:
    vdc = vdc_of()
    made = [f"p{i:03d}" for i in range(62)]
    vmids = add_fake_vms(site, "zone-a", vdc, made)
    try:
        first = get(admin, site, f"/vdc/{vdc}/vms/")
        assert row_names(first.text) == made[:50]
        link = re.search(r'<a [^>]*rel="next" href="\?([^"]+)"', first.text)
        assert link is not None
        query = html.unescape(link.group(1))
        assert "after" in parse_qs(query)

        second = get(admin, site, f"/vdc/{vdc}/vms/?{query}", **HTMX, **{"HX-Target": "vm-table"})
        assert row_names(second.text) == made[50:]
        assert 'rel="next"' not in second.text
        assert "First page" in second.text

        filtered = get(admin, site, f"/vdc/{vdc}/vms/?q=p06")
        assert row_names(filtered.text) == ["p060", "p061"]
    finally:
        for vmid in vmids:
            forget(site, "zone-a", vmid)


def test_a_changing_vms_row_refreshes_itself_until_it_is_stable(
    site: LightPortal, alice: requests.Session
) -> None:
    (vmid,) = add_fake_vms(site, "zone-b", "demo", ["a-busy-one"], lock="migrate")
    try:
        # The VDC's listing reads its pools, whose members carry no lock: the VM's own row (read
        # live, with its lock) is the one that says it is busy and refreshes itself.
        page = get(alice, site, "/vdc/demo/vms/?q=a-busy-one")
        row = re.search(rf'<tr id="vm-zone-b-{vmid}"[^>]*>', page.text)
        assert row is not None
        quiet = re.search(r'<tr id="vm-zone-a-100"[^>]*>', get(alice, site, "/vdc/demo/vms/").text)
        assert quiet is not None
        assert "hx-trigger" not in quiet.group(0)

        busy = get(alice, site, f"/vdc/demo/vms/zone-b/{vmid}/row/", **HTMX)
        assert "busy: migrate" in busy.text
        assert "every 3s" in busy.text

        pve = site.fakes["zone-b"].pve
        site.fakes.on_loop(lambda: setattr(pve.vm(vmid), "lock", None))
        done = get(alice, site, f"/vdc/demo/vms/zone-b/{vmid}/row/", **HTMX)
        assert done.text.lstrip().startswith("<tr")
        assert "hx-trigger" not in done.text
        assert "busy:" not in done.text
    finally:
        forget(site, "zone-b", vmid)
    gone = get(alice, site, f"/vdc/demo/vms/zone-b/{vmid}/row/", **HTMX)
    assert gone.status_code == 200
    assert gone.text == ""


# ------------------------------------------------------------------------------------------ create


def test_the_create_form_offers_what_the_vdc_allows_and_shows_the_quota(
    site: LightPortal, bob: requests.Session
) -> None:
    text = served(bob, site, "/vdc/other/vms/new/")
    for label in (
        "Name",
        "Image",
        "Compute profile",
        "Storage profile",
        "Disk size (GiB)",
        "Zone",
        "SSH public keys",
    ):
        assert f">{label}</label>" in text
    options = re.findall(r'<option value="([^"]+)"', text)
    assert "medium" in options
    assert "large" not in options
    assert "ubuntu-24.04" not in options
    assert 'name="idempotency_key"' in text
    assert 'data-quota="vcpus"' in text


def test_the_quota_figures_follow_the_profile_and_disk_chosen(
    site: LightPortal, bob: requests.Session
) -> None:
    query = "compute_profile=medium&storage_profile=standard&image=debian-12&disk_gb=30"
    part = get(bob, site, f"/vdc/other/vms/new/?{query}", **HTMX, **{"HX-Target": "quota"})
    assert part.status_code == 200
    assert part.text.lstrip().startswith('<section id="quota"')
    asked = dict(re.findall(r'data-quota="(\w+)".*?<td class="py-1 pr-2" data-asked>(\d+)', part.text, re.S))
    assert asked == {"vcpus": "2", "memory_mib": "4096", "disk_gb": "30", "vms": "1"}

    bigger = get(
        bob,
        site,
        "/vdc/other/vms/new/?compute_profile=small&storage_profile=standard&image=debian-12&disk_gb=5000",
        **HTMX,
        **{"HX-Target": "quota"},
    )
    assert 'data-over="disk_gb"' in bigger.text


def test_a_bad_disk_size_and_name_are_said_next_to_their_fields(
    site: LightPortal, alice: requests.Session
) -> None:
    get(alice, site, "/vdc/demo/vms/new/")
    answer = post(alice, site, "/vdc/demo/vms/new/", create_form(name="ok-name", disk_gb="5000"))
    assert answer.status_code == 200
    assert "allows disks of 10 to 200 GiB, not 5000" in field_error(answer.text, "disk_gb")
    control = re.search(r'<input[^>]*name="disk_gb"[^>]*>', answer.text)
    assert control is not None
    assert 'aria-invalid="true"' in control.group(0)
    assert "id_disk_gb_error" in control.group(0)  # aria-describedby names the error

    not_a_number = post(alice, site, "/vdc/demo/vms/new/", create_form(name="ok-name", disk_gb="lots"))
    assert "Enter a whole number" in field_error(not_a_number.text, "disk_gb")

    bad_name = post(alice, site, "/vdc/demo/vms/new/", create_form(name="Not_A_Name"))
    assert "is not a valid VM name" in field_error(bad_name.text, "name")
    assert named(site, "Not_A_Name") == []


def test_over_quota_is_said_next_to_the_field_that_asks_too_much(
    site: LightPortal, admin: requests.Session, vdc_of: Callable[..., str]
) -> None:
    vdc = vdc_of(vcpus=1, diskGb=15)
    get(admin, site, f"/vdc/{vdc}/vms/new/")
    cpus = post(
        admin,
        site,
        f"/vdc/{vdc}/vms/new/",
        create_form(name="too-many-cpus", compute_profile="medium", disk_gb="12"),
    )
    assert cpus.status_code == 200
    assert "exceed the quota" in field_error(cpus.text, "compute_profile")
    assert "vCPUs by 1" in field_error(cpus.text, "compute_profile")
    assert field_error(cpus.text, "disk_gb") == ""

    disk = post(admin, site, f"/vdc/{vdc}/vms/new/", create_form(name="too-much-disk", disk_gb="20"))
    assert "disk by 5 GiB" in field_error(disk.text, "disk_gb")
    assert field_error(disk.text, "compute_profile") == ""
    assert named(site, "too-many-cpus") == []
    assert named(site, "too-much-disk") == []


def test_a_create_goes_to_the_vms_page_with_its_task_and_placement(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    name = names("made")
    get(alice, site, "/vdc/demo/vms/new/")
    answer = post(
        alice, site, "/vdc/demo/vms/new/", create_form(name=name, disk_gb="12", idempotency_key=f"{name}-k")
    )
    assert answer.status_code == 303, answer.text[:2000]
    location = urlsplit(answer.headers["Location"])
    ((zone, vmid),) = named(site, name)
    assert location.path == f"/vdc/demo/vms/{zone}/{vmid}/"
    assert parse_qs(location.query)["task"]
    vm = present(site, f"{zone}/{vmid}")
    assert "fp-vdc-demo" in vm["config"]["tags"]
    assert vm["status"] == "running"

    text = served(alice, site, answer.headers["Location"])
    assert "data-task-live" in text
    assert 'data-task-state="succeeded"' in text
    assert "data-placement-reasons" in text
    assert f">{name} <" in text

    again = post(
        alice,
        site,
        "/vdc/demo/vms/new/",
        create_form(name=name, disk_gb="12", idempotency_key=f"{name}-k"),
        **HTMX,
    )
    assert again.status_code == 200
    assert again.headers["HX-Redirect"].startswith(f"/vdc/demo/vms/{zone}/{vmid}/")
    assert len(named(site, name)) == 1


def test_a_taken_name_with_another_spec_keeps_the_form_with_what_was_typed_and_the_name_error(
    site: LightPortal, admin: requests.Session, names: Callable[[str], str], vdc_of: Callable[..., str]
) -> None:
    vdc = vdc_of()
    name = names("web")
    get(admin, site, f"/vdc/{vdc}/vms/new/")
    first = post(admin, site, f"/vdc/{vdc}/vms/new/", create_form(name=name, idempotency_key=f"{name}-1"))
    assert first.status_code == 303, first.text[:2000]

    typed = create_form(
        name=name, compute_profile="medium", disk_gb="30", ssh_keys=SSH_KEY, idempotency_key=f"{name}-2"
    )
    answer = post(admin, site, f"/vdc/{vdc}/vms/new/", typed)
    assert answer.status_code == 200, answer.headers.get("Location")
    assert f"already has a VM named '{name}'" in field_error(answer.text, "name")
    page = html.unescape(answer.text)
    assert re.search(rf'<input[^>]*name="name"[^>]*value="{name}"', page)
    assert re.search(r'<input[^>]*name="disk_gb"[^>]*value="30"', page)
    assert re.search(r'<option value="medium"[^>]*selected', page)
    assert SSH_KEY in page
    # A new key for the form shown again: its next send is a new request, not a retry of this one.
    key = re.search(r'<input[^>]*name="idempotency_key"[^>]*value="([^"]+)"', page)
    assert key is not None
    assert key.group(1) not in (f"{name}-1", f"{name}-2")
    assert len(named(site, name)) == 1


def test_the_create_form_renders_a_new_idempotency_key_each_time(
    site: LightPortal, alice: requests.Session
) -> None:
    keys = {
        re.search(r'name="idempotency_key"[^>]*value="([^"]+)"', get(alice, site, "/vdc/demo/vms/new/").text)
        for _ in range(2)
    }
    assert None not in keys
    assert len({found.group(1) for found in keys if found}) == 2


# ------------------------------------------------------------------------------- one VM and its actions


def test_the_vms_page_shows_its_configuration_addresses_and_actions(
    site: LightPortal, alice: requests.Session
) -> None:
    text = served(alice, site, "/vdc/demo/vms/zone-a/100/")
    assert "web-1" in text
    assert "data-vm-ips" in text
    assert 'data-action="stop"' in text
    assert 'data-action="delete"' in text
    assert 'data-action="start"' not in text  # it runs
    assert 'href="/vdc/demo/vms/zone-a/100/stop/"' in text  # a link to the confirmation, not a POST


def _made(site: LightPortal, session: requests.Session, vdc: str, name: str) -> str:
    """A VM made through the create form; its global id."""
    get(session, site, f"/vdc/{vdc}/vms/new/")
    answer = post(session, site, f"/vdc/{vdc}/vms/new/", create_form(name=name, disk_gb="10"))
    assert answer.status_code == 303, answer.text[:2000]
    ((zone, vmid),) = named(site, name)
    return f"{zone}/{vmid}"


def _made_and_stopped(site: LightPortal, session: requests.Session, name: str) -> tuple[str, str]:
    """A VM of VDC demo made through the create form, then stopped from its page: its id and page path."""
    ident = _made(site, session, "demo", name)
    base = f"/vdc/demo/vms/{ident}"
    post(session, site, f"{base}/stop/", {"confirm": "yes"})
    return ident, base


def test_stop_asks_first_then_powers_off_and_start_powers_on(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    ident = _made(site, alice, "demo", names("power"))
    base = f"/vdc/demo/vms/{ident}"

    asked = post(alice, site, f"{base}/stop/", {})
    assert asked.status_code == 200
    assert 'data-confirm="stop"' in asked.text
    assert present(site, ident)["status"] == "running"

    stopped = post(alice, site, f"{base}/stop/", {"confirm": "yes"})
    assert stopped.status_code == 303
    assert stopped.headers["Location"].startswith(f"{base}/?task=")
    assert present(site, ident)["status"] == "stopped"
    page = get(alice, site, stopped.headers["Location"])
    assert 'data-task-state="succeeded"' in page.text

    started = post(alice, site, f"{base}/start/", {})
    assert started.status_code == 303
    assert present(site, ident)["status"] == "running"


def test_an_action_refused_says_why_on_the_vms_page(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    _, base = _made_and_stopped(site, alice, names("refused"))
    answer = post(alice, site, f"{base}/reboot/", {})
    assert answer.status_code == 303
    page = get(alice, site, answer.headers["Location"])
    assert "Reboot of VM" in page.text
    assert "not running: start it instead" in page.text

    bad_timeout = post(alice, site, f"{base}/shutdown/", {"timeout": "0"})
    assert bad_timeout.status_code == 200
    assert "greater than or equal to 1" in field_error(bad_timeout.text, "timeout")


def test_resize_grows_and_a_resize_down_is_confirmed_first(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    ident, base = _made_and_stopped(site, alice, names("resize"))

    form = get(alice, site, f"{base}/resize/")
    assert form.status_code == 200
    assert ">Compute profile</label>" in form.text

    up = post(alice, site, f"{base}/resize/", {"compute_profile": "medium", "disk_gb": "15"})
    assert up.status_code == 303, up.text[:2000]
    config = present(site, ident)["config"]
    assert (int(config["cores"]), int(config["memory"])) == (2, 4096)

    shrink_disk = post(alice, site, f"{base}/resize/", {"compute_profile": "", "disk_gb": "11"})
    assert "disks only grow" in field_error(shrink_disk.text, "disk_gb")

    down = post(alice, site, f"{base}/resize/", {"compute_profile": "small", "disk_gb": "15"})
    assert down.status_code == 200
    assert "data-confirm-resize" in down.text
    assert int(present(site, ident)["config"]["cores"]) == 2

    confirmed = post(
        alice, site, f"{base}/resize/", {"compute_profile": "small", "disk_gb": "15", "confirm": "1"}
    )
    assert confirmed.status_code == 303
    assert int(present(site, ident)["config"]["cores"]) == 1


def test_delete_asks_first_then_destroys_and_follows_its_task_on_the_list(
    site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    ident = _made(site, alice, "demo", names("delete"))
    base = f"/vdc/demo/vms/{ident}"
    confirm = get(alice, site, f"{base}/delete/")
    assert confirm.status_code == 200
    assert 'data-confirm="delete"' in confirm.text
    assert fake_vm(site, ident) is not None

    deleted = post(alice, site, f"{base}/delete/", {"confirm": "yes"})
    assert deleted.status_code == 303
    assert deleted.headers["Location"].startswith("/vdc/demo/vms/?task=")
    assert fake_vm(site, ident) is None
    listing = get(alice, site, deleted.headers["Location"])
    assert "data-task-live" in listing.text
    assert "was deleted" in listing.text


def test_an_action_without_the_csrf_token_is_refused(site: LightPortal, alice: requests.Session) -> None:
    answer = alice.post(
        f"{site.url}/vdc/demo/vms/zone-a/100/stop/",
        data={"confirm": "yes"},
        headers={"Referer": site.url},
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 403
    assert fake_vms(site, "zone-a")[100]["status"] == "running"


# ------------------------------------------------------------------------------------ another VDC's VM


def _without(text: str, *idents: str) -> str:
    for ident in idents:
        text = text.replace(ident, "ID")
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"|"X-CSRFToken": "[^"]+"', "", text)


def test_bob_gets_the_same_404_for_alices_vm_as_for_one_that_does_not_exist(
    site: LightPortal, bob: requests.Session
) -> None:
    # Under alice's VDC: the VDC is not bob's, exactly like one that does not exist.
    alices = get(bob, site, "/vdc/demo/vms/zone-a/100/")
    missing = get(bob, site, "/vdc/demo/vms/zone-a/99999/")
    assert alices.status_code == missing.status_code == 404
    assert _without(alices.text) == _without(missing.text)
    assert "web-1" not in alices.text

    # Under bob's own VDC: alice's VM is not in it, exactly like a VM that does not exist.
    alices = get(bob, site, "/vdc/other/vms/zone-a/100/")
    missing = get(bob, site, "/vdc/other/vms/zone-a/99999/")
    assert alices.status_code == missing.status_code == 404
    assert _without(alices.text, "zone-a/100") == _without(missing.text, "zone-a/99999")
    assert "web-1" not in alices.text

    stop = post(bob, site, "/vdc/other/vms/zone-a/100/stop/", {"confirm": "yes"})
    assert stop.status_code == 404
    assert fake_vms(site, "zone-a")[100]["status"] == "running"
