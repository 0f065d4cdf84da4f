"""Security groups: a VDC's named sets of firewall rules, realised on each member VM's own firewall.

A VDC's groups are stored in its catalog entry (``store``); a VM's groups are its ``fp-sg-<group>``
tags (``orchestrator.models.security_groups``); a group is realised on the firewall of each VM in it
(``realise``: what the firewall should hold; ``apply``: reading and writing it, at most
``apply.PER_NODE`` VMs at once per node). Changing a group updates every member's firewall, and the
IP sets of the VMs whose rules name it; a VM that could not be updated is reported, and the same
change again converges.

Who may do what: USER members of the VDC, and ADMIN. The VDC is the one the request names
(``FlexPlane-VDC-ID``), or, for a VM, the VM's own. Another VDC's group is reported exactly like one
that does not exist. Changes hold the VDC's security-group lock (not the lock of its creates), so that
two changes never write one VM's firewall at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.errors import Conflict, NotFound, Unavailable, ValidationFailed
from orchestrator.models import Vdc, VirtualMachine
from orchestrator.models.security_groups import (
    DEFAULT_GROUP,
    MAX_GROUPS_PER_VDC,
    SecurityGroup,
    group_tag,
    groups_in,
    with_groups,
)
from orchestrator.services import access, locks, networks, vdcs
from orchestrator.services.catalog import check_fields
from orchestrator.services.context import Context
from orchestrator.services.security_groups.apply import (
    PER_NODE,
    Member,
    NotUpdated,
    Realised,
    complete,
    realise,
    referencing,
    vdc_members,
)
from orchestrator.services.security_groups.rules import GROUP_FIELDS, parse_group, parse_membership
from orchestrator.services.security_groups.store import Groups, change_groups, stored_groups
from orchestrator.services.vms.listing import locate, reread
from orchestrator.sources.proxmox import ConfigChange, ZoneApi

__all__ = [
    "PER_NODE",
    "Assigned",
    "Changed",
    "NotUpdated",
    "Realised",
    "assign_security_groups",
    "check_membership",
    "create_security_group",
    "delete_security_group",
    "forget_vm",
    "group_tag",
    "realise_new_vm",
    "realise_vdc",
    "security_groups",
    "update_security_group",
]

logger = logging.getLogger(__name__)

GROUP = "security group"
# How long a change waits for another change of the same VDC's groups before answering CONFLICT.
LOCK_WAIT = 60.0


@dataclass(frozen=True)
class Changed:
    """A group as stored after a change, and how its members' firewalls fared."""

    group: SecurityGroup
    realised: Realised


@dataclass(frozen=True)
class Assigned:
    """A VM after its groups were set, and how the firewalls fared (its own and its peers')."""

    vm: VirtualMachine
    groups: list[str]
    realised: Realised


# ------------------------------------------------------------------------------------------ helpers


def _request_vdc(ctx: Context) -> Vdc:
    """The VDC the request names, which the caller may act in (a member, or ADMIN)."""
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)  # a member of that VDC, or ADMIN: FORBIDDEN otherwise
    return vdcs.get_vdc(ctx, ctx.vdc)


@contextmanager
def _lock(ctx: Context, vdc: Vdc) -> Iterator[None]:
    """The VDC's security-group lock: its own lease (a '.' is in no VDC id), not the one its creates hold."""
    with locks.vdc_lock(ctx, f"{vdc.id}.security-groups", wait=LOCK_WAIT):
        yield


def _vdc_cidrs(ctx: Context, vdc: Vdc, *, strict: bool = True) -> list[str]:
    """The VDC's network CIDRs; ``strict``: ``Unavailable`` unless every zone of the VDC answered (see
    ``apply.complete``)."""
    cidrs = [str(network.cidr) for network in networks.vdc_networks(ctx, vdc)]
    if strict and not complete(ctx, vdc):
        failure = next(f for f in ctx.unavailable if f.where in vdc.zones)
        raise Unavailable(
            failure.where, f"the networks of VDC {vdc.id} cannot be read now: {failure.message}"
        )
    return cidrs


def _members_of(members: Sequence[Member], group: str) -> list[Member]:
    return [vm for vm in members if group in vm.groups]


def _named(vms: Sequence[Member]) -> str:
    shown = ", ".join(f"{vm.name} ({vm.id})" for vm in vms[:10])
    return shown + (f" and {len(vms) - 10} more" if len(vms) > 10 else "")


