"""The admin pages' forms: plain Django forms (there is no database), validated again by the services.

Each form's field names are the service input's own (snake_case), so that a ``ValidationFailed``
from a service lands next to the field it names (:meth:`AdminForm.form_field`). ``to_data()``
is the service's input; ``initial_from(obj)`` fills an edit form from the catalog object.

Forms that offer catalog choices (zones, profiles, images) take the request's service
``Context``: the choices are read live, in the same per-request snapshot as the page.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from django import forms
from django.forms.forms import DeclarativeFieldsMetaclass

from orchestrator.models import StorageProfile, Vdc
from orchestrator.models.catalog import (
    COMPUTE_PROFILE_INPUTS,
    IMAGE_INPUTS,
    STORAGE_PROFILE_INPUTS,
    ZONE_INPUTS,
    Input,
    Kind,
)
from orchestrator.models.clusters import KUBERNETES_VERSION_INPUTS
from orchestrator.models.vdcs import QUOTA, VDC_INPUTS
from orchestrator.services import catalog
from orchestrator.services.context import Context
from orchestrator.services.vdcs import visible_vdcs

INPUT = (
    "mt-1 block w-full rounded border border-slate-300 bg-white px-3 py-2 text-slate-900 "
    "focus:border-sky-600 focus:outline-none focus:ring-2 focus:ring-sky-600 "
    "disabled:bg-slate-100 disabled:text-slate-500 aria-[invalid=true]:border-red-600"
)
CHECKBOX = "h-4 w-4 rounded border-slate-400 text-sky-700 focus:ring-2 focus:ring-sky-600"


class AdminForm(forms.Form):
    """A form whose fields say what is wrong with them, next to them, to screen readers too."""

    # The fields that identify the object: shown but not editable on an edit form.
    key_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any, ctx: Context, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ctx = ctx
        self.editing = editing
        self.add_fields()
        for name, field in self.fields.items():
            multiple = isinstance(field.widget, forms.CheckboxSelectMultiple)
            checkbox = isinstance(field.widget, forms.CheckboxInput)
            if not multiple:
                field.widget.attrs.setdefault("class", CHECKBOX if checkbox else INPUT)
            if editing and name in self.key_fields:
                field.disabled = True

    def add_fields(self) -> None:
        """Fields that depend on the catalog (the zones, the offerings): none by default."""

    def visible(self) -> Iterator[forms.BoundField]:
        """The fields to render, each described by its help text and its errors (``aria-describedby``)."""
        for bound in self:
            described = []
            if bound.help_text:
                described.append(f"{bound.auto_id}_help")
            if bound.errors:
                described.append(f"{bound.auto_id}_error")
                bound.field.widget.attrs["aria-invalid"] = "true"
            if described:
                bound.field.widget.attrs["aria-describedby"] = " ".join(described)
            yield bound

    def form_field(self, service_field: str) -> str | None:
        """The form field a service's field name (``memory_mib``, ``quota.vcpus``) is shown at."""
        name = service_field.replace(".", "_")
        return name if name in self.fields else None

    def to_data(self) -> dict[str, Any]:
        """The service's input from the cleaned data (an edit form leaves out its key fields)."""
        return {
            name: value
            for name, value in self.cleaned_data.items()
            if not (self.editing and name in self.key_fields)
        }

    @classmethod
    def initial_from(cls, obj: Any) -> dict[str, Any]:
        return {name: getattr(obj, name) for name in cls.base_fields if hasattr(obj, name)}


def declared_field(declared: Input) -> forms.Field:
    """The form field of a catalog input, as its declaration (``orchestrator.models.catalog``) says."""
    common: dict[str, Any] = {
        "label": declared.label,
        "required": declared.required or bool(declared.choices),  # a select always sends a choice
        "help_text": declared.help_text,
    }
    if declared.choices:
        return forms.ChoiceField(
            choices=[(c, c) for c in declared.choices], initial=declared.default, **common
        )
    if declared.type is int:
        low, high = declared.low, declared.high
        return forms.IntegerField(
            min_value=None if low is None else int(low),
            max_value=None if high is None else int(high),
            **common,
        )
    if declared.type is float:
        return forms.FloatField(min_value=declared.low, max_value=declared.high, **common)
    if declared.type is bool:
        return forms.BooleanField(**{**common, "required": False})
    widgets = {"textarea": forms.Textarea(attrs={"rows": 3}), "url": forms.URLInput()}
    return forms.CharField(max_length=declared.max_length, widget=widgets.get(declared.widget), **common)


class CatalogFormMetaclass(DeclarativeFieldsMetaclass):
    """Gives a form whose ``declared`` names a catalog kind a field per input of it, in its order
    (those in ``skip`` left out), and that kind's key fields; fields the class itself declares win."""

    def __new__(mcs, name: str, bases: tuple[type, ...], attrs: dict[str, Any]) -> type:
        declared: Kind | None = attrs.get("declared")
        if declared is not None:
            skip = attrs.get("skip", ())
            fields = {i.name: declared_field(i) for i in declared.inputs if i.name not in skip}
            attrs = {**fields, "key_fields": declared.key_fields, **attrs}
        new_class: type = super().__new__(mcs, name, bases, attrs)
        return new_class


class CatalogForm(AdminForm, metaclass=CatalogFormMetaclass):
    """The form of a catalog kind: its fields made from the kind's declaration."""

    declared: ClassVar[Kind]
    skip: ClassVar[tuple[str, ...]] = ()


