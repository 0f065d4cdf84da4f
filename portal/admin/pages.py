"""What every admin page shares: the area's navigation, running a service call, confirmations.

An admin page (:func:`admin_page`) carries the area's own navigation; :func:`attempt` runs a
service call and keeps a failure to show in place (on the form, or at the top of the page);
:func:`confirm` is the page a destructive action (delete, remove, drain) asks on first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError
from portal.admin.forms import AdminForm
from portal.admin.sections import SECTIONS
from portal.errors import failure_status
from portal.forms import show_error
from portal.perform import perform

# The organizations' page is the Access section's (its owners' too); the admin area lists it after VDCs.
ORGANIZATIONS = ("Organizations", "portal-access:organizations")


def admin_page(
    request: HttpRequest, template: str, context: dict[str, Any], *, active: str, status: int = 200
) -> HttpResponse:
    """An admin page: the area's own navigation, with ``active`` marked as the current section."""
    nav = [(s.title, s.url("list"), s.kind == active) for s in SECTIONS.values()]
    nav.insert(4, ("Hosts", reverse("portal-admin:hosts"), active == "host"))
    after_vdcs = [title for title, _, _ in nav].index(SECTIONS["vdc"].title) + 1
    nav.insert(after_vdcs, (ORGANIZATIONS[0], reverse(ORGANIZATIONS[1]), False))
    nav.append(("Activity", reverse("activity"), active == "activity"))
    return render(request, template, {"admin_nav": nav, **context}, status=status)


def attempt(call: Callable[[], Any], form: AdminForm | None = None) -> tuple[Any, FlexPlaneError | None]:
    """Run a service call; a failure to show in place is returned, and put on ``form`` if given
    (a field's next to the field, any other at the form's top)."""
    outcome = perform(call)  # the action's audit record (the operation is the URL's)
    if not isinstance(outcome, FlexPlaneError):
        return outcome, None
    if form is not None:
        show_error(form, outcome, form.form_field)
    return None, outcome


def page_status(failure: FlexPlaneError | None, form: AdminForm | None = None) -> int:
    if failure is None and form is not None and form.is_bound and form.errors:
        return 400
    return failure_status(failure)


def confirm(
    request: HttpRequest,
    *,
    active: str,
    heading: str,
    consequence: str,
    action: str,
    submit: str,
    cancel: str,
    failure: FlexPlaneError | None,
) -> HttpResponse:
    return admin_page(
        request,
        "portal/admin/confirm.html",
        {
            "heading": heading,
            "consequence": consequence,
            "action": action,
            "submit": submit,
            "cancel": cancel,
            "failure": failure,
        },
        active=active,
        status=page_status(failure),
    )
