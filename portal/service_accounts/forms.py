"""The new service account's form: a plain Django form over ``createServiceAccount``'s input, which the
service checks again; its refusals land next to the field they are about (a name taken, too, though the
service says that as a ``Conflict``, not a field's error)."""

from __future__ import annotations

import datetime
from typing import Any

from django import forms

from orchestrator.errors import Conflict, FlexPlaneError
from orchestrator.services.service_accounts import MAX_LIFETIME
from portal.forms import show_error, styled

# The expiry offered: long enough for a script not to break next week, short of the year allowed.
DEFAULT_LIFETIME = datetime.timedelta(days=90)
# The service's field names -> the form's.
FIELDS = {"expiresAt": "expires"}


def _today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


class ServiceAccountForm(forms.Form):
    """``createServiceAccount``'s input: the VDC is the page's."""

    name = forms.CharField(
        label="Name",
        max_length=40,
        help_text="Unique in the VDC: 1 to 40 lowercase letters, digits and hyphens (not at either end).",
    )
    expires = forms.DateField(
        label="Key expires on",
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        help_text=(
            f"At 00:00 UTC that day, its key stops giving tokens: at most {MAX_LIFETIME.days} days from now."
        ),
    )

    def __init__(self, data: Any = None) -> None:
        today = _today()
        super().__init__(data, initial={"expires": today + DEFAULT_LIFETIME})
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false", placeholder="ci")
        self.fields["expires"].widget.attrs.update(
            min=(today + datetime.timedelta(days=1)).isoformat(), max=(today + MAX_LIFETIME).isoformat()
        )
        styled(self)

    def expires_at(self) -> datetime.datetime:
        """The key's expiry as the service takes it: the start of the chosen day, in UTC."""
        day: datetime.date = self.cleaned_data["expires"]
        return datetime.datetime.combine(day, datetime.time(), tzinfo=datetime.UTC)

    def show_error(self, exc: FlexPlaneError) -> None:
        """The service's refusal where the user can act on it: a name taken next to the name."""
        if isinstance(exc, Conflict):
            self.add_error("name", exc.message)
        else:
            show_error(self, exc, FIELDS)
