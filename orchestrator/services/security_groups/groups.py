"""A VDC's security groups themselves: read, created, changed (every member's firewall follows), deleted.

A VDC's groups are stored in its catalog entry (``store``). The VDC is the one the request names
(``FlexPlane-VDC-ID``); another VDC's group is reported exactly like one that does not exist. Changes hold
the VDC's security-group lock (``apply.lock``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.errors import Conflict, NotFound, ValidationFailed
from orchestrator.models.security_groups import DEFAULT_GROUP, MAX_GROUPS_PER_VDC, SecurityGroup
from orchestrator.services import access
from orchestrator.services.catalog import check_fields
from orchestrator.services.context import Context
from orchestrator.services.security_groups.apply import (
    Member,
    Realised,
    lock,
    realise,
    vdc_cidrs,
    vdc_members,
)
from orchestrator.services.security_groups.rules import GROUP_FIELDS, parse_group
from orchestrator.services.security_groups.store import Groups, change_groups, stored_groups
from orchestrator.services.vdcs.definitions import acting_vdc, visible_vdcs

GROUP = "security group"


@dataclass(frozen=True)
class Changed:
    """A group as stored after a change, and how its members' firewalls fared."""

    group: SecurityGroup
    realised: Realised


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


def security_groups(ctx: Context) -> list[SecurityGroup]:
    """The groups of the VDC the request names (its members, ADMIN); without one, of every VDC the
    caller may see, by VDC then name. No Proxmox call."""
    visible = access.visible_vdcs(ctx)
    return [
        group
        for vdc in visible_vdcs(ctx)
        if visible is None or vdc.id in visible
        for group in stored_groups(ctx, vdc.id).values()
    ]


def create_security_group(ctx: Context, values: Mapping[str, Any]) -> Changed:
    """A new group of the request's VDC (no VM is in it yet: no firewall changes)."""
    vdc = acting_vdc(ctx)

    def change(groups: Groups) -> tuple[Groups, SecurityGroup]:
        name = values.get("name")
        if isinstance(name, str) and name in groups:
            raise Conflict(f"VDC {vdc.id} has a security group {name!r} already")
        if len(groups) >= MAX_GROUPS_PER_VDC:
            raise ValidationFailed("name", f"a VDC has at most {MAX_GROUPS_PER_VDC} security groups")
        group = replace(parse_group(values, {*groups, str(name)}), vdc=vdc.id)
        return {**groups, group.name: group}, group

    change(stored_groups(ctx, vdc.id))  # a bad input is refused before the lock is taken
    with lock(ctx, vdc):
        created = change_groups(ctx, vdc.id, change)
    return Changed(created, Realised())


def update_security_group(ctx: Context, name: str, changes: Mapping[str, Any]) -> Changed:
    """Change a group's description and/or rules (its name stays); every member's firewall follows."""
    vdc = acting_vdc(ctx)
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
    with lock(ctx, vdc):
        members = vdc_members(ctx, vdc)
        cidrs = vdc_cidrs(ctx, vdc)  # both read before the change is stored: they may be Unavailable
        groups = change_groups(ctx, vdc.id, change)
        realised = realise(ctx, groups, members, _members_of(members, name), cidrs)
    return Changed(groups[name], realised)


def _input(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A stored rule as an input (its fields under the input's names)."""
    return {("vdc_networks" if k == "vdcNetworks" else k): v for k, v in spec.items()}


def delete_security_group(ctx: Context, name: str) -> SecurityGroup:
    """Remove a group: refused (CONFLICT) for ``default``, while VMs are in it (naming them), and while
    another group's rules name it."""
    vdc = acting_vdc(ctx)
    _group(stored_groups(ctx, vdc.id), name)
    if name == DEFAULT_GROUP:
        raise Conflict("the default security group cannot be deleted")

    with lock(ctx, vdc):
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
