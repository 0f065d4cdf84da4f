"""A portal action's one audit record, written around the service call it makes.

``portal.context`` serves every view inside :func:`serving`, which makes the request known here; the
view wraps the service call an action makes in :func:`action`::

    with activity.action(ctx, "startVirtualMachine"):
        outcome = vms.start_vm(ctx, ident)

The record names the operation as the API's mutation that does the same (the portal's registries,
``portal.vms.actions`` and ``portal.admin.actions``: the admin pages' operation is found from the URL),
the targets the URL names, and the VDC of the page. A view that shows a form again without calling a
service (it was not valid, or not confirmed) made no action and writes no record.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from django.http import HttpRequest

from orchestrator.services import audit
from orchestrator.services.context import Context
from portal.admin import actions as admin_actions

_request: contextvars.ContextVar[HttpRequest | None] = contextvars.ContextVar(
    "flexplane_portal_request", default=None
)
# The admin pages' URL names (portal-admin:) -> the verb of their registered action.
_ADMIN_VERBS = {"create": "create", "edit": "update", "delete": "delete"}
# URL arguments that name what an action acts on.
_URL_TARGETS = ("kind", "ident", "zone", "host", "name")


@contextmanager
def serving(request: HttpRequest) -> Iterator[None]:
    """Around a portal view: what :func:`action` needs of the request."""
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


def operation_of(request: HttpRequest | None) -> str:
    """The mutation an admin page's action is (from its URL), else the URL's name."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "portal"
    name, kwargs = match.url_name or "portal", match.kwargs
    if match.namespace == "portal-admin":
        if name.startswith("host-"):
            key = "host." + name.removeprefix("host-")
        elif name == "join-token":
            key = "host.join-token"
        else:
            key = f"{kwargs.get('kind')}.{_ADMIN_VERBS.get(name.rsplit('-', 1)[-1], name)}"
        return admin_actions.MUTATIONS.get(key, f"portal:{name}")
    return f"portal:{name}"


def url_targets(request: HttpRequest | None) -> dict[str, str]:
    """What the URL names: a VM (``<zone>/<vmid>``), a catalog object, a host."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return {}
    kwargs = match.kwargs
    found = {key: str(kwargs[key]) for key in _URL_TARGETS if key in kwargs}
    if "zone" in kwargs and "vmid" in kwargs:
        found.pop("zone")
        found["vm"] = f"{kwargs['zone']}/{kwargs['vmid']}"
    return found


@contextmanager
def action(ctx: Context | None = None, operation: str | None = None, **targets: str) -> Iterator[audit.Trail]:
    """Around the service call of a portal action: its audit record, however the call ends. ``ctx``
    defaults to the request's (``portal.context.service_context``)."""
    request = _request.get()
    ctx = ctx or getattr(request, "flexplane", None)
    if not isinstance(ctx, Context):
        raise RuntimeError("a portal action runs in a portal view, after its service context was made")
    with audit.audited(
        ctx,
        operation or operation_of(request),
        via=audit.PORTAL,
        client=audit.client_of(request),
        targets=url_targets(request) | targets,
    ) as trail:
        yield trail
