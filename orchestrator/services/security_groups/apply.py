"""Security groups brought onto the VMs' firewalls: which VMs are in which groups (their tags, in
``/cluster/resources``: one call per zone), the members' addresses (their configs' ``ipconfigN``), and
each affected VM's firewall brought to what ``realise.desired`` says, with ``realise.steps``.

VMs are updated in parallel, at most ``PER_NODE`` at once on one node. A VM that cannot be updated does
not stop the others: it is reported (``NotUpdated``), and doing the same again converges, since every
update compares the firewall as it is with what it should be.

What writes firewalls holds the VDC's security-group lock (``lock``: not the lock of its creates), so
that two changes never write one VM's firewall at once; the VDC's networks (``vdc_cidrs``) are read
from ``services.networks.reads``.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from threading import Lock

from orchestrator.errors import FlexPlaneError, Unavailable
from orchestrator.models import Vdc
from orchestrator.models.security_groups import SecurityGroup, groups_in
from orchestrator.models.vms import parse_tags, vdc_in, vm_id
from orchestrator.services import catalog, inventory, locks
from orchestrator.services.context import Context
from orchestrator.services.networks.reads import vdc_networks
from orchestrator.services.security_groups.realise import (
    VDC_NETS_IPSET,
    Firewall,
    Steps,
    desired,
    group_ipset,
    is_our_ipset,
    steps,
)
from orchestrator.sources.proxmox import ZoneApi
from orchestrator.sources.proxmox.firewall import VmFirewall

logger = logging.getLogger(__name__)

# How many VMs' firewalls are written at once on one node, and at most in all.
PER_NODE = 4
MAX_WORKERS = 32
# How long a change waits for another change of the same VDC's groups before answering CONFLICT.
LOCK_WAIT = 60.0


@dataclass(frozen=True)
class Member:
    """A VM of the VDC, where it is, and the groups it is in."""

    zone: str
    node: str
    vmid: int
    name: str
    groups: tuple[str, ...]

    @property
    def id(self) -> str:
        return vm_id(self.zone, self.vmid)


@dataclass(frozen=True)
class NotUpdated:
    """A VM whose firewall could not be brought to what its groups say, and why."""

    vm: str
    name: str
    error: FlexPlaneError

    @property
    def message(self) -> str:
        return (
            f"the firewall of VM {self.name} ({self.vm}) could not be updated: {self.error.message}; "
            "the same request again updates it"
        )


@dataclass(frozen=True)
class Realised:
    """VMs whose firewalls are as their groups say (changed or already so), and those that are not."""

    updated: list[str] = field(default_factory=list)
    failures: list[NotUpdated] = field(default_factory=list)


def vdc_members(ctx: Context, vdc: Vdc, *, strict: bool = True) -> list[Member]:
    """The VDC's VMs with their groups, read now from each of its zones (one call per zone).
    ``strict``: ``Unavailable`` when a zone does not answer (its members, hence the groups' addresses,
    are unknown); else those zones are left out (and reported on ``ctx``)."""
    targets = [t for t in catalog.zone_targets(ctx) if t.zone in vdc.zones]
    fan = ctx.proxmox.cluster_resources(targets, kind="vm")
    ctx.report_unavailable(list(fan.failures.values()))
    if fan.failures and strict:
        zone, failure = sorted(fan.failures.items())[0]
        raise Unavailable(
            zone, f"the security groups of VDC {vdc.id} cannot be applied now: {failure.message}"
        )
    return sorted(
        (
            Member(zone, guest.node, guest.vmid, guest.name, tuple(groups_in(parse_tags(guest.tags))))
            for zone, resources in fan.results.items()
            for guest in resources.vms
            if vdc_in(guest.tags) == vdc.id
        ),
        key=lambda m: (m.zone, m.vmid),
    )


def complete(ctx: Context, vdc: Vdc) -> bool:
    """Whether every zone of the VDC answered this request's reads so far."""
    return not any(failure.where in vdc.zones for failure in ctx.unavailable)


def referencing(
    vms: Iterable[Member], groups: Mapping[str, SecurityGroup], named: Iterable[str]
) -> list[Member]:
    """The VMs in a group whose rules name one of the groups ``named`` (their IP sets hold its members)."""
    wanted = set(named)
    return [vm for vm in vms if any(wanted & groups[g].referenced_groups for g in vm.groups if g in groups)]


def _per_node(vms: Sequence[Member], work: Callable[[Member], None]) -> dict[str, FlexPlaneError]:
    """``work`` on every VM, ``PER_NODE`` at once per node; the VMs it failed on, by id."""
    by_node: dict[tuple[str, str], queue.SimpleQueue[Member]] = {}
    for vm in vms:
        by_node.setdefault((vm.zone, vm.node), queue.SimpleQueue()).put(vm)
    failures: dict[str, FlexPlaneError] = {}
    guard = Lock()

    def drain(pending: queue.SimpleQueue[Member]) -> None:
        while True:
            try:
                vm = pending.get_nowait()
            except queue.Empty:
                return
            try:
                work(vm)
            except FlexPlaneError as exc:
                with guard:
                    failures[vm.id] = exc

    workers = [q for q in by_node.values() for _ in range(min(PER_NODE, q.qsize()))]
    if not workers:
        return failures
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(workers)), thread_name_prefix="fp-sg") as pool:
        for future in [pool.submit(drain, q) for q in workers]:
            future.result()
    return failures


def _apis(ctx: Context, vms: Iterable[Member]) -> dict[str, ZoneApi]:
    return {zone: inventory.zone_api(ctx, zone) for zone in sorted({vm.zone for vm in vms})}


