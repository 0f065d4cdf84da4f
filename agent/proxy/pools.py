"""The checks the proxy makes against the node's own state: a disk moves between VMs of one VDC, and a clone
copies a template or a VM of the pool it goes into.

A disk moved to another VM (``move_disk`` with ``target-vmid``) becomes that VM's: Proxmox renames its
volume to the target's. The request alone cannot say whether the two VMs belong to the same tenant, and
the agent's role may configure every VM's disks (``VM.Config.Disk`` on ``/vms``), so before forwarding
such a move the proxy reads the cluster's VMs (``/cluster/resources?type=vm``) and forwards it only
where both VMs are in one flex.plane pool (``fp-<vdc>``): a VDC's volume never reaches another VDC's VM.
A VM cannot change pools meanwhile: no forwarded call moves a VM between pools.

A clone copies every disk of its source into the pool it names: forwarded only where the source is a
template (a VM's image) or a VM of that very pool (a volume snapshot, a volume made from one), so that no
VDC's disk is copied into another's pool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agent.proxy.paths import POOL
from agent.proxy.refusal import NotAllowed

RESOURCES_PATH = "/cluster/resources"
RESOURCES_PARAMS: Mapping[str, str] = {"type": "vm"}
_POOL = re.compile(POOL, re.ASCII)


def pools_of(resources: Any) -> dict[str, str]:
    """VMID -> pool ("" for none) of every guest in a ``/cluster/resources`` answer's data."""
    out: dict[str, str] = {}
    for item in resources if isinstance(resources, list) else ():
        if isinstance(item, dict) and item.get("vmid") is not None:
            out[str(item["vmid"])] = str(item.get("pool") or "")
    return out


def templates_of(resources: Any) -> frozenset[str]:
    """The VMIDs of the templates in a ``/cluster/resources`` answer's data."""
    items = resources if isinstance(resources, list) else ()
    return frozenset(
        str(item["vmid"])
        for item in items
        if isinstance(item, dict) and item.get("vmid") is not None and item.get("template") in (1, True, "1")
    )


def check_clone_source(resources: Any, vmid: str, pool: str | None, parameter: str) -> None:
    """``NotAllowed`` (naming ``parameter``) unless VM ``vmid`` is a template or in the ``fp-`` pool
    ``pool`` that its clone goes into."""
    if vmid in templates_of(resources):
        return
    mine = pools_of(resources).get(vmid)
    if mine is None:
        raise NotAllowed(f"VM {vmid} is not among the cluster's VMs")
    if not _POOL.fullmatch(mine) or mine != pool:
        raise NotAllowed(
            f"parameter {parameter}: VM {vmid} is in pool {mine or 'none'}, not {pool or 'none'}, and is no "
            "template: a clone copies a template, or a VM into its own pool",
            parameter,
        )


def check_same_pool(pools: Mapping[str, str], vmid: str, other: str, parameter: str) -> None:
    """``NotAllowed`` (naming ``parameter``) unless VMs ``vmid`` and ``other`` are in one ``fp-`` pool."""
    mine = pools.get(vmid)
    if mine is None:
        raise NotAllowed(f"VM {vmid} is not among the cluster's VMs")
    theirs = pools.get(other)
    if theirs is None:
        raise NotAllowed(f"parameter {parameter}: VM {other} is not among the cluster's VMs", parameter)
    if not _POOL.fullmatch(mine):
        raise NotAllowed(f"VM {vmid} is in no pool of flex.plane's ({mine or 'none'})")
    if theirs != mine:
        raise NotAllowed(
            f"parameter {parameter}: VM {other} is in pool {theirs or 'none'}, not VM {vmid}'s {mine}: "
            "a disk moves between VMs of one VDC only",
            parameter,
        )
