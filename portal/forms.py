"""What the portal's forms share: plain Django forms over the services' inputs, which check everything
again, and one way to show what a service refused.

:func:`show_error` puts a domain error where the user can act on it, as the API's ``errors { field }``
does: a ``ValidationFailed`` next to the field it names, a ``QuotaExceeded`` next to what asks for the
quota, anything else (and a name the form has no field for) above the form. A form whose service names
its fields otherwise says how they map (``fields``); a form made of several (a cluster's node pools, a
security group's rules) picks the one the error is about, then shows it there the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from django import forms
from django.http import HttpRequest, QueryDict

from orchestrator.errors import FlexPlaneError, QuotaExceeded, ValidationFailed

CONTROL = "block w-full rounded border border-slate-300 px-2 py-1 focus:outline-2 focus:outline-sky-600"

# How a service's field names map to a form's: a mapping (a name it lacks is the form's own), or a
# function (None: no field of the form).
FieldNames = Mapping[str, str] | Callable[[str], str | None]


def posted(request: HttpRequest) -> QueryDict | None:
    """The form's data: what was POSTed, or None for a GET (an unbound form)."""
    return request.POST if request.method == "POST" else None


def confirmed(request: HttpRequest) -> bool:
    """Whether a confirmation page's form was sent with its "yes" (``confirm=yes``)."""
    return request.method == "POST" and request.POST.get("confirm") == "yes"


def styled(
    form: forms.Form, keep: tuple[type[forms.Widget], ...] = (forms.CheckboxSelectMultiple, forms.HiddenInput)
) -> None:
    """The portal's look on the form's inputs (those of the ``keep`` kinds keep their own)."""
    for field in form.fields.values():
        if not isinstance(field.widget, keep):
            field.widget.attrs.setdefault("class", CONTROL)


def choices(field: forms.Field, values: Sequence[tuple[str, str]]) -> None:
    """Set the choices of a ``ChoiceField`` (value, label), known only once the request is."""
    assert isinstance(field, forms.ChoiceField)
    field.choices = list(values)


def show_error(
    form: forms.Form,
    exc: FlexPlaneError,
    fields: FieldNames | None = None,
    *,
    quota: Iterable[str | None] = (),
) -> None:
    """Show a service's error on ``form``: a ``ValidationFailed`` next to the field it names (``fields``:
    the service's names -> the form's), a ``QuotaExceeded`` next to each of the ``quota`` fields (what
    to ask less of), anything else above the form. A field the form does not have: above it too."""
    if isinstance(exc, ValidationFailed):
        named = {_form_field(exc.field, fields)}
    elif isinstance(exc, QuotaExceeded):
        named = set(quota)
    else:
        named = set()
    at = {field if field in form.fields else None for field in named} or {None}
    for field in sorted(at, key=lambda f: f or ""):
        form.add_error(field, exc.message)


def _form_field(service_field: str, fields: FieldNames | None) -> str | None:
    if fields is None:
        return service_field
    if isinstance(fields, Mapping):
        return fields.get(service_field, service_field)
    return fields(service_field)
