"""The network pages' forms, and the create-VM form's choice of networks: plain Django forms (there is
no database) over the services' inputs, which check everything again; a service's ``ValidationFailed``
lands next to the field it names (``portal.forms.show_error``), as the API's ``errors { field }`` does."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django import forms
from django.forms.boundfield import BoundWidget

from orchestrator.models.networks import DEFAULT_NETWORK, Network
from orchestrator.services.networks import CreateNetwork
from orchestrator.services.networks.nics import NicRequest
from portal.forms import choices, styled

# A service's field of a VM's NICs: ``networks``, ``networks[2].network``, ``networks[0].ip_address``.
_NIC_FIELD = re.compile(r"networks(?:\[(\d+)\]\.(\w+))?")


def dns_servers(text: str) -> tuple[str, ...] | None:
    """Resolvers as typed (commas or spaces between them); None: the zone's."""
    servers = tuple(s for s in re.split(r"[,\s]+", text) if s)
    return servers or None


class NetworkForm(forms.Form):
    """``createNetwork``'s input."""

    name = forms.CharField(
        label="Name",
        max_length=32,
        help_text="A DNS label, unique in the VDC and zone: lowercase letters, digits and hyphens.",
    )
    zone = forms.ChoiceField(label="Zone")
    cidr = forms.CharField(
        label="Addresses (CIDR)",
        max_length=43,
        help_text="An IPv4 subnet of RFC 1918, /16 to /29, such as 10.20.0.0/24.",
    )
    gateway = forms.CharField(
        label="Gateway (optional)",
        required=False,
        max_length=45,
        help_text="Empty: the first usable address.",
    )
    dns = forms.CharField(
        label="DNS servers (optional)",
        required=False,
        max_length=200,
        help_text="Up to 3 IPv4 addresses, separated by commas. Empty: the zone's.",
    )

    def __init__(self, zones: Sequence[str], data: Any = None) -> None:
        super().__init__(data, initial={"zone": zones[0] if zones else None})
        choices(self.fields["zone"], [(z, z) for z in zones])
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false")
        self.fields["cidr"].widget.attrs.update(placeholder="10.20.0.0/24", spellcheck="false")
        styled(self)

    def spec(self) -> CreateNetwork:
        data = self.cleaned_data
        return CreateNetwork(
            name=data["name"].strip(),
            cidr=data["cidr"].strip(),
            zone=data["zone"] or None,
            gateway=data["gateway"].strip() or None,
            dns=dns_servers(data["dns"]),
        )


class AttachForm(forms.Form):
    """``attachNetwork``'s input for one VM: a network of its VDC in its zone, and maybe an address."""

    network = forms.ChoiceField(label="Network")
    ip_address = forms.CharField(
        label="Address (optional)", required=False, max_length=45, help_text="Empty: the next free one."
    )

    def __init__(self, networks: Sequence[Network], data: Any = None) -> None:
        super().__init__(data)
        choices(self.fields["network"], [(n.name, f"{n.name} ({n.cidr})") for n in networks])
        self.fields["ip_address"].widget.attrs.update(spellcheck="false", placeholder="next free")
        styled(self)


# ------------------------------------------------------------------------------- the create-VM form


def address_field(choice: str) -> str:
    """The create form's field for the address of the NIC on ``choice`` (``default`` or ``<zone>/<name>``)."""
    return "address__" + choice.replace("/", "__")


class NetworkChoice:
    """The networks a new VM gets, as fields of the create form: a checkbox per network of the VDC, and an
    optional address for each. ``default`` stands for the VDC's default network in the zone the VM goes to
    (the API's "a name in the VM's zone"), and is chosen unless the user chooses otherwise; the VDC's other
    networks are named ``<zone>/<name>`` (as the API lets a request name them), which also chooses the VM's
    zone."""

    def __init__(self, form: forms.Form, networks: Sequence[Network]) -> None:
        self.form = form
        defaults = sorted({n.cidr for n in networks if n.is_default})
        default_label = "default: the VDC's default network where the VM goes"
        if defaults:
            default_label += f" ({', '.join(defaults)})"
        self.labels = {DEFAULT_NETWORK: default_label} | {
            f"{n.zone}/{n.name}": f"{n.name} ({n.cidr})" for n in networks if not n.is_default
        }
        form.fields["networks"] = forms.MultipleChoiceField(
            label="Networks",
            required=False,
            choices=list(self.labels.items()),
            initial=[DEFAULT_NETWORK],
            widget=forms.CheckboxSelectMultiple(attrs={"class": "mt-1 h-4 w-4"}),
            help_text="A NIC on each network ticked, in this order. None ticked: the default network.",
        )
        for choice in self.labels:
            name = choice.partition("/")[2] or choice
            form.fields[address_field(choice)] = forms.CharField(
                label=f"Address on {name}",
                required=False,
                max_length=45,
                help_text="Empty: the next free one.",
                widget=forms.TextInput(attrs={"spellcheck": "false", "placeholder": "next free"}),
            )
        # The choices of the last ``requests()``, in NIC order: what the service's errors count.
        self.sent: list[str] = [DEFAULT_NETWORK]

    def rows(self) -> list[tuple[BoundWidget, forms.BoundField, str]]:
        """(checkbox, address field, zone) per network, for the template (the zone is said beside the
        checkbox's label, not in it: "Zone" is the form's zone field's label)."""
        boxes = list(self.form["networks"])
        return [
            (box, self.form[address_field(c)], c.partition("/")[0] if "/" in c else "")
            for box, c in zip(boxes, self.labels, strict=True)
        ]

    def clean(self, data: dict[str, Any]) -> None:
        chosen = set(data.get("networks") or [])
        for choice in self.labels:
            field = address_field(choice)
            if (
                (data.get(field) or "").strip()
                and choice not in chosen
                and (chosen or choice != DEFAULT_NETWORK)
            ):
                self.form.add_error(field, "Tick this network to give its NIC an address.")

    def requests(self) -> tuple[NicRequest, ...] | None:
        """The NICs to ask for; None (the service's default: the default network) when only ``default``,
        without an address, is chosen, or nothing is."""
        data = self.form.cleaned_data
        chosen = [c for c in self.labels if c in (data.get("networks") or [])] or [DEFAULT_NETWORK]
        asked = [NicRequest(c, (data.get(address_field(c)) or "").strip() or None) for c in chosen]
        self.sent = chosen
        if chosen == [DEFAULT_NETWORK] and asked[0].address is None:
            return None
        return tuple(asked)

    def field_for(self, service_field: str) -> str | None:
        """The form's field for a service's NIC field (None: not one of the NICs')."""
        found = _NIC_FIELD.fullmatch(service_field)
        if found is None:
            return None
        index, part = found.groups()
        if index is not None and part == "ip_address" and int(index) < len(self.sent):
            return address_field(self.sent[int(index)])
        return "networks"
