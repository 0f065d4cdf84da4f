"""What the gateway pages offer and show of VMs: the VM addresses a public IP or a port may go to, and a
VM's own public IPs and forwards. VMs' addresses are read from their address tags (``fp-ip-<vnet>-<ip>``,
``orchestrator.models.networks``) in one listing of the VDC's VMs, never from each VM's config."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.errors import FlexPlaneError
from orchestrator.models.gateways import PortForward
from orchestrator.models.networks import addresses_in
from orchestrator.models.vms import VirtualMachine, vdc_in
from orchestrator.services import inventory
from orchestrator.services.context import Context
from orchestrator.services.gateways import store
from orchestrator.services.gateways.reads import PublicAddress


@dataclass(frozen=True)
class Target:
    """A VM's address on one of its VDC's networks."""

    vm: str
    zone: str
    address: str

    @property
    def label(self) -> str:
        return f"{self.vm} ({self.address}, {self.zone})"


def _guests(ctx: Context, vdc: str) -> list[tuple[str, int, str, list[str]]]:
    """(zone, vmid, name, addresses) of the VDC's VMs: one ``/cluster/resources`` per zone (tags
    included, which a pool's read lacks), this request's."""
    found: list[tuple[str, int, str, list[str]]] = []
    for zone, guests in inventory.zone_resources(ctx).guests.items():
        for guest in guests:
            if vdc_in(guest.tags) == vdc:
                addresses = [str(address) for _vnet, address in addresses_in(guest.tag_list)]
                found.append((zone, guest.vmid, guest.name or f"vm-{guest.vmid}", addresses))
    return found


def vm_targets(ctx: Context) -> list[Target]:
    """The addresses of the VMs of the request's VDC, by VM name."""
    assert ctx.vdc is not None
    found = [
        Target(name, zone, a) for zone, _vmid, name, addresses in _guests(ctx, ctx.vdc) for a in addresses
    ]
    return sorted(found, key=lambda t: (t.vm, t.zone, t.address))


@dataclass(frozen=True)
class VmExposure:
    """A VM's public IPs (1:1 NAT to one of its addresses) and port forwards to it; ``problem``: they
    could not be read (said in place)."""

    public_ips: list[PublicAddress]
    forwards: list[PortForward]
    problem: str | None = None


def of_vm(ctx: Context, vm: VirtualMachine) -> VmExposure:
    """What reaches the VM from outside through its VDC's gateway in its zone: one read of the gateways,
    and only when there is one, one ``/cluster/resources`` of the VM's zone for its addresses."""
    try:
        gateways = [g for g in store.all_gateways(ctx) if g.vdc == vm.vdc and g.zone == vm.zone]
        if not gateways:
            return VmExposure([], [])
        guests = inventory.zone_api(ctx, vm.zone).resources("vm").vms
    except FlexPlaneError as exc:
        return VmExposure([], [], exc.message)
    mine = {
        str(address)
        for guest in guests
        if guest.vmid == vm.vmid
        for _vnet, address in addresses_in(guest.tag_list)
    }
    ips = [PublicAddress(g, ip) for g in gateways for ip in g.public_ips if ip.nat_to in mine]
    forwards = [f for g in gateways for f in g.forwards if f.to_address in mine]
    return VmExposure(ips, forwards)
