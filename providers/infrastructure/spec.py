"""The infrastructure kinds' specs and statuses, pure: parsed from the objects as the API answers them,
and the status fields the contract names (Cluster API v1beta2 InfraCluster and InfraMachine)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.sources.kube_objects import CLUSTER_NAME_LABEL
from providers.common.objects import Body, meta, spec, status

PROVIDER_ID_PREFIX = "proxmox://"
_UUID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")
FINALIZER = "infrastructure.flexplane.io/finalizer"
PAUSED_MESSAGE = "paused (its cluster.x-k8s.io/paused annotation, or its Cluster's spec.paused)"
# How soon a paused object is looked at again: unpausing changes no spec of it, so no event wakes it.
PAUSED_RECHECK = 5.0

# The Ready condition's reasons.
PROVISIONED = "Provisioned"
WAITING_FOR_BOOTSTRAP_DATA = "WaitingForBootstrapData"
WAITING_FOR_CLUSTER = "WaitingForCluster"
PROVISIONING = "Provisioning"
PROVISIONING_FAILED = "ProvisioningFailed"
DELETING = "Deleting"
VDC_MISMATCH = "VdcMismatch"
VDC_NOT_FOUND = "VdcNotFound"
NETWORK_NOT_FOUND = "NetworkNotFound"
# A machine restored with a providerID whose VM is not in its VDC any more.
VM_NOT_FOUND = "VmNotFound"


class SpecError(ValueError):
    """A spec that cannot work as it is: ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _string(values: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = values.get(key)
    if value is None or value == "":
        if required:
            raise SpecError(f"{where}.{key}", "is required")
        return None
    if not isinstance(value, str):
        raise SpecError(f"{where}.{key}", f"must be a string, not {type(value).__name__}")
    return value


@dataclass(frozen=True)
class ClusterSpec:
    vdc: str
    network: str

    @classmethod
    def parse(cls, obj: Body) -> ClusterSpec:
        values = spec(obj)
        return cls(str(_string(values, "vdc", "spec")), str(_string(values, "network", "spec")))


@dataclass(frozen=True)
class MachineSpec:
    """A ProxmoxMachine's spec (a ProxmoxMachineTemplate's ``spec.template.spec`` is the same)."""

    compute_profile: str
    storage_profile: str
    image: str
    disk_gb: int | None = None
    network: str | None = None
    provider_id: str | None = None

    @classmethod
    def parse(cls, obj: Body) -> MachineSpec:
        values = spec(obj)
        disk = values.get("diskGb")
        if disk is not None and (isinstance(disk, bool) or not isinstance(disk, int) or disk < 1):
            raise SpecError("spec.diskGb", "must be a whole number of GiB, at least 1")
        return cls(
            compute_profile=str(_string(values, "computeProfile", "spec")),
            storage_profile=str(_string(values, "storageProfile", "spec")),
            image=str(_string(values, "image", "spec")),
            disk_gb=disk,
            network=_string(values, "network", "spec", required=False),
            provider_id=_string(values, "providerID", "spec", required=False),
        )


def provider_id(smbios_uuid: str) -> str:
    """``proxmox://<uuid>``: the id the kubelet reports (``proxmox://{{ ds.meta_data.instance_id }}``)."""
    uuid = smbios_uuid.lower()
    if not _UUID.fullmatch(uuid):
        raise ValueError(f"{smbios_uuid!r} is not an SMBIOS uuid")
    return PROVIDER_ID_PREFIX + uuid


def uuid_of(provider: str) -> str | None:
    """The SMBIOS uuid a provider ID names, or None for one that is not ours."""
    uuid = provider.removeprefix(PROVIDER_ID_PREFIX)
    return uuid if uuid != provider and _UUID.fullmatch(uuid) else None


def machine_addresses(hostname: str, addresses: Iterable[str]) -> list[dict[str, str]]:
    """``status.addresses``: each of the VM's addresses on its networks, then its hostname."""
    found = [{"type": "InternalIP", "address": a} for a in dict.fromkeys(addresses)]
    return [*found, {"type": "Hostname", "address": hostname}]


def failure_domains(zones: Iterable[str]) -> list[dict[str, Any]]:
    """``status.failureDomains``: one per zone of the VDC; none of them for control planes (they are pods)."""
    return [{"name": zone, "controlPlane": False} for zone in zones]


def machine_status(
    hostname: str, addresses: Iterable[str], zone: str, node: str, vmid: int
) -> dict[str, Any]:
    """A provisioned ProxmoxMachine's status fields (its conditions aside)."""
    return {
        "initialization": {"provisioned": True},
        "addresses": machine_addresses(hostname, addresses),
        "zone": zone,
        "node": node,
        "vmid": vmid,
    }


def cluster_status(zones: Iterable[str]) -> dict[str, Any]:
    """A provisioned ProxmoxCluster's status fields (its conditions aside)."""
    return {"initialization": {"provisioned": True}, "failureDomains": failure_domains(zones)}


def owner_machine_failure_domain(machine: Body) -> str | None:
    """The zone a Cluster API Machine asks for (``spec.failureDomain``), if any."""
    value = spec(machine).get("failureDomain")
    return value if isinstance(value, str) and value else None


def bootstrap_secret_name(machine: Body) -> str | None:
    """``Machine.spec.bootstrap.dataSecretName``, once the bootstrap provider has written it."""
    bootstrap = spec(machine).get("bootstrap")
    name = bootstrap.get("dataSecretName") if isinstance(bootstrap, Mapping) else None
    return name if isinstance(name, str) and name else None


def infrastructure_ref_name(cluster: Body, kind: str, group: str) -> str | None:
    """The name ``Cluster.spec.infrastructureRef`` gives, when it is a ``kind`` of ``group`` (v1beta2's
    ``{apiGroup, kind, name}``)."""
    ref = spec(cluster).get("infrastructureRef")
    if not isinstance(ref, Mapping) or ref.get("kind") != kind:
        return None
    api_group = ref.get("apiGroup") or str(ref.get("apiVersion", "")).rpartition("/")[0]
    name = ref.get("name")
    return name if api_group == group and isinstance(name, str) and name else None


def cluster_name(obj: Body, machine: Body | None = None) -> str | None:
    """The Cluster API cluster an object belongs to: the owner Machine's ``spec.clusterName``, else the
    ``cluster.x-k8s.io/cluster-name`` label."""
    if machine is not None:
        name = spec(machine).get("clusterName")
        if isinstance(name, str) and name:
            return name
    label = (meta(obj).get("labels") or {}).get(CLUSTER_NAME_LABEL)
    return label if isinstance(label, str) and label else None


def provisioned(obj: Body) -> bool:
    initialization = status(obj).get("initialization")
    return isinstance(initialization, Mapping) and initialization.get("provisioned") is True
