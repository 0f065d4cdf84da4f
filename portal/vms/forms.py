"""The VM pages' forms: plain Django forms (there is no database), checked again by the services.

A form checks what a browser can get wrong on its own (a missing field, a number that is not
one); everything else is the service's to decide, and its ``ValidationFailed`` lands next to the
field it names (:func:`portal.forms.show_error`, :meth:`CreateVmForm.form_field` for a NIC's field), as the
API's ``errors { field }`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django import forms

from orchestrator.models import VirtualMachine
from orchestrator.models.networks import Network
from orchestrator.models.vms import parse_vm_id
from orchestrator.services import vms
from orchestrator.services.vms import CreateVm, VmFilter
from portal.forms import choices, styled
from portal.networks.forms import NetworkChoice
from portal.templatetags.sizes import size
from portal.vms.actions import ACTIONS, BULK_ACTIONS, VmAction
from portal.vms.offer import Offer, compute_profile_label

STATUSES = ("running", "stopped", "unknown")
# The most VMs one action of the list takes: a page of it.
BULK_MAX = vms.DEFAULT_PAGE_SIZE


def _profile_choices(offer: Offer) -> list[tuple[str, str]]:
    return [(p.name, compute_profile_label(p)) for p in offer.compute_profiles.values()]


class VmFilterForm(forms.Form):
    """The list's search and filters (every one given must hold) and the page it starts after."""

    q = forms.CharField(
        label="Search",
        required=False,
        max_length=63,
        help_text="Part of a name, an address, a status, a zone or a compute profile.",
    )
    status = forms.ChoiceField(label="Status", required=False)
    zone = forms.ChoiceField(label="Zone", required=False)
    after = forms.CharField(required=False, max_length=512, widget=forms.HiddenInput)

    def __init__(self, data: Any, zones: Iterable[str]) -> None:
        super().__init__(data)
        choices(self.fields["status"], [("", "Any status"), *((s, s) for s in STATUSES)])
        choices(self.fields["zone"], [("", "Any zone"), *((z, z) for z in zones)])
        self.fields["q"].widget.attrs.update(
            type="search",
            placeholder="web, 10.0.1.5, small…",
            autocomplete="off",
            spellcheck="false",
            **{"aria-describedby": "vm-search-help"},
        )
        styled(self, keep=())

    def where(self) -> VmFilter:
        data = self.cleaned_data
        text = data["q"].strip() or None
        return VmFilter(status=data["status"] or None, zone=data["zone"] or None, search=text)

    def query(self, **changes: str | None) -> dict[str, str]:
        """The filters as query parameters (``changes`` applied; None removes one), for links."""
        values = {name: self.cleaned_data.get(name) or "" for name in ("q", "status", "zone")}
        values.update({k: v or "" for k, v in changes.items()})
        return {k: v for k, v in values.items() if v}


class CreateVmForm(forms.Form):
    """Exactly ``createVirtualMachine``'s input, with the VDC's offerings as the choices."""

    name = forms.CharField(
        label="Name",
        max_length=63,
        help_text="Also the VM's hostname: lowercase letters, digits and hyphens.",
    )
    image = forms.ChoiceField(label="Image")
    compute_profile = forms.ChoiceField(label="Compute profile")
    storage_profile = forms.ChoiceField(label="Storage profile")
    disk_gb = forms.IntegerField(
        label="Disk size (GiB)",
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        help_text="Empty: the storage profile's default, at least what the image needs.",
    )
    zone = forms.ChoiceField(label="Zone", required=False)
    ssh_keys = forms.CharField(
        label="SSH public keys",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="One OpenSSH public key per line, for the image's default user.",
    )
    user_data = forms.CharField(
        label="User data (optional)",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
        help_text="Cloud-init data merged in as vendor data: #cloud-config, a script… at most 64 KiB.",
    )
    # Set when the form is first shown: sending it twice (a retry, a double click) makes one VM.
    idempotency_key = forms.CharField(required=False, max_length=255, widget=forms.HiddenInput)

    def __init__(self, offer: Offer, data: Any = None, networks: Sequence[Network] = ()) -> None:
        initial = {
            "idempotency_key": uuid.uuid4().hex,
            # More than one zone: placement chooses (the advertised path), unless the user picks one.
            "zone": offer.zones[0] if len(offer.zones) == 1 else "",
            "compute_profile": offer.smallest_compute_profile(),
            "storage_profile": next(iter(offer.storage_profiles), None),
            "image": next(iter(offer.images), None),
        }
        super().__init__(data, initial=initial)
        self.offer = offer
        images = offer.images.values()
        choices(
            self.fields["image"],
            [(i.name, f"{i.name}: {i.description}" if i.description else i.name) for i in images],
        )
        choices(self.fields["compute_profile"], _profile_choices(offer))
        storages = offer.storage_profiles.values()
        choices(
            self.fields["storage_profile"],
            [(p.name, f"{p.name}: {p.min_gb} to {p.max_gb} GiB") for p in storages],
        )
        # More than one zone: the create may leave the choice to placement (the zone with the most room).
        anywhere = [("", "Any zone: placement chooses")] if len(offer.zones) > 1 else []
        choices(self.fields["zone"], [*anywhere, *((z, z) for z in offer.zones)])
        default = offer.default_disk_gb(initial["storage_profile"] or "", initial["image"] or "")
        if default is not None:
            self.fields["disk_gb"].widget.attrs["placeholder"] = f"{default} (the default)"
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false")
        self.network_choice = NetworkChoice(self, networks)
        styled(self, keep=())

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        self.network_choice.clean(data)
        return data

    def form_field(self, service_field: str) -> str:
        """The field a service's field is shown at: a NIC's is one of the networks'
        (``networks[1].ip_address``: the address of the second network ticked), any other its own."""
        return self.network_choice.field_for(service_field) or service_field

    def renew_idempotency_key(self) -> None:
        """A new key for a form shown again (after an error): each rendering of the form is one request,
        which a second send of that rendering (a retry, a double click) repeats; the next one is another."""
        if self.is_bound:
            data = dict(self.data.items())
            data["idempotency_key"] = uuid.uuid4().hex
            self.data = data

    def value(self, name: str) -> str:
        """A field's current value as sent (or its initial one), valid or not: for the quota figures."""
        raw = self[name].value()
        return "" if raw is None else str(raw)

    def chosen_disk_gb(self) -> int | None:
        try:
            return int(self.value("disk_gb"))
        except ValueError:
            return None

    def spec(self) -> CreateVm:
        data = self.cleaned_data
        return CreateVm(
            name=data["name"],
            compute_profile=data["compute_profile"],
            storage_profile=data["storage_profile"],
            image=data["image"],
            disk_gb=data["disk_gb"],
            zone=data["zone"] or None,
            ssh_keys=tuple(line.strip() for line in data["ssh_keys"].splitlines() if line.strip()),
            user_data=data["user_data"] or None,
            idempotency_key=data["idempotency_key"] or None,
            networks=self.network_choice.requests(),
        )


