"""Attaching a network to a VM that exists, in this process against the world: errors name attachNetwork's
own arguments (``network``, ``ip_address``), never a create's input (``networks[0].ip_address``)."""

from __future__ import annotations

import pytest

from orchestrator.errors import ValidationFailed
from orchestrator.services import networks, vdcs
from orchestrator.services.networks.attach import attach_network, vm_nics
from tests.orchestrator.services.conftest import MakeContext

WEB_1 = "zone-a/100"  # devstack/seed.py: a VM of VDC demo, its one NIC on vmbr0


@pytest.mark.parametrize(
    ("address", "words"),
    [("gateway", "is reserved in"), ("192.0.2.7", "is not in the network's"), ("x", "is not an IPv4")],
)
def test_a_bad_address_to_attach_is_invalid_naming_attach_networks_own_argument(
    make_context: MakeContext, networked: None, address: str, words: str
) -> None:
    ctx = make_context("USER", "vdc:demo", subject="attach-tester")
    [default] = [n for n in networks.vdc_networks(ctx, vdcs.get_vdc(ctx, "demo"), "zone-a") if n.is_default]
    assert all(nic.bridge != default.vnet for nic in vm_nics(ctx, WEB_1))  # not on it yet: the address is
    asked = default.gateway if address == "gateway" else address  # what is checked, and refused

    with pytest.raises(ValidationFailed) as refused:
        attach_network(make_context("USER", "vdc:demo", subject="attach-tester"), WEB_1, "default", asked)

    assert refused.value.field == "ip_address"  # the API says ipAddress: attachNetwork(ipAddress: ...)
    assert words in refused.value.message
    assert all(nic.bridge != default.vnet for nic in vm_nics(ctx, WEB_1))  # nothing was attached