def addresses(ctx: Context, vms: Sequence[Member]) -> tuple[dict[str, list[str]], dict[str, FlexPlaneError]]:
    """Each VM's IPv4 addresses, from its config's ``ipconfigN`` ``ip=<address>/<prefix>`` (one read per
    VM; a VM on DHCP has none here), and the VMs whose config could not be read."""
    apis = _apis(ctx, vms)
    found: dict[str, list[str]] = {}

    def read(vm: Member) -> None:
        config = apis[vm.zone].config(vm.node, vm.vmid)
        found[vm.id] = [
            ipconfig.ip.split("/")[0]
            for _, ipconfig in config.ipconfigs
            if ipconfig.ip and ipconfig.ip != "dhcp" and "." in ipconfig.ip
        ]

    failures = _per_node(vms, read)
    return found, failures


def apply_firewall(
    firewall: VmFirewall, node: str, vmid: int, want: Firewall, *, add_only: bool = False
) -> Steps:
    """Bring one VM's firewall to ``want`` (``add_only``: removing no IP set entry); the steps taken
    (none when it was so already)."""
    options = firewall.options(node, vmid)
    rules = firewall.rules(node, vmid)
    held = {
        name: firewall.ipset(node, vmid, name) for name in firewall.ipsets(node, vmid) if is_our_ipset(name)
    }
    todo = steps(options, rules, held, want, add_only=add_only)
    for name in todo.create_ipsets:
        what = "the VDC's networks" if name == VDC_NETS_IPSET else f"the members of security group {name}"
        firewall.create_ipset(node, vmid, name, f"flex.plane: {what}")
    for name, entry in todo.add_entries:
        firewall.add_entry(node, vmid, name, entry)
    for name, entry in todo.remove_entries:
        firewall.remove_entry(node, vmid, name, entry)
    for pos in todo.delete_rules:
        firewall.delete_rule(node, vmid, pos)
    for rule in todo.add_rules:
        firewall.add_rule(node, vmid, rule)
    if todo.options is not None:
        firewall.set_options(node, vmid, todo.options)
    for name, entry in todo.empty_ipsets:
        firewall.remove_entry(node, vmid, name, entry)
    for name in todo.delete_ipsets:
        firewall.delete_ipset(node, vmid, name)
    return todo


def realise(
    ctx: Context,
    groups: Mapping[str, SecurityGroup],
    members: Sequence[Member],
    targets: Sequence[Member],
    vdc_cidrs: Sequence[str],
    *,
    add_only: bool = False,
) -> Realised:
    """Bring the firewalls of ``targets`` to what their groups say; ``members``: every VM of the VDC
    (the groups' members, whose addresses the IP sets hold). ``add_only``: ``members`` or ``vdc_cidrs``
    may lack some (a zone did not answer), so no IP set entry is removed."""
    if not targets:
        return Realised()
    named = {
        g for vm in targets for name in vm.groups if name in groups for g in groups[name].referenced_groups
    }
    holders = [vm for vm in members if set(vm.groups) & named]
    found, unread = addresses(ctx, holders)
    unknown = {g for vm in holders if vm.id in unread for g in vm.groups}
    by_group: dict[str, list[str]] = {}
    for vm in holders:
        for group in vm.groups:
            by_group.setdefault(group, []).extend(found.get(vm.id, []))
    apis = _apis(ctx, targets)
    failures: dict[str, FlexPlaneError] = {}
    wanted: dict[str, Firewall] = {}
    for vm in targets:
        want = desired(vm.groups, groups, by_group, vdc_cidrs)
        missing = sorted(g for g in unknown if group_ipset(g) in want.ipsets)
        if missing:
            vms = sorted(h.id for h in holders if h.id in unread and set(h.groups) & set(missing))
            failures[vm.id] = Unavailable(
                vm.zone, f"the addresses of {', '.join(vms)} (in {', '.join(missing)}) could not be read"
            )
        else:
            wanted[vm.id] = want

    def work(vm: Member) -> None:
        firewall = VmFirewall(apis[vm.zone])
        done = apply_firewall(firewall, vm.node, vm.vmid, wanted[vm.id], add_only=add_only)
        logger.info("security groups: firewall of %s: %d change(s)", vm.id, done.count)

    failures |= _per_node([vm for vm in targets if vm.id in wanted], work)
    return Realised(
        updated=[vm.id for vm in targets if vm.id not in failures],
        failures=[NotUpdated(vm.id, vm.name, failures[vm.id]) for vm in targets if vm.id in failures],
    )


@contextmanager
def lock(ctx: Context, vdc: Vdc) -> Iterator[None]:
    """The VDC's security-group lock: its own lease (a '.' is in no VDC id), not the one its creates hold."""
    with locks.vdc_lock(ctx, f"{vdc.id}.security-groups", wait=LOCK_WAIT):
        yield


def vdc_cidrs(ctx: Context, vdc: Vdc, *, strict: bool = True) -> list[str]:
    """The VDC's network CIDRs; ``strict``: ``Unavailable`` unless every zone of the VDC answered (see
    ``apply.complete``)."""
    cidrs = [str(network.cidr) for network in vdc_networks(ctx, vdc)]
    if strict and not complete(ctx, vdc):
        failure = next(f for f in ctx.unavailable if f.where in vdc.zones)
        raise Unavailable(
            failure.where, f"the networks of VDC {vdc.id} cannot be read now: {failure.message}"
        )
    return cidrs