class OfferingForm(CatalogForm):
    """A profile or an image: its create form also offers it in VDCs (``allow_in_vdcs``), checkboxes
    of every VDC, so that a new offering is not offered to nobody without the admin knowing."""

    def add_fields(self) -> None:
        if self.editing:
            return
        self.fields[catalog.ALLOW_IN_VDCS] = forms.MultipleChoiceField(
            label="Allow in VDCs",
            required=False,
            choices=[
                (v.id, v.id if v.name == v.id else f"{v.name} ({v.id})") for v in visible_vdcs(self.ctx)
            ],
            widget=forms.CheckboxSelectMultiple(attrs={"class": CHECKBOX}),
            help_text="The VDCs whose users may use it from now on. Unticked VDCs do not offer it "
            "until it is allowed in their own settings.",
        )


class ComputeProfileForm(OfferingForm):
    declared = COMPUTE_PROFILE_INPUTS

    def to_data(self) -> dict[str, Any]:
        data = super().to_data()
        data["cpu_type"] = data.get("cpu_type") or None  # empty: the default model
        return data


class StorageProfileForm(OfferingForm):
    """A storage profile; its storages are one field per zone of the catalog (``storage_<zone>``)."""

    declared = STORAGE_PROFILE_INPUTS
    skip = ("storages",)

    def add_fields(self) -> None:
        for zone in catalog.list_zones(self.ctx):
            self.fields[_storage_field(zone.id)] = forms.CharField(
                label=f"Storage in zone {zone.id}",
                required=False,
                max_length=64,
                help_text="The Proxmox storage id (e.g. local-lvm); empty: not offered in this zone.",
            )
        super().add_fields()  # the VDCs last, after what the profile is

    def storage_fields(self) -> list[str]:
        return [name for name in self.fields if name.startswith("storage_")]

    def form_field(self, service_field: str) -> str | None:
        if service_field == "storages":
            return next(iter(self.storage_fields()), None)
        return super().form_field(service_field)

    def to_data(self) -> dict[str, Any]:
        data = super().to_data()
        storages = {
            name.removeprefix("storage_"): data.pop(name).strip()
            for name in self.storage_fields()
            if name in data
        }
        data["storages"] = {zone: storage for zone, storage in storages.items() if storage}
        return data

    @classmethod
    def initial_from(cls, obj: StorageProfile) -> dict[str, Any]:
        initial = super().initial_from(obj)
        initial.update({_storage_field(zone): storage for zone, storage in obj.storages.items()})
        return initial


def _storage_field(zone: str) -> str:
    return f"storage_{zone}"


class ImageForm(OfferingForm):
    declared = IMAGE_INPUTS


class ZoneForm(CatalogForm):
    declared = ZONE_INPUTS


class KubernetesVersionForm(CatalogForm):
    declared = KUBERNETES_VERSION_INPUTS


class VdcForm(CatalogForm):
    """A VDC: what it may use (zones and offerings, checkboxes from the catalog) and how much. Its fields
    are made from the VDC's declaration (``models.vdcs``), its quota's named ``quota_<limit>``; but for its
    organization (the page's) and the snapshots each VM may have (the API's)."""

    declared = VDC_INPUTS
    # The allow-lists: checkboxes of the catalog's names (``add_fields``).
    ALLOWED: ClassVar[tuple[str, ...]] = tuple(i.name for i in VDC_INPUTS.inputs if i.type is list)
    skip = (*ALLOWED, "quota_snapshots_per_vm", "organization")

    def add_fields(self) -> None:
        offered = {
            "zones": [z.id for z in catalog.list_zones(self.ctx)],
            "compute_profiles": [p.name for p in catalog.list_compute_profiles(self.ctx)],
            "storage_profiles": [p.name for p in catalog.list_storage_profiles(self.ctx)],
            "images": [i.name for i in catalog.list_images(self.ctx)],
        }
        for field, names in offered.items():
            # A name the VDC still lists after it left the catalog stays offered, so an edit keeps it.
            kept = [n for n in self.initial.get(field) or [] if n not in names]
            self.fields[field] = forms.MultipleChoiceField(
                label=VDC_INPUTS[field].label,
                required=False,
                choices=[(n, n) for n in [*names, *kept]],
                widget=forms.CheckboxSelectMultiple(attrs={"class": CHECKBOX}),
            )

    def to_data(self) -> dict[str, Any]:
        data = super().to_data()
        quota = [name for name in data if name.startswith(f"{QUOTA.name}_")]
        data[QUOTA.name] = {name.removeprefix(f"{QUOTA.name}_"): data.pop(name) for name in quota}
        data["name"] = data.get("name") or None
        return data

    @classmethod
    def initial_from(cls, obj: Vdc) -> dict[str, Any]:
        initial = super().initial_from(obj)
        return initial | {field: list(getattr(obj, field)) for field in cls.ALLOWED}


class JoinTokenForm(AdminForm):
    """Who a join token is for: a zone of the catalog and the host's name (its Proxmox node's)."""

    zone = forms.ChoiceField(label="Zone")
    host = forms.CharField(
        label="Host",
        max_length=63,
        help_text="The host's name: its Proxmox node's (a DNS label, e.g. pve4).",
    )

    def add_fields(self) -> None:
        zone_field = self.fields["zone"]
        assert isinstance(zone_field, forms.ChoiceField)
        zone_field.choices = [(z.id, f"{z.name} ({z.id})") for z in catalog.list_zones(self.ctx)]
