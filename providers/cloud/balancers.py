"""Services of type LoadBalancer: a public address of the VDC on its edge gateway, forwarded to the
Service's NodePorts, with the Service's source ranges as gateway firewall rules.

Each pass reads the gateways once and compares, per Service, what the gateway holds for it (found by
its rules' description: ``model.owner``) with what the Service asks: an address is allocated for a
Service that holds none, its rules are made first (they mark it as the Service's before anything else
is done), then its forwards follow the ready nodes and its status names the address. An address whose
Service is gone (deleted, or no longer a LoadBalancer) is released, and its rules removed after: a
release that fails leaves the rules marking it for the next pass.

The address comes from the VDC's ``publicIps`` quota: a Service beyond it gets a Warning Event saying
so, and gets its address on a later pass once another is given back. A failure of the API for one
Service is an Event on it too, and does not hold the others up.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from apiclient import ApiError, QuotaExceeded, Unavailable
from apiclient.generated.fragments import EdgeGatewayFields, EdgeGatewayFieldsFirewallRules
from providers.cloud.model import (
    Balancer,
    Body,
    Forward,
    Machine,
    Rule,
    backend,
    balancer_of,
    ingress_patch,
    owned_by,
    owner,
    wanted_forwards,
    wanted_rules,
)
from providers.cloud.tenant import TenantCluster
from providers.cloud.vdc import Vdc

log = logging.getLogger(__name__)

QUOTA_REASON = "PublicIpQuotaExceeded"
FAILED_REASON = "SyncLoadBalancerFailed"
WAITING_REASON = "NoNodeZone"
ENSURED_REASON = "EnsuredLoadBalancer"


@dataclass
class Claim:
    """An address the gateway of ``zone`` holds for a Service: its rules say so."""

    zone: str
    address: str
    rules: list[Rule] = field(default_factory=list)


def rule_of(rule: EdgeGatewayFieldsFirewallRules) -> Rule:
    return Rule(
        rule.action,
        rule.protocol,
        str(ipaddress.IPv4Network(rule.source, strict=False)),
        str(ipaddress.IPv4Network(rule.destination, strict=False)),
        rule.port_from,
        rule.port_to,
    )


def claims_of(gateways: Mapping[str, EdgeGatewayFields], cluster: str) -> dict[tuple[str, str], list[Claim]]:
    """Each Service's addresses, as the gateways' rules of this cluster mark them, in rule order."""
    claims: dict[tuple[str, str], list[Claim]] = {}
    for zone, gateway in sorted(gateways.items()):
        for found in gateway.firewall_rules:
            key = owned_by(found.description, cluster)
            if key is None or found.direction != "in":
                continue
            rule = rule_of(found)
            address = str(ipaddress.IPv4Network(rule.destination).network_address)
            held = claims.setdefault(key, [])
            claim = next((c for c in held if c.address == address and c.zone == zone), None)
            if claim is None:
                claim = Claim(zone, address)
                held.append(claim)
            claim.rules.append(rule)
    return claims


def public_ips(gateway: EdgeGatewayFields | None) -> dict[str, list[Forward]]:
    """The gateway's public IPs with their forwards."""
    if gateway is None:
        return {}
    return {
        ip.address: [Forward(f.protocol, f.port, f.to_address, f.to_port) for f in ip.port_forwards]
        for ip in gateway.public_ips
    }


