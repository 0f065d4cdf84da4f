"""A VDC's public IPs: handed out from the zone's public pool (its gateway there made if it has none), given
back, 1:1 NATed to a VM's address, and their port forwards. Each is a change of the gateway that holds it
(``changes.change_gateway``); a public IP of another VDC, where one is named as input, is INVALID naming the
field, as a made-up one is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from orchestrator.errors import Conflict, ValidationFailed
from orchestrator.models import Usage
from orchestrator.models.gateways import Gateway, PortForward, PublicIp, next_free
from orchestrator.services import catalog
from orchestrator.services.context import Context
from orchestrator.services.gateways import inputs, store
from orchestrator.services.gateways.changes import change_gateway
from orchestrator.services.gateways.inputs import ForwardRequest
from orchestrator.services.gateways.reads import PublicAddress, checked_zone, held
from orchestrator.services.vdcs.definitions import acting_vdc
from orchestrator.services.vdcs.quota import check_quota


def allocate_public_ip(ctx: Context, zone: str | None = None) -> PublicAddress:
    """Hand the VDC a public IP of the zone's pool (its gateway there made if it has none), within its
    ``publicIps`` quota, which its gateways' uplink addresses count against too."""

    vdc = acting_vdc(ctx)

    def edit(gateway: Gateway, everything: Sequence[Gateway]) -> tuple[Gateway, PublicIp]:
        check_quota(ctx, vdc, Usage(public_ips=1), current=Usage(public_ips=held(everything, vdc.id)))
        taken = [a for g in everything if g.zone == gateway.zone for a in g.addresses]
        taken.append(gateway.uplink_address)
        zone_of = next(z for z in catalog.zones(ctx) if z.id == gateway.zone)
        address = next_free(zone_of.public_pool, taken)
        if address is None:
            raise Conflict(f"zone {gateway.zone} has no public address left: an admin can widen its pool")
        ip = PublicIp(address)
        return replace(gateway, public_ips=(*gateway.public_ips, ip)), ip

    ip = change_gateway(ctx, checked_zone(vdc, zone), edit, create=True, allocate=True)
    return _address_of(ctx.fresh(), ip.address, "address")


def _holder(ctx: Context, address: str, field: str) -> Gateway:
    """The gateway of the request's VDC that holds public IP ``address`` (read now)."""
    vdc = acting_vdc(ctx)
    for gateway in store.everything(ctx):
        if gateway.vdc == vdc.id and gateway.public_ip(str(address)) is not None:
            return gateway
    raise ValidationFailed(field, f"{field}: {str(address)[:40]!r} is not a public IP of this VDC")


def _address_of(ctx: Context, address: str, field: str) -> PublicAddress:
    gateway = _holder(ctx, address, field)
    ip = gateway.public_ip(address)
    assert ip is not None
    return PublicAddress(gateway, ip)


def _on_ip(
    ctx: Context, address: str, field: str, change: Callable[[Gateway, PublicIp], Gateway]
) -> PublicAddress:
    """Change the gateway holding public IP ``address`` with ``change(gateway, ip)``; answers the IP as
    it is after (as it was, when it goes)."""
    zone = _holder(ctx, address, field).zone

    def edit(gateway: Gateway, _everything: Sequence[Gateway]) -> tuple[Gateway, PublicAddress]:
        ip = gateway.public_ip(address)
        if ip is None:  # released meanwhile
            raise ValidationFailed(field, f"{field}: {address!r} is not a public IP of this VDC")
        after = change(gateway, ip)
        return after, PublicAddress(after, after.public_ip(address) or ip)

    return change_gateway(ctx, zone, edit, create=False)


def release_public_ip(ctx: Context, address: str) -> PublicAddress:
    """Give a public IP back to the zone's pool, with its 1:1 NAT and its port forwards."""

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        return replace(
            gateway,
            public_ips=tuple(p for p in gateway.public_ips if p.address != ip.address),
            forwards=tuple(f for f in gateway.forwards if f.public_ip != ip.address),
        )

    before = _address_of(ctx, address, "address")
    _on_ip(ctx, address, "address", change)
    return before


def attach_public_ip(ctx: Context, address: str, to_address: str) -> PublicAddress:
    """1:1 NAT a public IP to a VM's address on one of the VDC's networks in the gateway's zone."""

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        target = inputs.vm_address(to_address, gateway.legs, "toAddress")
        other = next((p for p in gateway.public_ips if p.nat_to == target and p.address != ip.address), None)
        if other is not None:
            raise ValidationFailed(
                "toAddress", f"toAddress {target} has a 1:1 NAT already (public IP {other.address})"
            )
        ips = tuple(replace(p, nat_to=target) if p.address == ip.address else p for p in gateway.public_ips)
        return replace(gateway, public_ips=ips)

    return _on_ip(ctx, address, "address", change)


def detach_public_ip(ctx: Context, address: str) -> PublicAddress:
    """Take a public IP's 1:1 NAT away (the IP stays the VDC's)."""

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        ips = tuple(replace(p, nat_to=None) if p.address == ip.address else p for p in gateway.public_ips)
        return replace(gateway, public_ips=ips)

    return _on_ip(ctx, address, "address", change)


def add_port_forward(ctx: Context, request: ForwardRequest) -> PublicAddress:
    """Forward a port of one of the VDC's public IPs to a VM's address and port."""
    made: list[PortForward] = []

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        forward = inputs.forward(request, gateway)
        made.append(forward)
        return replace(gateway, forwards=(*gateway.forwards, forward))

    inputs.port(request.port, "port")  # before any read: a port out of range is INVALID however it stands
    if request.to_port is not None:
        inputs.port(request.to_port, "toPort")
    return _on_ip(ctx, str(request.public_ip), "publicIp", change)


def remove_port_forward(ctx: Context, public_ip: str, protocol: str, port: int) -> PublicAddress:
    """Stop forwarding ``port``/``protocol`` of a public IP."""
    proto = inputs.choice(protocol, ("tcp", "udp"), "protocol")

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        kept = tuple(f for f in gateway.forwards if f.key != (ip.address, proto, port))
        if len(kept) == len(gateway.forwards):
            raise ValidationFailed("port", f"port {port}/{proto} of {ip.address} is not forwarded")
        return replace(gateway, forwards=kept)

    return _on_ip(ctx, public_ip, "publicIp", change)
