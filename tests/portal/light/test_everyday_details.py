"""Everyday details of the portal's pages (issue 37, item 10), in this process on the light world: the
favicon, a zero quota said in words, a gateway's counters in units, descriptions that exist, the script that
takes a form's first error into focus, and a console titled with its VM's name.
(``tests/browser/test_everyday_details.py`` checks the same in a browser.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
from django.template import Context, Template

from portal.dashboard import QuotaLine
from portal.templatetags.counters import Reading, gateway_counters
from tests.apikit import Api
from tests.portal.served import LightPortal

ROOT = Path(__file__).resolve().parents[3]
VM_PAGE = "/vdc/demo/vms/zone-a/100/"
QUOTA = '{ vdc(id: "demo") { quota { vms publicIps } } }'
UPDATE = 'mutation($input: VdcUpdateInput!) { updateVdc(id: "demo", input: $input) { errors { message } } }'
DESCRIBED_BY = re.compile(r'aria-describedby="([^"]+)"')
IDS = re.compile(r'\sid="([^"]+)"')
TITLE = re.compile(r"<title>(.*?)</title>", re.S)
QUOTA_LINE = re.compile(r'<li data-quota="([^"]+)">(.*?)</li>', re.S)


def get(session: requests.Session, site: LightPortal, path: str) -> str:
    answer = session.get(f"{site.url}{path}", timeout=30)
    assert answer.status_code == 200, f"{path} answered {answer.status_code}"
    return answer.text


def words(html: str) -> str:
    """The text of some HTML, its tags out and its spaces folded."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def dangling(html: str) -> list[str]:
    """The ids an aria-describedby names that no element of the page has."""
    ids = set(IDS.findall(html))
    return [i for named in DESCRIBED_BY.findall(html) for i in named.split() if i not in ids]


@contextmanager
def zero_quota(api: Api) -> Iterator[None]:
    """VDC demo allows no VMs and no public IPs (it holds web-1 and db-1); as it was after."""
    before = api(QUOTA, user="admin").data["vdc"]["quota"]
    answer = api(UPDATE, user="admin", variables={"input": {"quota": {"vms": 0, "publicIps": 0}}})
    assert answer.data["updateVdc"]["errors"] == [], answer.body
    try:
        yield
    finally:
        api(UPDATE, user="admin", variables={"input": {"quota": before}})


# ------------------------------------------------------------------------------------------ the favicon


def test_every_page_links_the_portals_icon_which_is_in_static(
    site: LightPortal, alice: requests.Session
) -> None:
    page = get(alice, site, "/vdc/demo/")
    assert '<link rel="icon" href="/static/portal/favicon.svg" type="image/svg+xml">' in page
    assert (ROOT / "static" / "portal" / "favicon.svg").read_text().startswith("<svg ")


def test_favicon_ico_answers_with_the_icon_signed_in_or_not(
    site: LightPortal, alice: requests.Session
) -> None:
    for session in (alice, requests.Session()):
        answer = session.get(f"{site.url}/favicon.ico", allow_redirects=False, timeout=30)
        assert answer.status_code == 302
        assert answer.headers["Location"] == "/static/portal/favicon.svg"


# ------------------------------------------------------------------------------------------ quotas


def test_a_zero_limit_is_none_allowed_and_no_percentage() -> None:
    empty, over = QuotaLine("public IPs", "", 0, 0), QuotaLine("networks", "", 1, 0)
    assert (empty.none_allowed, empty.percent, empty.over) == (True, None, False)
    assert (over.none_allowed, over.percent, over.over) == (True, None, True)
    assert (empty.scale, over.scale, QuotaLine("VMs", "", 3, 0).scale) == (1, 1, 3)  # past it: a full bar
    assert empty.used <= empty.high < over.used  # the meter's high region: nothing used is fine, one is not


def test_a_limit_above_zero_is_a_percentage_capped_at_999() -> None:
    assert QuotaLine("VMs", "", 3, 4).percent == 75
    assert QuotaLine("VMs", "", 50, 1).percent == 999
    assert QuotaLine("VMs", "", 3, 4).scale == 4
    assert not QuotaLine("VMs", "", 3, 4).none_allowed


