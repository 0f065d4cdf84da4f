"""Nodes: each initialized from its VM (provider ID, addresses, topology and instance-type labels, the
``uninitialized`` taint lifted), and removed once its VM is gone.

A Node is its VM by name: kubeadm names a node after its host name, which cloud-init sets to the VM's
name. Every Node of a tenant cluster is a worker VM of the VDC (the control plane runs as pods on the
management cluster), so a Node whose name no VM of the VDC has is a VM that is gone. The listing that
says so is the API's whole answer: a listing that fails ends the pass, and nothing is deleted on it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from providers.cloud.model import Body, Machine, needs_details, node_patch, status_patch
from providers.cloud.tenant import TenantCluster
from providers.cloud.vdc import Vdc

log = logging.getLogger(__name__)


def reconcile_nodes(
    tenant: TenantCluster, vdc: Vdc, nodes: list[Body], machines: Mapping[str, Machine]
) -> None:
    """One pass over the Nodes: initialize or update each, delete those whose VM is gone."""
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        machine = machines.get(name)
        if machine is None:
            log.info("deleting Node %s: the VDC has no VM of that name", name)
            tenant.delete_node(name)
            continue
        ensure_node(tenant, vdc, node, machine)


def ensure_node(tenant: TenantCluster, vdc: Vdc, node: Body, machine: Machine) -> None:
    """The Node as its VM says: labels always; provider ID, addresses and the taint while it is not
    initialized (reading the VM's config for its uuid and NICs only then)."""
    name = str((node.get("metadata") or {}).get("name"))
    initialize = needs_details(node)
    if initialize:
        detailed = vdc.machine(machine.id)
        if detailed is None:
            return  # gone between the listing and now: the next pass deletes the Node
        machine = detailed
        addresses = status_patch(node, machine)
        if addresses is not None:
            tenant.patch_node_status(name, addresses)
    patch = node_patch(node, machine, initialize=initialize)
    if patch is not None:
        tenant.patch_node(name, patch)
        if initialize:
            log.info("Node %s initialized from VM %s", name, machine.id)
