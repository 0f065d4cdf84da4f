"""Every destructive action of the portal asks first: its link opens a page naming what goes and saying that
it cannot be undone, a POST without the confirmation's "yes" shows that page again and changes nothing, and
the confirmed POST does it and goes back where the user was.

The pages served from this process on the light world (``tests/portal/served.py``), with Zitadel in memory
(``tests/orchestrator/fakezitadel.py``) for the Access pages: admin gives organization acme an allowance, its
owner olivia deletes a VDC of it; admin revokes bob's membership of VDC demo; alice removes a port forward and
a rule of her VDC's edge gateway (stored as the API stores them: the light world's agents build no gateway).
"""

from __future__ import annotations

import html
import re

import requests

from tests.gatewaykit import ZONE
from tests.orchestrator.api.light.test_access import vdc as vdc_input
from tests.orchestrator.api.light.test_organizations import (
    DELETE,
    ORGANIZATIONS,
    payload,
    user,
)
from tests.orchestrator.inprocess import InProcessApi
from tests.portal.light.conftest import Gateway
from tests.portal.pagekit import get, post
from tests.portal.served import LightPortal

ACCESS = "/admin/access/"
UNDONE = "This cannot be undone"
CREATE_VDC = "mutation($input: VdcInput!) { createVdc(input: $input) { errors { field code message } } }"


# ------------------------------------------------------------------------------------------ fixtures


