"""Pieces of layout that the portal's pages share, each written once.

``{% fields form "name" "zone" %}`` renders the named fields of ``form``, each as
``portal/vms/_field.html`` does (label, control, help, errors).

``{% table_head "Name" "Zone" actions=True %}`` renders the head of a boxed table (grey band,
``px-3 py-2`` cells); a list among the labels is spread (``{% table_head headers %}``);
``actions=True`` adds the last, unlabelled column of the rows' buttons and links;
``semibold=True`` sets the labels in semibold.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms, template

register = template.Library()


@register.inclusion_tag("portal/_fields.html")
def fields(form: forms.BaseForm, *names: str) -> dict[str, Any]:
    """The form's fields of ``names``, in that order; a field the form left out (one with nothing to
    choose in this installation) is not shown."""
    return {"fields": [form[name] for name in names if name in form.fields]}


@register.inclusion_tag("portal/_table_head.html")
def table_head(*labels: str | Iterable[str], actions: bool = False, semibold: bool = False) -> dict[str, Any]:
    spread: list[str] = []
    for label in labels:
        spread.extend([label] if isinstance(label, str) else label)
    return {"labels": spread, "actions": actions, "semibold": semibold}