def test_the_dashboard_says_a_zero_quota_in_words(
    site: LightPortal, alice: requests.Session, api: Api
) -> None:
    with zero_quota(api):
        found = dict(QUOTA_LINE.findall(get(alice, site, "/vdc/demo/")))
    lines = {label: words(html) for label, html in found.items()}
    meter = re.search(r'<meter[^>]* max="(\d+)" value="(\d+)"', found["VMs"])
    assert meter is not None
    assert meter.group(1) == meter.group(2) != "0"  # over a zero quota: the bar is full
    assert re.match(r"VMs [1-9]\d* of 0 \(none allowed\): over quota", lines["VMs"]), lines["VMs"]
    assert lines["public IPs"].startswith("public IPs 0 of 0 (none allowed)"), lines["public IPs"]
    assert "over quota" not in lines["public IPs"]
    assert all("%" not in line for line in (lines["VMs"], lines["public IPs"]))
    assert re.match(r"vCPUs \d+ of 16 \(\d+%\)", lines["vCPUs"]), lines["vCPUs"]


# ------------------------------------------------------------------------------------------ gateway counters


def test_a_gateways_counters_read_in_binary_units_and_counted_packets() -> None:
    readings = gateway_counters(
        {
            "dropped_packets": 12,
            "egress_bytes": 29470385124,
            "egress_packets": 21034567,
            "ingress_bytes": 512,
            "ingress_packets": 1,
        }
    )
    assert [str(r) for r in readings] == [
        "inbound 512 B (1 packet)",
        "outbound 27.4 GiB (21,034,567 packets)",
        "dropped 12 packets",
    ]


def test_a_counter_the_portal_does_not_know_is_shown_by_its_name() -> None:
    readings = gateway_counters({"nat_hits": 1234567, "nat_bytes": 2048})
    assert readings == [Reading("nat", bytes=2048), Reading("nat_hits", count=1234567)]
    assert [str(r) for r in readings] == ["nat 2 KiB", "nat hits 1,234,567"]
    assert gateway_counters(None) == []


def test_the_counters_filter_renders_no_raw_number() -> None:
    template = Template(
        "{% load counters %}{% for r in counters|gateway_counters %}{{ r.label }} {{ r.amount }};{% endfor %}"
    )
    shown = template.render(Context({"counters": {"egress_bytes": 29470385124, "egress_packets": 21034567}}))
    assert shown == "outbound 27.4 GiB (21,034,567 packets);"
    assert "29470385124" not in shown


# ------------------------------------------------------------------------------------------ forms


def test_every_description_the_vm_pages_fields_name_is_on_the_page(
    site: LightPortal, alice: requests.Session
) -> None:
    page = get(alice, site, VM_PAGE)
    assert 'aria-describedby="id_include_memory_helptext"' in page
    assert dangling(page) == []


def test_a_snapshot_form_shown_again_marks_its_field_and_loads_the_focusing_script(
    site: LightPortal, alice: requests.Session
) -> None:
    form = get(alice, site, VM_PAGE)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    answer = alice.post(
        f"{site.url}/vdc/demo/vms/zone-a/100/snapshots/new/",
        data={"csrfmiddlewaretoken": token.group(1), "name": "9 lives"},
        headers={"Referer": f"{site.url}{VM_PAGE}"},
        timeout=30,
    )
    assert answer.status_code == 200
    assert re.search(r'<input type="text" name="name" value="9 lives"[^>]* aria-invalid="true"', answer.text)
    assert '<script src="/static/portal/errors.js" defer></script>' in answer.text
    assert dangling(answer.text) == []


def test_the_focusing_script_focuses_the_first_invalid_field_of_a_form() -> None:
    script = (ROOT / "static" / "portal" / "errors.js").read_text()
    assert 'form [aria-invalid="true"]' in script
    assert "field.focus()" in script


# ------------------------------------------------------------------------------------------ the console


def test_the_console_is_titled_with_the_vms_name_and_its_id_beside(
    site: LightPortal, alice: requests.Session
) -> None:
    page = get(alice, site, "/vdc/demo/console/zone-a/100/")
    title = TITLE.search(page)
    assert title is not None
    assert title.group(1).strip() == "Console of web-1 (zone-a/100) · flex.plane"
    assert re.search(r"<h1[^>]*>Console of web-1 <span[^>]*>\(zone-a/100\)</span></h1>", page)