class VmIdsField(forms.Field):
    """The ids (``<zone>/<vmid>``) of the VMs ticked on the list, each once, at most a page of them."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {"required": "Tick at least one virtual machine."}

    def to_python(self, value: Any) -> list[str]:
        if not value:
            return []
        idents = list(dict.fromkeys(str(v).strip() for v in value if str(v).strip()))
        if len(idents) > BULK_MAX:
            raise forms.ValidationError(f"At most {BULK_MAX} virtual machines at once, not {len(idents)}.")
        for ident in idents:
            if parse_vm_id(ident) is None:
                raise forms.ValidationError(f"{ident[:80]!r} is not a VM id (<zone>/<vmid>).")
        return idents


class BulkForm(forms.Form):
    """What the list does to the VMs ticked on it (or to one, from its row): the action and the VMs."""

    action = forms.ChoiceField(label="Action", choices=[(a, ACTIONS[a].label) for a in BULK_ACTIONS])
    vms = VmIdsField(label="Virtual machines")

    def chosen(self) -> VmAction:
        return ACTIONS[self.cleaned_data["action"]]


class ShutdownForm(forms.Form):
    timeout = forms.IntegerField(
        label="Give up after (seconds)",
        required=False,
        min_value=1,
        max_value=vms.MAX_SHUTDOWN_TIMEOUT,
        help_text=f"Default {vms.DEFAULT_SHUTDOWN_TIMEOUT} s; the VM keeps running if its OS does not stop.",
    )

    def __init__(self, data: Any = None) -> None:
        super().__init__(data)
        styled(self, keep=())


class ResizeForm(forms.Form):
    """``resizeVirtualMachine``'s input: another compute profile, a bigger disk, or both."""

    compute_profile = forms.ChoiceField(label="Compute profile", required=False)
    disk_gb = forms.IntegerField(
        label="Disk size (GiB)",
        required=False,
        min_value=1,
        max_value=2**31 - 1,
    )
    # Sent by the confirmation step of a resize down (fewer vCPUs or less memory).
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, offer: Offer, vm: VirtualMachine, data: Any = None) -> None:
        super().__init__(data, initial={"disk_gb": round(vm.disk_gb)})
        self.offer = offer
        self.vm = vm
        now = f"{vm.cores} vCPU, {size(vm.memory_mb, 'MiB')}"
        keep = f"Keep the current one ({vm.compute_profile}: {now})" if vm.compute_profile else f"Keep {now}"
        choices(self.fields["compute_profile"], [("", keep), *_profile_choices(offer)])
        self.fields["disk_gb"].help_text = f"Now {vm.disk_gb:g} GiB. Disks only grow, never shrink."
        if vm.status != "stopped":  # the service refuses a new profile while the VM runs: say so first
            profile = self.fields["compute_profile"]
            profile.disabled = True
            profile.help_text = f"VM {vm.name} is {vm.status}: stop it to move it to another compute profile."
        styled(self, keep=())

    def changes(self) -> tuple[str | None, int | None]:
        """``(compute_profile, disk_gb)`` to send: only what differs from the VM as it is."""
        data = self.cleaned_data
        profile = data["compute_profile"] or None
        disk = data["disk_gb"]
        if disk is not None and disk == round(self.vm.disk_gb):
            disk = None
        return profile, disk

    def shrinks(self) -> bool:
        """Whether the new compute profile has fewer vCPUs or less memory than the VM has now."""
        profile, _disk = self.changes()
        chosen = self.offer.compute_profiles.get(profile or "")
        return chosen is not None and (chosen.vcpus < self.vm.cores or chosen.memory_mib < self.vm.memory_mb)
