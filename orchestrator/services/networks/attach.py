"""A VM's NICs: reading them, attaching a network to a VM that exists, detaching one.

Attaching adds ``netN`` on the network's VNet (Proxmox hot-plugs it into a running VM) and
``ipconfigN`` with the next free address, under the VDC's lock like a create; the guest's operating
system configures the address when cloud-init runs again, at its next boot, and the answer says so.
Detaching removes both keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.errors import ValidationFailed
from orchestrator.models import Vdc
from orchestrator.models.networks import Network, Nic, address_tag
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import locks
from orchestrator.services.context import Context
from orchestrator.services.networks import nics
from orchestrator.services.networks.nics import NicRequest
from orchestrator.services.vdcs.definitions import get_vdc
from orchestrator.services.vms.listing import locate, reread
from orchestrator.sources.proxmox import ConfigChange, ZoneApi

NEXT_BOOT = "the guest configures it when cloud-init runs again, at its next boot (reboot it to apply now)"


@dataclass(frozen=True)
class NicChange:
    """What an attach or detach did: the VM after it, the NIC concerned, and what the guest must do."""

    vm: VirtualMachine
    nic: Nic
    note: str


def _zone_networks(api: ZoneApi, vdc: str) -> list[Network]:
    return [n for v in api.sdn.vnets() if (n := Network.from_vnet(api.zone, v)) and n.vdc == vdc]


def vm_nics(ctx: Context, ident: str) -> list[Nic]:
    """The VM's NICs (its config: one read, and one SDN read of its zone for the networks)."""
    api, vm = locate(ctx, ident)
    return nics.nics(api.config(vm.host, vm.vmid), _zone_networks(api, vm.vdc))


def _vdc(ctx: Context, vm: VirtualMachine) -> Vdc:
    return get_vdc(ctx, vm.vdc)


def attach_network(ctx: Context, ident: str, network: str, ip_address: str | None = None) -> NicChange:
    """Give the VM a NIC on one of its VDC's networks in its zone, with ``ip_address`` or the next free."""
    api, vm = locate(ctx, ident)
    vdc = _vdc(ctx, vm)
    with locks.vdc_lock(ctx, vdc.id):
        mine = _zone_networks(api, vdc.id)
        chosen = nics.resolve(NicRequest(network, ip_address), mine, api.zone, "network")
        config = api.config(vm.host, vm.vmid)
        if any(device.bridge == chosen.vnet for _i, device in config.nets):
            raise ValidationFailed("network", f"VM {vm.name} is on network {chosen.id} already")
        index = config.free_net_index
        if index is None:
            raise ValidationFailed("network", f"VM {vm.name} has no free NIC slot left")
        # Errors name this mutation's own argument (``ip_address``), not a create's ``networks[0]...``.
        resources = api.resources("vm")
        [address] = nics.allocate([(chosen, ip_address)], resources, "network", address_field="ip_address")
        device, ip = nics.nic_on(chosen, address)
        on = [n for n in mine if any(n.vnet == d.bridge for _i, d in config.nets)] + [chosen]
        change = ConfigChange(
            nets=((index, device),),
            ipconfigs=((index, ip),),
            nameservers=nics.nameservers(on) or None,
            tags=(*config.tags, address_tag(chosen.vnet, address)),
        )
        api.set_config(vm.host, vm.vmid, change)
    [nic] = [n for n in nics.nics(api.config(vm.host, vm.vmid), [chosen]) if n.index == index]
    return NicChange(reread(api, vm), nic, f"NIC {nic.key} on {chosen.id} has address {address}: {NEXT_BOOT}")


def detach_network(ctx: Context, ident: str, network: str) -> NicChange:
    """Remove the VM's NIC on ``network``."""
    api, vm = locate(ctx, ident)
    vdc = _vdc(ctx, vm)
    with locks.vdc_lock(ctx, vdc.id):
        mine = _zone_networks(api, vdc.id)
        chosen = nics.resolve(NicRequest(network), mine, api.zone, "network")
        config = api.config(vm.host, vm.vmid)
        cards = nics.nics(config, mine)
        found = [n for n in cards if n.network is not None and n.network.vnet == chosen.vnet]
        if not found:
            raise ValidationFailed("network", f"VM {vm.name} has no NIC on network {chosen.id}")
        nic = found[0]
        rest = [n.network for n in cards if n.index != nic.index and n.network is not None]
        gone = address_tag(chosen.vnet, nic.address) if nic.address else None
        change = ConfigChange(
            delete=(nic.key, f"ipconfig{nic.index}"),
            nameservers=nics.nameservers(rest) or None,
            tags=tuple(t for t in config.tags if t != gone),
        )
        api.set_config(vm.host, vm.vmid, change)
    note = f"NIC {nic.key} on {chosen.id} is removed; the guest forgets its address at its next boot"
    return NicChange(reread(api, vm), nic, note)
