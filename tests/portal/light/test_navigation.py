"""The header's navigation: an organization owner reaches their organizations from it, the admin from the
admin area's navigation and its start page (with how many there are), and the current page is the one link
marked as such (aria-current), the most specific one (Organizations, under Access, under Admin)."""

from __future__ import annotations

import html
import re

import requests

from tests.apikit import Api
from tests.portal.light.conftest import ORGANIZATIONS
from tests.portal.served import LightPortal

MAIN_NAV = re.compile(r'<nav aria-label="Main".*?</nav>', re.S)
ADMIN_NAV = re.compile(r'<nav aria-label="Admin".*?</nav>', re.S)
LINK = re.compile(r"<a ([^>]*)>(.*?)</a>", re.S)
CARD = re.compile(
    r'<a href="([^"]+)" class="block rounded[^>]*>\s*<span[^>]*>([^<]+)</span>\s*<span[^>]*>([^<]+)</span>'
)
ORGANIZATIONS_PAGE = "/admin/access/organizations/"


def page(session: requests.Session, site: LightPortal, path: str) -> str:
    answer = session.get(f"{site.url}{path}", timeout=60)
    assert answer.status_code == 200, (path, answer.text[:500])
    return answer.text


def links(nav: str) -> dict[str, tuple[str, bool]]:
    """A navigation's links: text -> (href, marked as the current page)."""
    found = {}
    for attributes, text in LINK.findall(nav):
        href = re.search(r'href="([^"]+)"', attributes)
        words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
        found[words] = (href.group(1) if href else "", 'aria-current="page"' in attributes)
    return found


def main_nav(text: str) -> dict[str, tuple[str, bool]]:
    nav = MAIN_NAV.search(text)
    assert nav is not None
    return {words: link for words, link in links(nav.group(0)).items() if not words.startswith("flex.plane")}


def current(nav: dict[str, tuple[str, bool]]) -> list[str]:
    return [words for words, (_, marked) in nav.items() if marked and "(" not in words]  # not the VDC menu's


def test_an_owner_reaches_their_organizations_from_the_header(
    site: LightPortal, olivia: requests.Session, acme: str
) -> None:
    nav = main_nav(page(olivia, site, "/"))
    assert nav["Organizations"] == (ORGANIZATIONS_PAGE, False)
    organizations = page(olivia, site, nav["Organizations"][0])
    assert current(main_nav(organizations)) == ["Organizations"]
    assert f'data-row="{acme}"' in organizations
    assert current(main_nav(page(olivia, site, "/admin/access/"))) == ["Access"]
    assert current(main_nav(page(olivia, site, f"/admin/access/organizations/{acme}/vdcs/new/"))) == [
        "Organizations"
    ]


def test_a_tenant_has_no_organizations_link(site: LightPortal, alice: requests.Session) -> None:
    nav = main_nav(page(alice, site, "/vdc/demo/"))
    assert "Organizations" not in nav
    assert "Access" not in nav
    assert current(nav) == ["Dashboard"]


def test_the_admin_area_lists_organizations_with_how_many_have_an_allowance(
    site: LightPortal, admin: requests.Session, api: Api, acme: str
) -> None:
    start = page(admin, site, "/admin/")
    side = ADMIN_NAV.search(start)
    assert side is not None
    assert links(side.group(0))["Organizations"] == (ORGANIZATIONS_PAGE, False)
    cards = {title.strip(): (href, count.strip()) for href, title, count in CARD.findall(start)}
    listed = api(ORGANIZATIONS, user="admin").data["organizations"]
    assert acme in [o["organization"] for o in listed]
    noun = "organization" if len(listed) == 1 else "organizations"
    assert cards["Organizations"] == (ORGANIZATIONS_PAGE, f"{len(listed)} {noun}")
    # Beside the VDCs, in the navigation and on the start page alike.
    titles = list(links(side.group(0)))
    assert titles[titles.index("VDCs") + 1] == "Organizations"
    assert list(cards)[list(cards).index("VDCs") + 1] == "Organizations"
    # The other admin pages carry it too.
    hosts = ADMIN_NAV.search(page(admin, site, "/admin/hosts/"))
    assert hosts is not None
    assert "Organizations" in links(hosts.group(0))


def test_the_admin_header_marks_only_the_most_specific_link(
    site: LightPortal, admin: requests.Session
) -> None:
    assert current(main_nav(page(admin, site, "/admin/hosts/"))) == ["Admin"]
    assert current(main_nav(page(admin, site, "/admin/access/"))) == ["Access"]
    assert current(main_nav(page(admin, site, ORGANIZATIONS_PAGE))) == ["Access"]  # no link of its own