class Balancers:
    """The load balancers of one cluster's Services on its VDC's gateways."""

    def __init__(self, tenant: TenantCluster, vdc: Vdc, cluster: str) -> None:
        self.tenant = tenant
        self.vdc = vdc
        self.cluster = cluster
        self.gateways: dict[str, EdgeGatewayFields] = {}

    def reconcile(
        self, services: Sequence[Body], nodes: Sequence[Body], machines: Mapping[str, Machine]
    ) -> None:
        """One pass: the addresses of Services gone given back, then each LoadBalancer Service made."""
        self.gateways = self.vdc.gateways()
        claims = claims_of(self.gateways, self.cluster)
        wanted: dict[tuple[str, str], tuple[Body, Balancer]] = {}
        by_key: dict[tuple[str, str], Body] = {}
        for service in services:
            meta = service.get("metadata") or {}
            by_key[str(meta.get("namespace")), str(meta.get("name"))] = service
            balancer = balancer_of(service)
            if balancer is not None:
                wanted[balancer.key] = (service, balancer)
        for key, held in sorted(claims.items()):
            if key not in wanted:
                for claim in held:
                    self.give_back(key, claim)
                if key in by_key and not (by_key[key].get("spec") or {}).get("loadBalancerClass"):
                    self._status(by_key[key], None)  # (another class's Service: its controller's status)
        backends = backends_by_zone(nodes, machines)
        for key, (service, balancer) in sorted(wanted.items()):
            try:
                self.ensure(service, balancer, claims.get(key, []), backends)
            except QuotaExceeded as exc:
                self.tenant.record(
                    service,
                    "Warning",
                    QUOTA_REASON,
                    f"no public address: the VDC's publicIps quota is used up ({exc.message})",
                )
            except ApiError as exc:
                log.warning("Service %s/%s: %s", *key, exc)
                self.tenant.record(service, "Warning", FAILED_REASON, f"flex.plane refused: {exc}")

    def ensure(
        self,
        service: Body,
        balancer: Balancer,
        held: list[Claim],
        backends: Mapping[str, list[str]],
    ) -> None:
        """The Service's address, rules, forwards and status, as the Service and the ready nodes ask."""
        description = owner(self.cluster, balancer.namespace, balancer.name)
        live = [c for c in held if c.address in public_ips(self.gateways.get(c.zone))]
        for stale in [c for c in held if c not in live] + live[1:]:
            self.give_back(balancer.key, stale)  # released elsewhere, or a second address: not kept
        if live:
            zone, address = live[0].zone, live[0].address
            self.set_rules(zone, description, address, wanted_rules(balancer, address))
        else:
            chosen = choose_zone(backends)
            if chosen is None:
                self.tenant.record(
                    service,
                    "Normal",
                    WAITING_REASON,
                    "waiting for a ready node to place the address in its zone",
                )
                return
            zone = chosen
            address = self.allocate(zone)
            try:
                self.set_rules(zone, description, address, wanted_rules(balancer, address))
            except Exception:
                self.vdc.release(address)  # not marked as the Service's: it would be found by nobody
                raise
            log.info("Service %s/%s: address %s in zone %s", balancer.namespace, balancer.name, address, zone)
            self.tenant.record(
                service, "Normal", ENSURED_REASON, f"address {address} on the VDC's edge gateway"
            )
        self.set_forwards(zone, address, balancer, backends.get(zone, []))
        self._status(service, address)

    def set_rules(self, zone: str, description: str, address: str, rules: list[Rule]) -> None:
        """The Service's rules on the gateway are ``rules``, in order: when they differ at all, the old
        ones are removed (last first, so the positions read stay true) and ``rules`` appended."""
        if self._rules(zone, description, address) == rules:
            return
        for position in sorted(self._positions(zone, description, address), reverse=True):
            self._recorded(zone, partial(self.vdc.remove_rule, zone, position))
        for rule in rules:
            self._recorded(zone, partial(self.vdc.add_rule, zone, rule, description))

    def set_forwards(self, zone: str, address: str, balancer: Balancer, backends: list[str]) -> None:
        current = public_ips(self.gateways.get(zone)).get(address, [])
        wanted = wanted_forwards(balancer, backends, current)
        for forward in current:
            if forward not in wanted:
                self._recorded(zone, partial(self.vdc.unforward, address, forward.protocol, forward.port))
        for forward in wanted:
            if forward not in current:
                self._recorded(zone, partial(self.vdc.forward, address, forward))

    def allocate(self, zone: str) -> str:
        """A new address of the zone for a Service. When the API says UNAVAILABLE (the gateway's host did
        not answer) the address may have been taken all the same, its desired state recorded: the
        gateway is read again, and an address that appeared since just before is taken as this one
        (the VDC's lock orders allocations, and its rules are added at once to mark it)."""
        self.gateways = self.vdc.gateways()
        before = set(public_ips(self.gateways.get(zone)))
        try:
            return self.vdc.allocate(zone)
        except Unavailable:
            self.gateways = self.vdc.gateways()
            appeared = sorted(set(public_ips(self.gateways.get(zone))) - before)
            if len(appeared) != 1:
                raise
            log.warning("zone %s: address %s recorded, its gateway's host not reached", zone, appeared[0])
            return appeared[0]

    def give_back(self, key: tuple[str, str], claim: Claim) -> None:
        """Release the address (with its forwards), then remove the rules that marked it."""
        if claim.address in public_ips(self.gateways.get(claim.zone)):
            log.info("Service %s/%s: releasing %s", *key, claim.address)
            self._recorded(claim.zone, partial(self.vdc.release, claim.address))
        description = owner(self.cluster, *key)
        for position in sorted(self._positions(claim.zone, description, claim.address), reverse=True):
            self._recorded(claim.zone, partial(self.vdc.remove_rule, claim.zone, position))

    def _recorded(self, zone: str, change: Callable[[], EdgeGatewayFields | None]) -> None:
        """Make a change of the gateway. UNAVAILABLE means its host did not take it, and usually that it
        is recorded all the same (the gateway reconciler sends it on): the gateways are read again, and
        the pass goes on from what they hold (what was not recorded, the next pass makes)."""
        try:
            self._view(zone, change())
        except Unavailable as exc:
            log.warning("zone %s: %s", zone, exc)
            self.gateways = self.vdc.gateways()

    def _status(self, service: Body, address: str | None) -> None:
        patch = ingress_patch(service, address)
        if patch is not None:
            meta = service.get("metadata") or {}
            self.tenant.patch_service_status(str(meta.get("namespace")), str(meta.get("name")), patch)

    def _mine(self, zone: str, description: str, address: str) -> list[EdgeGatewayFieldsFirewallRules]:
        gateway = self.gateways.get(zone)
        destination = str(ipaddress.IPv4Network(f"{address}/32"))
        return [
            r
            for r in (gateway.firewall_rules if gateway else [])
            if r.description == description and rule_of(r).destination == destination and r.direction == "in"
        ]

    def _rules(self, zone: str, description: str, address: str) -> list[Rule]:
        return [rule_of(r) for r in self._mine(zone, description, address)]

    def _positions(self, zone: str, description: str, address: str) -> list[int]:
        return [r.position for r in self._mine(zone, description, address)]

    def _view(self, zone: str, gateway: EdgeGatewayFields | None) -> None:
        """The gateway as a change answered it: the next change's positions are read from it."""
        if gateway is not None:
            self.gateways[zone] = gateway


def backends_by_zone(nodes: Sequence[Body], machines: Mapping[str, Machine]) -> dict[str, list[str]]:
    """The ready nodes' addresses by the zone of their VMs (a gateway forwards only within its zone)."""
    found: dict[str, list[str]] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        address, machine = backend(node), machines.get(name)
        if address is not None and machine is not None:
            found.setdefault(machine.zone, []).append(address)
    return found


def choose_zone(backends: Mapping[str, list[str]]) -> str | None:
    """The zone with the most ready nodes (by name on a tie); None without any."""
    if not backends:
        return None
    return min(backends, key=lambda zone: (-len(backends[zone]), zone))