def _group(groups: Mapping[str, SecurityGroup], name: str) -> SecurityGroup:
    found = groups.get(name)
    if found is None:
        raise NotFound(GROUP, name)
    return found


# ------------------------------------------------------------------------------------------ reads


def security_groups(ctx: Context) -> list[SecurityGroup]:
    """The groups of the VDC the request names (its members, ADMIN); without one, of every VDC the
    caller may see, by VDC then name. No Proxmox call."""
    visible = access.visible_vdcs(ctx)
    return [
        group
        for vdc in vdcs.visible_vdcs(ctx)
        if visible is None or vdc.id in visible
        for group in stored_groups(ctx, vdc.id).values()
    ]


def check_membership(
    ctx: Context, vdc: Vdc, groups: Sequence[str] | None, field: str = "security_groups"
) -> list[str]:
    """The groups a new VM of ``vdc`` is to be in, checked (``default`` when none is given)."""
    return parse_membership(list(groups or [DEFAULT_GROUP]), stored_groups(ctx, vdc.id), field)


# ------------------------------------------------------------------------------------------ changes


def create_security_group(ctx: Context, values: Mapping[str, Any]) -> Changed:
    """A new group of the request's VDC (no VM is in it yet: no firewall changes)."""
    vdc = _request_vdc(ctx)

    def change(groups: Groups) -> tuple[Groups, SecurityGroup]:
        name = values.get("name")
        if isinstance(name, str) and name in groups:
            raise Conflict(f"VDC {vdc.id} has a security group {name!r} already")
        if len(groups) >= MAX_GROUPS_PER_VDC:
            raise ValidationFailed("name", f"a VDC has at most {MAX_GROUPS_PER_VDC} security groups")
        group = replace(parse_group(values, {*groups, str(name)}), vdc=vdc.id)
        return {**groups, group.name: group}, group

    change(stored_groups(ctx, vdc.id))  # a bad input is refused before the lock is taken
    with _lock(ctx, vdc):
        created = change_groups(ctx, vdc.id, change)
    return Changed(created, Realised())


def update_security_group(ctx: Context, name: str, changes: Mapping[str, Any]) -> Changed:
    """Change a group's description and/or rules (its name stays); every member's firewall follows."""
    vdc = _request_vdc(ctx)
    _group(stored_groups(ctx, vdc.id), name)
    check_fields(changes, GROUP_FIELDS)
    if "name" in changes and changes["name"] not in (None, name):
        raise ValidationFailed("name", "a security group's name cannot change")

    def change(groups: Groups) -> tuple[Groups, Groups]:
        before = _group(groups, name)
        values = {
            "name": name,
            "description": before.description
            if changes.get("description") is None
            else changes["description"],
            "rules": [_input(r.to_spec()) for r in before.rules]
            if changes.get("rules") is None
            else changes["rules"],
        }
        group = replace(parse_group(values, groups), vdc=vdc.id)
        after = {**groups, name: group}
        return after, after

    change(stored_groups(ctx, vdc.id))  # a bad input is refused before the lock is taken
    with _lock(ctx, vdc):
        members = vdc_members(ctx, vdc)
        cidrs = _vdc_cidrs(ctx, vdc)  # both read before the change is stored: they may be Unavailable
        groups = change_groups(ctx, vdc.id, change)
        realised = realise(ctx, groups, members, _members_of(members, name), cidrs)
    return Changed(groups[name], realised)


