"""The portal's answers carry the security headers; forms need their CSRF token; /graphql is unchanged."""

from __future__ import annotations

import re

import pytest
import requests

from devstack.world import World
from tests.apikit import GraphQL
from tests.portal.sessionkit import login

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\ssrc=)[^>]*>", re.I)
INLINE_STYLE = re.compile(r"\sstyle=", re.I)


def directives(policy: str) -> dict[str, list[str]]:
    parsed = (part.split() for part in policy.split(";") if part.strip())
    return {words[0]: words[1:] for words in parsed}


@pytest.fixture(scope="module")
def alices_pages(world: World) -> list[requests.Response]:
    session, dashboard = login(world, "alice")
    return [dashboard, session.get(f"{world.url}/vdc/nowhere/", timeout=30)]


def test_every_page_has_a_content_security_policy_without_inline_scripts(
    world: World, alices_pages: list[requests.Response]
) -> None:
    for page in [requests.get(f"{world.url}/", timeout=30), *alices_pages]:
        policy = directives(page.headers["Content-Security-Policy"])
        assert policy["script-src"] == ["'self'"]
        assert policy["frame-ancestors"] == ["'none'"]
        assert policy["object-src"] == ["'none'"]
        assert "'unsafe-inline'" not in policy["default-src"] + policy["style-src"]


def test_the_pages_carry_no_inline_script_or_style(alices_pages: list[requests.Response]) -> None:
    for page in alices_pages:
        assert INLINE_SCRIPT.findall(page.text) == []
        assert INLINE_STYLE.findall(page.text) == []


def test_the_pages_may_not_be_framed_and_leak_no_referrer(alices_pages: list[requests.Response]) -> None:
    for page in alices_pages:
        assert page.headers["X-Frame-Options"] == "DENY"
        assert page.headers["Referrer-Policy"] == "same-origin"
        assert page.headers["X-Content-Type-Options"] == "nosniff"


def test_the_session_cookie_is_http_only_and_same_site_lax(world: World) -> None:
    session, _ = login(world, "alice")
    cookie = next(c for c in session.cookies if c.name == "sessionid")
    assert cookie.has_nonstandard_attr("HttpOnly")
    assert cookie.get_nonstandard_attr("SameSite") == "Lax"


def test_an_unsafe_request_without_the_csrf_token_is_refused_in_words(world: World) -> None:
    session, _ = login(world, "alice")
    refused = session.post(f"{world.url}/logout/", data={}, allow_redirects=False, timeout=30)
    assert refused.status_code == 403
    assert "security token is missing or out of date" in refused.text


def test_graphql_keeps_answering_bearer_tokens_without_csrf(api: GraphQL) -> None:
    answer = api("{ vdcs { id } }", user="alice")
    assert answer.status == 200
    assert [v["id"] for v in answer.data["vdcs"]] == ["demo"]
    assert "Content-Security-Policy" not in answer.headers
