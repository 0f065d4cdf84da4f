"""The gateway pages' forms: plain Django forms over the services' inputs, which check everything again;
a service's ``ValidationFailed`` lands next to the field it names (``portal.forms.show_error``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from orchestrator.models.gateways import ACTIONS, DIRECTIONS, PROTOCOLS, RULE_PROTOCOLS
from orchestrator.services.gateways.targets import Target
from portal.forms import choices, styled

# The services' names of fields (the API's) -> the forms'.
FIELDS = {
    "publicIp": "public_ip",
    "toAddress": "to_address",
    "toPort": "to_port",
    "portFrom": "port_from",
    "portTo": "port_to",
}


class AllocateForm(forms.Form):
    """``allocatePublicIp``'s input: the zone."""

    zone = forms.ChoiceField(label="Zone")

    def __init__(self, zones: Sequence[str], data: Any = None) -> None:
        super().__init__(data, initial={"zone": zones[0] if zones else None})
        choices(self.fields["zone"], [(z, z) for z in zones])
        styled(self)


class NatForm(forms.Form):
    """``attachPublicIp``'s input: the VM address the public IP is 1:1 NAT'd to."""

    to_address = forms.ChoiceField(label="VM")

    def __init__(self, targets: Sequence[Target], data: Any = None) -> None:
        super().__init__(data)
        choices(self.fields["to_address"], [(t.address, t.label) for t in targets])
        styled(self)


class ForwardForm(forms.Form):
    """``addPortForward``'s input."""

    public_ip = forms.ChoiceField(label="Public IP")
    protocol = forms.ChoiceField(label="Protocol", choices=[(p, p.upper()) for p in PROTOCOLS])
    port = forms.IntegerField(label="Public port", help_text="1 to 65535, not forwarded yet on that IP.")
    to_address = forms.ChoiceField(label="To VM")
    to_port = forms.IntegerField(
        label="VM port (optional)", required=False, help_text="Empty: the same port."
    )

    def __init__(self, public_ips: Sequence[str], targets: Sequence[Target], data: Any = None) -> None:
        super().__init__(data)
        choices(self.fields["public_ip"], [(a, a) for a in public_ips])
        choices(self.fields["to_address"], [(t.address, t.label) for t in targets])
        styled(self)


class RuleForm(forms.Form):
    """``addGatewayFirewallRule``'s input."""

    zone = forms.ChoiceField(label="Zone")
    direction = forms.ChoiceField(
        label="Direction", choices=[(d, "inbound" if d == "in" else "outbound") for d in DIRECTIONS]
    )
    action = forms.ChoiceField(label="Action", choices=[(a, a) for a in ACTIONS])
    protocol = forms.ChoiceField(label="Protocol", choices=[(p, p) for p in RULE_PROTOCOLS], initial="tcp")
    source = forms.CharField(
        label="Source (CIDR)", required=False, max_length=18, help_text="Empty: anywhere."
    )
    destination = forms.CharField(
        label="Destination (CIDR)", required=False, max_length=18, help_text="Empty: anywhere."
    )
    port_from = forms.IntegerField(label="First port", required=False, help_text="TCP and UDP only.")
    port_to = forms.IntegerField(label="Last port", required=False, help_text="Empty: the first port.")
    description = forms.CharField(label="Description", required=False, max_length=200)

    def __init__(self, zones: Sequence[str], data: Any = None) -> None:
        super().__init__(data, initial={"zone": zones[0] if zones else None})
        choices(self.fields["zone"], [(z, z) for z in zones])
        styled(self)

    def values(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data.pop("zone")
        return {k: v for k, v in data.items() if v not in (None, "")}
