"""VDCs (virtual data centers): their definitions, their live usage, their quotas, their pools.

A VDC's definition is a catalog ConfigMap (kind ``vdc``). Each VDC has a pool ``fp-<id>`` in each of
its zones. What it uses is read live from Proxmox.

Who may do what: ADMIN creates, updates and deletes VDCs and sees every VDC; an ORG_OWNER does so for
the VDCs of the organizations they own, within each one's allowance (``services.organizations``); a USER
sees the VDCs they are a member of. Any other VDC is reported exactly as one that does not exist.

- ``definitions``: who sees which VDC, the VDC a request acts in, a definition's input checked;
- ``quota``: what a VDC's VMs use, read now, against its quota (for decisions, under its lock);
- ``listing``: the VDCs as shown, each with what it uses (its VMs, networks and public IPs);
- ``pools``: its Proxmox pools, made and deleted all or none;
- ``changes``: ``create_vdc``, ``update_vdc``, ``delete_vdc``, with its pools, networks and gateways.

Which way the imports run: ``definitions`` and ``quota`` are below the networks, gateways and security
groups, which import them by their module's name (never through this package, whose ``listing`` and
``changes`` are above them); ``listing`` and ``changes`` call the networks and gateways as packages.
"""

from orchestrator.services.vdcs.changes import create_vdc, delete_vdc, update_vdc
from orchestrator.services.vdcs.definitions import FIELDS, acting_vdc, get_vdc, visible_vdcs
from orchestrator.services.vdcs.listing import VdcUsage, list_vdcs, usage
from orchestrator.services.vdcs.quota import Tally, check_quota, fresh_usage

__all__ = [
    "FIELDS",
    "Tally",
    "VdcUsage",
    "acting_vdc",
    "check_quota",
    "create_vdc",
    "delete_vdc",
    "fresh_usage",
    "get_vdc",
    "list_vdcs",
    "update_vdc",
    "usage",
    "visible_vdcs",
]