def text(page: str) -> str:
    """A page's words, its tags and runs of spaces gone."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def main_of(page: str) -> str:
    return page[page.index("<main") : page.index("</main>")]


def asks_first(session: requests.Session, site: LightPortal, path: str, *named: str) -> str:
    """The confirmation page at ``path``: it names each of ``named``, says what cannot be undone, and its
    form sends the "yes" back to ``path``; a POST without that "yes" shows the same page. Its words."""
    page = get(session, site, path)
    assert page.status_code == 200, page.text[:2000]
    said = text(main_of(page.text))
    for name in named:
        assert name in said, (name, said)
    assert UNDONE in said, said
    assert f'action="{path}"' in page.text
    assert 'name="confirm" value="yes"' in page.text
    unconfirmed = post(session, site, path, {})
    assert unconfirmed.status_code == 200
    assert text(main_of(unconfirmed.text)) == said
    return said


def confirmed(session: requests.Session, site: LightPortal, path: str, back: str) -> requests.Response:
    """The confirmed POST: back to ``back``, where the message says what was done."""
    done = post(session, site, path, {"confirm": "yes"})
    assert done.status_code == 303, text(done.text)[:2000]
    assert done.headers["Location"] == back
    return done


# ------------------------------------------------------------------------------------------ a VDC


def test_an_owners_delete_of_a_vdc_asks_first_naming_it_its_zones_and_members_then_deletes_it(
    api: InProcessApi, site: LightPortal, olivia: requests.Session, acme: str
) -> None:
    made = api(CREATE_VDC, user="olivia", variables={"input": vdc_input("acme-gone", vcpus=1)})
    assert made.data["createVdc"]["errors"] == [], made.body
    listing = get(olivia, site, f"{ACCESS}organizations/").text
    path = f"{ACCESS}organizations/{acme}/vdcs/acme-gone/delete/"
    assert f'href="{path}"' in listing  # a link to the confirmation, not a form that deletes
    assert 'data-action="access.vdc-delete"' not in listing

    said = asks_first(olivia, site, path, "Delete VDC", "acme-gone", "zone-a", "holds 0 VMs", "no members")
    assert "members' access" in said
    assert api('{ vdc(id: "acme-gone") { id } }', user="admin").data["vdc"] == {"id": "acme-gone"}

    cancel = re.search(r'href="([^"]+)">Cancel<', get(olivia, site, path).text)
    assert cancel is not None
    assert cancel.group(1) == f"{ACCESS}organizations/"
    confirmed(olivia, site, path, f"{ACCESS}organizations/")
    assert "VDC acme-gone was deleted." in get(olivia, site, f"{ACCESS}organizations/").text
    assert api('{ vdc(id: "acme-gone") { id } }', user="admin").codes == ["NOT_FOUND"]


def test_a_vdc_of_another_organization_has_no_delete_page_for_an_owner(
    site: LightPortal, olivia: requests.Session, acme: str
) -> None:
    foreign = get(olivia, site, f"{ACCESS}organizations/{acme}/vdcs/demo/delete/")
    missing = get(olivia, site, f"{ACCESS}organizations/{acme}/vdcs/no-such/delete/")
    assert foreign.status_code == missing.status_code == 404
    assert main_of(foreign.text).replace("demo", "no-such") == main_of(missing.text)
    assert (
        post(olivia, site, f"{ACCESS}organizations/{acme}/vdcs/demo/delete/", {"confirm": "yes"}).status_code
        == 404
    )


def test_taking_an_allowance_away_asks_first_and_a_refusal_is_said_on_the_confirmation(
    api: InProcessApi, site: LightPortal, admin: requests.Session, acme: str
) -> None:
    made = api(CREATE_VDC, user="olivia", variables={"input": vdc_input("acme-keeps", vcpus=1)})
    assert made.data["createVdc"]["errors"] == [], made.body
    path = f"{ACCESS}organizations/{acme}/delete/"
    assert f'href="{path}"' in get(admin, site, f"{ACCESS}organizations/").text
    asks_first(admin, site, path, "Take the allowance", acme, "acme-keeps", "lose the roles")

    refused = post(admin, site, path, {"confirm": "yes"})
    assert refused.status_code == 409
    assert "still has VDC(s) acme-keeps" in text(refused.text)
    assert [o["organization"] for o in api(ORGANIZATIONS, user="admin").data["organizations"]] == [acme]

    assert payload(api(DELETE, user="admin", variables={"id": "acme-keeps"}), "deleteVdc")["errors"] == []
    confirmed(admin, site, path, f"{ACCESS}organizations/")
    assert api(ORGANIZATIONS, user="admin").data["organizations"] == []


# ------------------------------------------------------------------------------------------ a membership


def test_revoking_a_membership_asks_first_naming_the_member_and_the_vdc_then_revokes_it(
    api: InProcessApi, site: LightPortal, admin: requests.Session, bob_in_demo: str
) -> None:
    bob = bob_in_demo
    page = get(admin, site, f"{ACCESS}users/{bob}/").text
    path = f"{ACCESS}users/{bob}/vdcs/demo/revoke/"
    assert f'href="{path}"' in page
    assert 'data-action="access.revoke"' not in page

    said = asks_first(admin, site, path, "Revoke Bob Example's membership of VDC demo", "bob@example.com")
    assert "next token" in said
    assert sorted(user(api, "bob")["vdcs"]) == ["demo", "other"]

    confirmed(admin, site, path, f"{ACCESS}users/{bob}/")
    back = text(get(admin, site, f"{ACCESS}users/{bob}/").text)
    assert "Bob Example is no longer a member of VDC demo." in back
    assert user(api, "bob")["vdcs"] == ["other"]
    assert get(admin, site, path).status_code == 404  # no membership left to revoke


def test_removing_a_port_forward_asks_first_naming_the_address_port_protocol_and_target_then_removes_it(
    site: LightPortal, alice: requests.Session, gateway: Gateway
) -> None:
    key = f"{gateway.address}:8080/tcp"
    path = f"/vdc/demo/port-forwards/{gateway.address}/tcp/8080/remove/"
    listing = get(alice, site, "/vdc/demo/port-forwards/").text
    assert f'data-forward="{key}"' in listing
    assert f'href="{path}"' in listing  # a link to the confirmation, not a form that removes
    assert 'data-action="gateway.unforward"' not in listing

    asks_first(alice, site, path, f"Remove port forward {key}?", gateway.vm_name, f"{gateway.vm_address}:80")
    assert f'data-forward="{key}"' in get(alice, site, "/vdc/demo/port-forwards/").text  # still there

    confirmed(alice, site, path, "/vdc/demo/port-forwards/")
    after = get(alice, site, "/vdc/demo/port-forwards/").text
    assert f"Port 8080/tcp of {gateway.address} is no longer forwarded." in after
    assert f'data-forward="{key}"' not in after
    assert get(alice, site, path).status_code == 404  # nothing left to remove


def test_removing_a_gateway_firewall_rule_asks_first_describing_the_rule_then_removes_it(
    site: LightPortal, alice: requests.Session, gateway: Gateway
) -> None:
    path = f"/vdc/demo/gateway-firewall/{ZONE}/0/remove/"
    listing = get(alice, site, "/vdc/demo/gateway-firewall/").text
    assert 'data-rule="0"' in listing
    assert f'href="{path}"' in listing
    assert 'data-action="gateway.rule.remove"' not in listing

    asks_first(
        alice,
        site,
        path,
        f"Remove rule 1 of the gateway firewall of zone {ZONE}?",
        "Inbound, allow tcp",
        "port 443",
        "(web)",
    )
    assert 'data-rule="0"' in get(alice, site, "/vdc/demo/gateway-firewall/").text

    confirmed(alice, site, path, "/vdc/demo/gateway-firewall/")
    after = get(alice, site, "/vdc/demo/gateway-firewall/").text
    assert f"Rule 1 of the gateway firewall of zone {ZONE} was removed." in after
    assert 'data-rule="0"' not in after
    assert get(alice, site, path).status_code == 404


def test_bob_gets_the_not_found_page_for_the_confirmations_of_alices_forward_and_rule(
    site: LightPortal, bob: requests.Session, gateway: Gateway
) -> None:
    forward = get(bob, site, f"/vdc/other/port-forwards/{gateway.address}/tcp/8080/remove/")
    none = get(bob, site, "/vdc/other/port-forwards/203.0.113.250/tcp/8080/remove/")
    assert forward.status_code == none.status_code == 404
    assert main_of(forward.text).replace(gateway.address, "<ip>") == main_of(none.text).replace(
        "203.0.113.250", "<ip>"
    )
    assert get(bob, site, f"/vdc/other/gateway-firewall/{ZONE}/0/remove/").status_code == 404
    assert (
        post(bob, site, f"/vdc/other/gateway-firewall/{ZONE}/0/remove/", {"confirm": "yes"}).status_code
        == 404
    )
