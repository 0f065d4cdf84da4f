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

from orchestrator.errors import FlexPlaneError, NotFound, PermissionDenied, Unauthenticated
from portal.activity import trail as activity
from portal.admin.forms import AdminForm
from portal.admin.sections import SECTIONS
from portal.errors import status_of
from portal.forms import show_error


def admin_page(
    request: HttpRequest, template: str, context: dict[str, Any], *, active: str, status: int = 200
) -> HttpResponse:
    """An admin page: the area's own navigation, with ``active`` marked as the current section."""
    nav = [(s.title, s.url("list"), s.kind == active) for s in SECTIONS.values()]
    nav.insert(4, ("Hosts", reverse("portal-admin:hosts"), active == "host"))
    nav.append(("Activity", reverse("activity"), active == "activity"))
    return render(request, template, {"admin_nav": nav, **context}, status=status)


# Errors a page shows in place; the rest (NotFound, PermissionDenied, Unauthenticated) are pages of their own.
_PAGE_ERRORS = (NotFound, PermissionDenied, Unauthenticated)


def attempt(call: Callable[[], Any], form: AdminForm | None = None) -> tuple[Any, FlexPlaneError | None]:
    """Run a service call; a failure to show in place is returned, and put on ``form`` if given
    (a field's next to the field, any other at the form's top)."""
    try:
        with activity.action():  # the action's audit record (the operation is the URL's)
            return call(), None
    except _PAGE_ERRORS:
        raise
    except FlexPlaneError as exc:
        if form is not None:
            show_error(form, exc, form.form_field)
        return None, exc


def page_status(failure: FlexPlaneError | None, form: AdminForm | None = None) -> int:
    if failure is not None:
        return status_of(failure)[0]
    return 400 if form is not None and form.is_bound and form.errors else 200


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
