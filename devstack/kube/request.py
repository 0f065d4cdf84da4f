"""Reading a request: kmock's parsing, the namespace paths it cannot read, and the query parameters."""

from __future__ import annotations

import base64
import json
import re

import aiohttp.web
import kmock

from devstack.kube.errors import ApiError
from devstack.kube.objects import NAMESPACES, Body

# A namespace path, which kmock's path parser cannot read: it takes "namespaces" for a scope (and
# fails on the bare list path, /api/v1/namespaces).
NAMESPACE_PATH = re.compile(
    r"/api/v1/namespaces(?:/(?P<name>[^/]+)(?:/(?P<subresource>status|finalize))?)?/?"
)


async def parse_request(raw_request: aiohttp.web.BaseRequest, request_id: int) -> kmock.Request:
    """The request as kmock's reactions and criteria see it, namespace paths included."""
    found = NAMESPACE_PATH.fullmatch(raw_request.path)
    if found is None:
        # Private: kmock exports no parser of an aiohttp request; this is the one its own handler
        # calls, so that requests match the criteria of a test's reactions as they would in kmock.
        return await kmock.Request._parse(raw_request, id=request_id)
    body = await raw_request.read()
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    method = kmock.method(raw_request.method)
    name = found["name"]
    return kmock.Request(
        id=request_id,
        raw_request=raw_request,
        method=method,
        url=raw_request.url,
        params=dict(raw_request.query),
        headers=dict(raw_request.headers),
        cookies=dict(raw_request.cookies),
        body=body,
        text=body.decode("utf-8", "replace"),
        data=data,
        action=_action(method, name, raw_request.query.get("watch")),
        resource=NAMESPACES,
        namespace=None,
        name=name,
        subresource=found["subresource"],
    )


def _action(method: kmock.method, name: str | None, watch: str | None) -> kmock.action | None:
    """The Kubernetes action of a request, as kmock tells it for the paths it can read."""
    if method == kmock.method.GET and watch == "true":
        return kmock.action.WATCH
    if name is None:
        return {kmock.method.GET: kmock.action.LIST, kmock.method.POST: kmock.action.CREATE}.get(method)
    return {
        kmock.method.GET: kmock.action.FETCH,
        kmock.method.PATCH: kmock.action.UPDATE,
        kmock.method.DELETE: kmock.action.DELETE,
    }.get(method)


def object_body(request: kmock.Request) -> Body:
    """The request's JSON object; 400 if it has none."""
    if not isinstance(request.data, dict):
        raise ApiError.bad_request("the body of the request must be a JSON object")
    return request.data


def content_type(request: kmock.Request) -> str:
    for header, value in request.headers.items():
        if header.lower() == "content-type":
            return value.split(";")[0].strip().lower()
    return ""


def int_param(request: kmock.Request, name: str) -> int:
    """A non-negative integer query parameter (``limit``, ``timeoutSeconds``); 0 when absent."""
    text = request.params.get(name, "")
    if not text:
        return 0
    if not text.isdigit():
        raise ApiError.bad_request(f"{name}: invalid value {text!r}: must be a non-negative integer")
    return int(text)


def resource_version_param(request: kmock.Request) -> int | None:
    """The revision that a watch resumes after, or None to start with the current objects."""
    text = request.params.get("resourceVersion", "")
    if text in ("", "0"):
        return None
    if not text.isdigit():
        raise ApiError.bad_request(f"resourceVersion: invalid value {text!r}")
    return int(text)


def is_dry_run(request: kmock.Request) -> bool:
    return bool(request.params.get("dryRun"))


def encode_continue(key: tuple[str, str]) -> str:
    """The ``continue`` token of a list page that ended at ``key`` (namespace, name)."""
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def decode_continue(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(namespace), str(name)
    except (ValueError, TypeError):
        raise ApiError.bad_request(f"continue key is not valid: {token!r}") from None
