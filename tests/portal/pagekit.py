"""What the page tests do as a browser does, on any portal they are given: the devstack world's (the server,
signed in through its identity provider) or the one served from the test's process on the light world
(``tests/portal/served.py``), its zones read as ``tests.apikit.Zones``."""

from __future__ import annotations

import html
import re
from typing import Any

import requests

from tests.apikit import Zones
from tests.portal.sessionkit import Site, csrf_token
from tests.vmkit import put_tagged_vm

ROW_NAME = re.compile(r'<th scope="row"[^>]*><a [^>]*>([^<]+)</a></th>')
HTMX = {"HX-Request": "true"}
TOKENS = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')


def get(session: requests.Session, site: Site, path: str, **headers: str) -> requests.Response:
    return session.get(f"{site.url}{path}", headers=headers, timeout=60)


def served(session: requests.Session, site: Site, path: str) -> str:
    """The page at ``path``, which must be served (200): its HTML."""
    page = get(session, site, path)
    assert page.status_code == 200
    return page.text


def post(
    session: requests.Session, site: Site, path: str, data: dict[str, Any], **headers: str
) -> requests.Response:
    """A form sent as the browser sends it (CSRF token, Referer); redirects are not followed."""
    return session.post(
        f"{site.url}{path}",
        data={"csrfmiddlewaretoken": csrf_token(session, site), **data},
        headers={"Referer": f"{site.url}{path}", **headers},
        allow_redirects=False,
        timeout=180,
    )


def row_names(page: str) -> list[str]:
    return [html.unescape(name) for name in ROW_NAME.findall(page)]


def field_error(page: str, field: str) -> str:
    """The words of the error shown next to a form field ('' when there is none)."""
    found = re.search(rf'<div id="id_{field}_error"[^>]*>(.*?)</div>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).strip() if found else ""


def create_form(**fields: Any) -> dict[str, Any]:
    """The create form as a user fills it in (a small Debian VM in zone-a unless told otherwise)."""
    values = {
        "image": "debian-12",
        "compute_profile": "small",
        "storage_profile": "standard",
        "disk_gb": "",
        "zone": "zone-a",
        "ssh_keys": "",
        "user_data": "",
        "idempotency_key": "",
    }
    values.update(fields)
    return values


def add_fake_vms(world: Zones, zone: str, vdc: str, names_: list[str], **extra: Any) -> list[int]:
    """VMs of ``vdc`` put straight into a zone's fake (tagged as flex.plane tags them); their VMIDs."""
    pve = world.fakes[zone].pve

    def add() -> list[int]:
        first = max([vm.vmid for vm in pve.vms] + [5000]) + 1
        for offset, name in enumerate(names_):
            vmid = first + offset
            put_tagged_vm(pve, vmid, name, vdc, status=extra.get("status", "stopped"), disk="4G")
            if "lock" in extra:
                pve.vm(vmid).lock = extra["lock"]
        return list(range(first, first + len(names_)))

    result: list[int] = world.fakes.on_loop(add)
    return result


def blanked(page: str, ident: str) -> str:
    """A page with the id it names, and its CSRF tokens, blanked out."""
    return TOKENS.sub(r"\1<token>", page).replace(ident, "<id>")
