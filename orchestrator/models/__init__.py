"""View-adapters over live Proxmox and Kubernetes payloads.

These are unmanaged Django models (``Meta.managed = False``): typed objects built by
classmethods from what the neighbours answered, never queried through the ORM and never
saved. There is no database behind them.
"""

from orchestrator.models.catalog import ComputeProfile, Image, StorageProfile
from orchestrator.models.vdcs import Usage, Vdc
from orchestrator.models.vms import VirtualMachine
from orchestrator.models.zones import Host, Zone

__all__ = ["ComputeProfile", "Host", "Image", "StorageProfile", "Usage", "Vdc", "VirtualMachine", "Zone"]
