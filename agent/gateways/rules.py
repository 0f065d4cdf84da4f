"""A gateway's nftables ruleset, rendered from its spec: one ``nft -f`` transaction, whole.

The transaction declares the table and its maps (so that they exist), flushes them, and declares
everything again:
the kernel swaps the old rules for the new ones at once, so there is never a moment without rules,
and the named counters (which a flush keeps) go on counting across applies. Rendering the same spec
twice gives the same text, so applying twice changes nothing.

Inside the gateway's namespace the uplink's interface is always ``uplink``; every other interface
but ``lo`` is a leg. The chains:

- ``prerouting`` (nat): port forwards through a map (public address . port to VM address . port),
  marking their connections as opened; then the 1:1 NATs;
- ``postrouting`` (nat): a 1:1-NATed VM's egress to its public address, everything else leaving
  the uplink to the external address;
- ``forward``: invalid dropped; from the uplink to ``inbound``, to the uplink to ``outbound``;
  between legs accepted;
- ``inbound``: replies of accepted connections; the ``in`` rules in order (destination and ports
  matched before or after translation); port forwards' connections; then dropped (default deny);
- ``outbound``: replies; the ``out`` rules in order; then accepted (default allow);
- ``input`` (to the gateway itself): loopback; from the uplink, nothing addressed to a leg's own
  address (the VDC networks' gateway addresses), whatever the upstream routes to the gateway, so that
  from outside no probe learns the tenant's subnets; then replies and ICMP; the rest dropped.
"""

from __future__ import annotations

from agentclient.gateways import FirewallRule, GatewaySpec

TABLE = "flexplane"
UPLINK = "uplink"
COUNTERS = ("egress", "ingress", "dropped")
# The connection mark of port forwards' connections: explicitly opened.
FORWARDED = "0x00000001"
MAP_TYPE = "type ipv4_addr . inet_service : ipv4_addr . inet_service"


def ruleset(spec: GatewaySpec) -> str:
    """The whole ``nft -f`` transaction for spec."""
    external = spec.uplink.interface.ip
    # Declared first so that they exist to be flushed: a table's flush keeps its maps' elements.
    lines = [f"table inet {TABLE} {{", *(f"  map forward_{p} {{ {MAP_TYPE}; }}" for p in ("tcp", "udp")), "}"]
    lines += [f"flush table inet {TABLE}", *(f"flush map inet {TABLE} forward_{p}" for p in ("tcp", "udp"))]
    lines.append(f"table inet {TABLE} {{")
    lines += [f"  counter {name} {{}}" for name in COUNTERS]
    for protocol in ("tcp", "udp"):
        elements = [
            f"{f.public_ip} . {f.port} : {f.to_address} . {f.to_port}"
            for f in spec.forwards
            if f.protocol == protocol
        ]
        lines.append(f"  map forward_{protocol} {{")
        lines.append(f"    {MAP_TYPE}")
        if elements:
            lines.append("    elements = {")
            lines += [f"      {element}," for element in elements]
            lines.append("    }")
        lines.append("  }")
    lines += _chain(
        "prerouting",
        "type nat hook prerouting priority dstnat; policy accept;",
        [
            f'iifname "{UPLINK}" ip daddr . {p} dport @forward_{p} ct mark set {FORWARDED} '
            f"dnat ip to ip daddr . {p} dport map @forward_{p}"
            for p in ("tcp", "udp")
        ]
        + [
            f'iifname "{UPLINK}" ip daddr {ip.address} dnat ip to {ip.nat_to}'
            for ip in spec.public_ips
            if ip.nat_to is not None
        ],
    )
    lines += _chain(
        "postrouting",
        "type nat hook postrouting priority srcnat; policy accept;",
        [
            f'oifname "{UPLINK}" ip saddr {ip.nat_to} snat ip to {ip.address}'
            for ip in spec.public_ips
            if ip.nat_to is not None
        ]
        + [f'oifname "{UPLINK}" snat ip to {external}'],
    )
    lines += _chain(
        "forward",
        "type filter hook forward priority filter; policy drop;",
        [
            'ct state invalid counter name "dropped" drop',
            f'iifname "{UPLINK}" jump inbound',
            f'oifname "{UPLINK}" jump outbound',
            "accept",
        ],
    )
    inbound = ['ct state established,related counter name "ingress" accept']
    outbound = ['ct state established,related counter name "egress" accept']
    for rule in spec.rules:
        if rule.direction == "in":
            inbound += _inbound(rule)
        else:
            outbound.append(_match(rule, original=False) + _verdict(rule, "egress"))
    inbound += [f'ct mark {FORWARDED} counter name "ingress" accept', 'counter name "dropped" drop']
    outbound.append('counter name "egress" accept')
    lines += _chain("inbound", None, inbound)
    lines += _chain("outbound", None, outbound)
    lines += _chain(
        "input",
        "type filter hook input priority filter; policy drop;",
        [
            'iif "lo" accept',
            *_private_legs(spec),
            "ct state established,related accept",
            "meta l4proto icmp accept",
            'counter name "dropped" drop',
        ],
    )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _private_legs(spec: GatewaySpec) -> list[str]:
    """The legs' own addresses, dropped when they arrive on the uplink (before the replies' accept: no
    connection of the gateway's own goes out from them); none without legs (an empty set is no set)."""
    addresses = sorted({leg.interface.ip for leg in spec.legs})
    if not addresses:
        return []
    listed = ", ".join(str(address) for address in addresses)
    return [f'iifname "{UPLINK}" ip daddr {{ {listed} }} counter name "dropped" drop']


def _chain(name: str, hook: str | None, rules: list[str]) -> list[str]:
    return [f"  chain {name} {{", *([f"    {hook}"] if hook else []), *(f"    {r}" for r in rules), "  }"]


def _inbound(rule: FirewallRule) -> list[str]:
    """An ``in`` rule twice: destination and ports as the VM sees them, and as they were sent."""
    translated = _match(rule, original=False)
    sent = _match(rule, original=True)
    rules = [translated + _verdict(rule, "ingress")]
    if sent != translated:
        rules.append(sent + _verdict(rule, "ingress"))
    return rules


def _match(rule: FirewallRule, *, original: bool) -> str:
    parts: list[str] = []
    if rule.source != "0.0.0.0/0":
        parts.append(f"ip saddr {rule.source}")
    if rule.destination != "0.0.0.0/0":
        parts.append(f"{'ct original ' if original else ''}ip daddr {rule.destination}")
    if rule.protocol != "any":
        parts.append(f"meta l4proto {rule.protocol}")
    if rule.ports is not None:
        first, last = rule.ports
        ports = str(first) if first == last else f"{first}-{last}"
        parts.append(f"ct original proto-dst {ports}" if original else f"th dport {ports}")
    return " ".join(parts) + (" " if parts else "")


def _verdict(rule: FirewallRule, counter: str) -> str:
    if rule.action == "allow":
        return f'counter name "{counter}" accept'
    return 'counter name "dropped" drop'
