"""``flexplane networks``, ``security-groups``, ``gateways``, ``public-ips`` and ``port-forwards``: the VDC's
networks and what reaches its VMs from outside."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from apiclient.cli.output import Column, Output, OutputOption, answered, group
from apiclient.cli.session import session_of
from apiclient.errors import NotFound
from apiclient.generated.input_types import CreateNetworkInput, PortForwardInput

NETWORK_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("ZONE", "zone"),
    ("CIDR", "cidr"),
    ("GATEWAY", "gateway"),
    ("DEFAULT", "isDefault"),
]
GROUP_COLUMNS: list[Column] = [("NAME", "name"), ("DESCRIPTION", "description"), ("RULES", "rules")]
GATEWAY_COLUMNS: list[Column] = [
    ("ZONE", "zone"),
    ("HOST", "node"),
    ("UPLINK", "uplinkAddress"),
    ("APPLIED", "applied"),
    ("NETWORKS", "networks"),
]
PUBLIC_IP_COLUMNS: list[Column] = [("ADDRESS", "address"), ("ZONE", "zone"), ("NAT TO", "natTo")]
FORWARD_COLUMNS: list[Column] = [
    ("PUBLIC IP", "publicIp"),
    ("PROTOCOL", "protocol"),
    ("PORT", "port"),
    ("TO ADDRESS", "toAddress"),
    ("TO PORT", "toPort"),
]

networks = group("The VDC's networks (Proxmox SDN VNets, one subnet each).")
security_groups = group("The VDC's security groups.")
gateways = group("The VDC's edge gateways, one per zone.")
public_ips = group("The VDC's public IPs.")
port_forwards = group("Ports of public IPs forwarded to VMs.")

Protocol = Annotated[str, typer.Argument(help="tcp or udp")]
NetworkArgument = Annotated[str, typer.Argument(help="its id, <zone>/<name>")]
PublicIpArgument = Annotated[str, typer.Argument(help="the public IP")]
PoolZone = Annotated[str | None, typer.Option(help="the zone (may be left out with one)")]


@networks.command("list", epilog="Example: `flexplane networks list -o json | jq -r '.[].cidr'`.")
def list_networks(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The VDC's networks."""
    session = session_of(ctx)
    session.show(session.api().networks().networks, output, NETWORK_COLUMNS)


