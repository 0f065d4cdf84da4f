"""Typed values built from live Proxmox and Kubernetes payloads, never saved: there is no database.

What the management cluster stores (the catalog's kinds, VDCs, security groups, gateways) is declared
once per spec as a pydantic model (``models.specs``), which reads and writes its camelCase JSON. VMs and
tasks, read live from Proxmox, are unmanaged Django models (``Meta.managed = False``), never queried
through the ORM (docs/architecture.md, "Specs and models").
"""

from orchestrator.models.catalog import ComputeProfile, Image, StorageProfile
from orchestrator.models.vdcs import Usage, Vdc
from orchestrator.models.vms import VirtualMachine
from orchestrator.models.zones import Host, Zone

__all__ = ["ComputeProfile", "Host", "Image", "StorageProfile", "Usage", "Vdc", "VirtualMachine", "Zone"]
