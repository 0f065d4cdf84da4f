"""The VMs in a VDC's security groups: a VM's groups set, a new VM's firewall made, a VM gone, and every VM
of the VDC brought in line (after its networks changed). A VM's groups are its ``fp-sg-<group>`` tags
(``orchestrator.models.security_groups``); its VDC is the VM's own. Each holds the VDC's security-group
lock (``apply.lock``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.models import Vdc, VirtualMachine
from orchestrator.models.security_groups import DEFAULT_GROUP, groups_in, with_groups
from orchestrator.services.context import Context
from orchestrator.services.security_groups.apply import (
    Member,
    Realised,
    complete,
    lock,
    realise,
    referencing,
    vdc_cidrs,
    vdc_members,
)
from orchestrator.services.security_groups.rules import parse_membership
from orchestrator.services.security_groups.store import stored_groups
from orchestrator.services.vdcs.definitions import get_vdc
from orchestrator.services.vms.listing import locate, reread
from orchestrator.sources.proxmox import ConfigChange, ZoneApi

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Assigned:
    """A VM after its groups were set, and how the firewalls fared (its own and its peers')."""

    vm: VirtualMachine
    groups: list[str]
    realised: Realised


def check_membership(
    ctx: Context, vdc: Vdc, groups: Sequence[str] | None, field: str = "security_groups"
) -> list[str]:
    """The groups a new VM of ``vdc`` is to be in, checked (``default`` when none is given)."""
    return parse_membership(list(groups or [DEFAULT_GROUP]), stored_groups(ctx, vdc.id), field)


def assign_security_groups(ctx: Context, vm_id: str, groups: Sequence[str]) -> Assigned:
    """Put a VM in exactly these groups of its VDC (its ``fp-sg-<group>`` tags), and bring its firewall,
    and the IP sets of the VMs whose rules name its old or new groups, to what they say."""
    api, vm = locate(ctx, vm_id)
    vdc = get_vdc(ctx, vm.vdc)
    wanted = parse_membership(groups, stored_groups(ctx, vdc.id))
    with lock(ctx, vdc):
        members = vdc_members(ctx, vdc)
        cidrs = vdc_cidrs(ctx, vdc)
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
    with lock(ctx, vdc):
        members = vdc_members(ctx, vdc, strict=False)
        listed = next((m for m in members if m.zone == api.zone and m.vmid == vmid), None)
        me = Member(api.zone, node, vmid, listed.name if listed else f"vm-{vmid}", tuple(wanted))
        members = [m for m in members if m.id != me.id] + [me]
        targets = {m.id: m for m in referencing(members, defined, wanted)}
        targets[me.id] = me
        cidrs = vdc_cidrs(ctx, vdc, strict=False)
        add_only = not complete(ctx, vdc)
        realised = realise(ctx, defined, members, list(targets.values()), cidrs, add_only=add_only)
    for failure in realised.failures:
        if failure.vm == me.id:
            raise failure.error
        logger.warning("security groups: %s", failure.message)
    return realised


def realise_vdc(ctx: Context, vdc: Vdc) -> Realised:
    """Every VM of the VDC brought to what its groups say (after its networks changed, say)."""
    with lock(ctx, vdc):
        members = vdc_members(ctx, vdc)
        return realise(ctx, stored_groups(ctx, vdc.id), members, members, vdc_cidrs(ctx, vdc))


def forget_vm(ctx: Context, vdc: Vdc, groups: Sequence[str]) -> Realised:
    """After a VM of ``vdc`` in ``groups`` is gone: the IP sets of the VMs whose rules name one of those
    groups lose its address. Best effort (for the VM delete): what could not be updated is logged and
    returned, and the next change of those groups brings it in line."""
    with lock(ctx, vdc):
        members = vdc_members(ctx, vdc, strict=False)
        defined = stored_groups(ctx, vdc.id)
        targets = referencing(members, defined, groups)
        cidrs = vdc_cidrs(ctx, vdc, strict=False)
        realised = realise(ctx, defined, members, targets, cidrs, add_only=not complete(ctx, vdc))
    for failure in realised.failures:
        logger.warning("security groups: %s", failure.message)
    return realised