@networks.command(
    "create", epilog="Example: `flexplane networks create backend --cidr 10.1.0.0/24 --zone zone-a`."
)
def create_network(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="a DNS label, unique in the VDC and zone")],
    cidr: Annotated[str, typer.Option(help="an IPv4 subnet, /16 to /29")],
    zone: Annotated[str | None, typer.Option(help="a zone of the VDC (may be left out with one)")] = None,
    gateway: Annotated[str | None, typer.Option(help="default: the subnet's first address")] = None,
    dns: Annotated[list[str] | None, typer.Option(help="a resolver (repeatable, up to 3)")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """Create a network: a VNet and its subnet, applied before the answer."""
    session = session_of(ctx)
    spec = {"name": name, "cidr": cidr, "zone": zone, "gateway": gateway, "dns": dns or None}
    made = answered(session.api().create_network(CreateNetworkInput.model_validate(spec)).create_network)
    session.show(made.network, output, NETWORK_COLUMNS)


@networks.command("delete", epilog="Example: `flexplane networks delete zone-a/backend`.")
def delete_network(ctx: typer.Context, network: NetworkArgument, output: OutputOption = Output.TABLE) -> None:
    """Delete a network (refused while VMs use it)."""
    session = session_of(ctx)
    gone = answered(session.api().delete_network(network).delete_network)
    session.show(gone.network, output, NETWORK_COLUMNS)


@security_groups.command("list", epilog="Example: `flexplane security-groups list -o yaml`.")
def list_security_groups(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The VDC's security groups with their rules."""
    session = session_of(ctx)
    groups = session.api().security_groups().security_groups
    if output is Output.TABLE:
        rows = [{**group.model_dump(by_alias=True), "rules": len(group.rules)} for group in groups]
        session.show(rows, output, GROUP_COLUMNS)
    else:
        session.show(groups, output, GROUP_COLUMNS)


@gateways.command("list", epilog="Example: `flexplane gateways list`.")
def list_gateways(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The VDC's edge gateways."""
    session = session_of(ctx)
    session.show(session.api().edge_gateways().edge_gateways, output, GATEWAY_COLUMNS)


@gateways.command("show", epilog="Example: `flexplane gateways show zone-a -o json | jq .firewallRules`.")
def show_gateway(
    ctx: typer.Context,
    zone: Annotated[str | None, typer.Argument(help="its zone (may be left out with one gateway)")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """One edge gateway: its host, uplink, public IPs, forwards and firewall rules."""
    session = session_of(ctx)
    found = [g for g in session.api().edge_gateways().edge_gateways if zone is None or g.zone == zone]
    if not found:
        raise NotFound(f"the VDC has no edge gateway{f' in zone {zone}' if zone else ''}")
    if len(found) > 1:
        raise typer.BadParameter(f"the VDC has gateways in {', '.join(g.zone for g in found)}: name the zone")
    session.show(found[0], output, GATEWAY_COLUMNS)


@public_ips.command("list", epilog="Example: `flexplane public-ips list -o json | jq -r '.[].address'`.")
def list_public_ips(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The VDC's public IPs, with their 1:1 NAT."""
    session = session_of(ctx)
    session.show(session.api().public_ips().public_ips, output, PUBLIC_IP_COLUMNS)


@public_ips.command(
    "allocate", epilog="Example: `flexplane public-ips allocate --zone zone-a -o json | jq -r .address`."
)
def allocate_public_ip(
    ctx: typer.Context, zone: PoolZone = None, output: OutputOption = Output.TABLE
) -> None:
    """Allocate a public IP of the zone's pool (its gateway is made if it has none)."""
    session = session_of(ctx)
    made = answered(session.api().allocate_public_ip(zone).allocate_public_ip)
    session.show(made.public_ip, output, PUBLIC_IP_COLUMNS)


@public_ips.command("release", epilog="Example: `flexplane public-ips release 203.0.113.10`.")
def release_public_ip(
    ctx: typer.Context, address: PublicIpArgument, output: OutputOption = Output.TABLE
) -> None:
    """Release a public IP with its NAT and forwards."""
    session = session_of(ctx)
    gone = answered(session.api().release_public_ip(address).release_public_ip)
    session.show(gone.public_ip, output, PUBLIC_IP_COLUMNS)


@port_forwards.command("list", epilog="Example: `flexplane port-forwards list`.")
def list_port_forwards(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """Every port forwarded on the VDC's public IPs."""
    session = session_of(ctx)
    forwards: list[Any] = [f for ip in session.api().public_ips().public_ips for f in ip.port_forwards]
    session.show(forwards, output, FORWARD_COLUMNS)


@port_forwards.command(
    "create", epilog="Example: `flexplane port-forwards create 203.0.113.10 tcp 443 10.0.0.5 --to-port 8443`."
)
def create_port_forward(
    ctx: typer.Context,
    public_ip: Annotated[str, typer.Argument(help="a public IP of the VDC")],
    protocol: Protocol,
    port: Annotated[int, typer.Argument(help="the public port, 1 to 65535")],
    to_address: Annotated[str, typer.Argument(help="a VM's address on a network of the VDC")],
    to_port: Annotated[int | None, typer.Option(help="the VM's port (default: the same)")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """Forward a public IP's port to a VM's."""
    session = session_of(ctx)
    spec = {
        "publicIp": public_ip,
        "protocol": protocol,
        "port": port,
        "toAddress": to_address,
        "toPort": to_port,
    }
    made = answered(session.api().add_port_forward(PortForwardInput.model_validate(spec)).add_port_forward)
    session.show(made.public_ip, output, PUBLIC_IP_COLUMNS)


@port_forwards.command("delete", epilog="Example: `flexplane port-forwards delete 203.0.113.10 tcp 443`.")
def delete_port_forward(
    ctx: typer.Context,
    public_ip: PublicIpArgument,
    protocol: Protocol,
    port: Annotated[int, typer.Argument(help="the public port")],
    output: OutputOption = Output.TABLE,
) -> None:
    """Stop forwarding a public IP's port."""
    session = session_of(ctx)
    gone = answered(session.api().remove_port_forward(public_ip, protocol, port).remove_port_forward)
    session.show(gone.public_ip, output, PUBLIC_IP_COLUMNS)
