"""The volume pages' forms: plain Django forms over the mutations' inputs, which the services check again;
their refusals land next to the field they are about."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from orchestrator.errors import Conflict, FlexPlaneError
from portal.forms import choices, show_error, styled

# The services' field names -> the forms'.
FIELDS = {"size_gb": "size_gb", "storage_profile": "storage_profile", "near": "near", "vm": "vm"}


class VolumeForm(forms.Form):
    """``createVolume``'s input: the VDC is the page's."""

    name = forms.CharField(
        label="Name", max_length=63, help_text="Unique in the VDC: lowercase letters, digits and hyphens."
    )
    storage_profile = forms.ChoiceField(label="Storage profile")
    size_gb = forms.IntegerField(label="Size (GiB)", min_value=1)
    near = forms.ChoiceField(
        label="Beside VM",
        required=False,
        help_text="Made in its zone, on its host: a volume on storage local to a host attaches to VMs there.",
    )
    zone = forms.ChoiceField(
        label="Zone", required=False, help_text="Needed without a VM, where there are several."
    )

    def __init__(
        self,
        data: Any = None,
        *,
        profiles: Sequence[str],
        vms: Sequence[tuple[str, str]],
        zones: Sequence[str],
    ) -> None:
        super().__init__(data)
        choices(self.fields["storage_profile"], [(p, p) for p in profiles])
        choices(self.fields["near"], [("", "None"), *vms])
        choices(self.fields["zone"], [("", "Any"), *((z, z) for z in zones)])
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false", placeholder="data")
        styled(self)

    def show_error(self, exc: FlexPlaneError) -> None:
        show_error(self, exc, FIELDS, quota=("size_gb",))


class AttachForm(forms.Form):
    """``attachVolume``'s input: the volume is the page's."""

    vm = forms.ChoiceField(label="Virtual machine")

    def __init__(self, data: Any = None, *, vms: Sequence[tuple[str, str]]) -> None:
        super().__init__(data)
        choices(self.fields["vm"], list(vms))
        styled(self)

    def show_error(self, exc: FlexPlaneError) -> None:
        if isinstance(exc, Conflict):
            self.add_error("vm", exc.message)
        else:
            show_error(self, exc, FIELDS)


class ResizeForm(forms.Form):
    """``resizeVolume``'s input: the volume is the page's."""

    size_gb = forms.IntegerField(label="New size (GiB)", min_value=1)

    def __init__(self, data: Any = None, *, current: int) -> None:
        super().__init__(data, initial={"size_gb": current})
        self.fields["size_gb"].widget.attrs.update(min=current)
        styled(self)

    def show_error(self, exc: FlexPlaneError) -> None:
        show_error(self, exc, FIELDS, quota=("size_gb",))


class SnapshotForm(forms.Form):
    """``createVolumeSnapshot``'s input: the volume is the page's. A refusal about the volume (attached, the
    quota) is said above the form, one about the name next to it."""

    name = forms.CharField(
        label="Snapshot name",
        max_length=63,
        help_text="Unique among the VDC's volume snapshots: lowercase letters, digits and hyphens.",
    )

    def __init__(self, data: Any = None) -> None:
        super().__init__(data)
        self.fields["name"].widget.attrs.update(
            autocomplete="off", spellcheck="false", placeholder="before-upgrade"
        )
        styled(self)

    def show_error(self, exc: FlexPlaneError) -> None:
        show_error(self, exc, FIELDS)


class FromSnapshotForm(forms.Form):
    """``createVolumeFromSnapshot``'s input: the snapshot is the page's (or its row's, ``auto_id`` telling
    the forms of a page apart); its size is offered, and the least."""

    name = forms.CharField(
        label="New volume's name",
        max_length=63,
        help_text="Unique in the VDC: lowercase letters, digits and hyphens.",
    )
    size_gb = forms.IntegerField(label="Size (GiB)", min_value=1)

    def __init__(self, data: Any = None, *, size_gb: int, auto_id: str = "id_%s") -> None:
        super().__init__(data, initial={"size_gb": size_gb}, auto_id=auto_id)
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false")
        self.fields["size_gb"].widget.attrs.update(min=size_gb)
        styled(self)

    def show_error(self, exc: FlexPlaneError) -> None:
        show_error(self, exc, FIELDS, quota=("size_gb",))
