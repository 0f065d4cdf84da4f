"""The Access section's forms: plain Django forms, checked again by the services."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms

from orchestrator.services.access_admin.users import PLATFORM_ROLES, SEARCH_MAX


class SearchForm(forms.Form):
    search = forms.CharField(
        label="Find users", max_length=SEARCH_MAX, help_text="Part of a name, user name or email."
    )


class GrantForm(forms.Form):
    vdc = forms.ChoiceField(label="VDC")

    def __init__(self, *args: object, vdcs: Iterable[str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # Django's Form takes data, initial, ...
        self.fields["vdc"].choices = [(v, v) for v in vdcs]  # type: ignore[attr-defined]  # a ChoiceField


class RolesForm(forms.Form):
    roles = forms.MultipleChoiceField(
        label="Platform roles",
        required=False,
        choices=[(r, r) for r in PLATFORM_ROLES],
        widget=forms.CheckboxSelectMultiple,
    )