def _input(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A stored rule as an input (its fields under the input's names)."""
    return {("vdc_networks" if k == "vdcNetworks" else k): v for k, v in spec.items()}


def delete_security_group(ctx: Context, name: str) -> SecurityGroup:
    """Remove a group: refused (CONFLICT) for ``default``, while VMs are in it (naming them), and while
    another group's rules name it."""
    vdc = _request_vdc(ctx)
    _group(stored_groups(ctx, vdc.id), name)
    if name == DEFAULT_GROUP:
        raise Conflict("the default security group cannot be deleted")

    with _lock(ctx, vdc):
        in_it = _members_of(vdc_members(ctx, vdc), name)
        if in_it:
            raise Conflict(f"security group {name!r} still has {len(in_it)} VM(s): {_named(in_it)}")

        def change(groups: Groups) -> tuple[Groups, SecurityGroup]:
            gone = _group(groups, name)
            naming = sorted(g.name for g in groups.values() if g.name != name and name in g.referenced_groups)
            if naming:
                raise Conflict(f"the rules of security group(s) {', '.join(naming)} name {name!r}")
            return {k: g for k, g in groups.items() if k != name}, gone

        return change_groups(ctx, vdc.id, change)


def assign_security_groups(ctx: Context, vm_id: str, groups: Sequence[str]) -> Assigned:
    """Put a VM in exactly these groups of its VDC (its ``fp-sg-<group>`` tags), and bring its firewall,
    and the IP sets of the VMs whose rules name its old or new groups, to what they say."""
    api, vm = locate(ctx, vm_id)
    vdc = vdcs.get_vdc(ctx, vm.vdc)
    wanted = parse_membership(groups, stored_groups(ctx, vdc.id))
    with _lock(ctx, vdc):
        members = vdc_members(ctx, vdc)
        cidrs = _vdc_cidrs(ctx, vdc)
        before = groups_in(vm.tags)
        tags = with_groups(vm.tags, wanted)
        if set(tags) != set(vm.tags):
            api.set_config(vm.host, vm.vmid, ConfigChange(tags=tuple(tags)))
        members = [m for m in members if m.id != vm.id] + [
            Member(vm.zone, vm.host, vm.vmid, vm.name, tuple(wanted))
        ]
        defined = stored_groups(ctx, vdc.id)
        targets = {m.id: m for m in referencing(members, defined, {*before, *wanted})}
        targets[vm.id] = members[-1]
        realised = realise(ctx, defined, members, list(targets.values()), cidrs)
    return Assigned(reread(api, vm), wanted, realised)


def realise_new_vm(
    ctx: Context, api: ZoneApi, vdc: Vdc, node: str, vmid: int, groups: Sequence[str]
) -> Realised:
    """A new VM's firewall, before it first starts: what its groups say (``groups``: checked by
    ``check_membership``; its tags must carry them, ``group_tag``); and its address added to the IP sets
    of the VMs whose rules name its groups. Its own firewall failing raises; its peers' are reported.

    Its VDC's zones that do not answer are left out (their VMs' addresses and networks are missing
    from its IP sets until its groups next change, and no peer's IP set loses an entry), rather than
    failing the create.
    """
    defined = stored_groups(ctx, vdc.id)
    wanted = parse_membership(list(groups), defined, "security_groups")
    with _lock(ctx, vdc):
        members = vdc_members(ctx, vdc, strict=False)
        listed = next((m for m in members if m.zone == api.zone and m.vmid == vmid), None)
        me = Member(api.zone, node, vmid, listed.name if listed else f"vm-{vmid}", tuple(wanted))
        members = [m for m in members if m.id != me.id] + [me]
        targets = {m.id: m for m in referencing(members, defined, wanted)}
        targets[me.id] = me
        cidrs = _vdc_cidrs(ctx, vdc, strict=False)
        add_only = not complete(ctx, vdc)
        realised = realise(ctx, defined, members, list(targets.values()), cidrs, add_only=add_only)
    for failure in realised.failures:
        if failure.vm == me.id:
            raise failure.error
        logger.warning("security groups: %s", failure.message)
    return realised


def realise_vdc(ctx: Context, vdc: Vdc) -> Realised:
    """Every VM of the VDC brought to what its groups say (after its networks changed, say)."""
    with _lock(ctx, vdc):
        members = vdc_members(ctx, vdc)
        return realise(ctx, stored_groups(ctx, vdc.id), members, members, _vdc_cidrs(ctx, vdc))


def forget_vm(ctx: Context, vdc: Vdc, groups: Sequence[str]) -> Realised:
    """After a VM of ``vdc`` in ``groups`` is gone: the IP sets of the VMs whose rules name one of those
    groups lose its address. Best effort (for the VM delete): what could not be updated is logged and
    returned, and the next change of those groups brings it in line."""
    with _lock(ctx, vdc):
        members = vdc_members(ctx, vdc, strict=False)
        defined = stored_groups(ctx, vdc.id)
        targets = referencing(members, defined, groups)
        cidrs = _vdc_cidrs(ctx, vdc, strict=False)
        realised = realise(ctx, defined, members, targets, cidrs, add_only=not complete(ctx, vdc))
    for failure in realised.failures:
        logger.warning("security groups: %s", failure.message)
    return realised
