"""Workers against the VDC's quota: counted as the VMs they become, before they are made.

A cluster's workers become VMs of its VDC (the infrastructure provider makes them through the VM create
path, tagged with the VDC), so once made they count as any VM does. Before that they count too: under
the VDC's lock, what the VDC uses is its VMs now (every zone, read now, as a VM create reads them),
plus, for every MachineDeployment of its namespace, its replicas not made into VMs yet at their
profile's size. So two creates (or scales) racing for the last room never both get it, whatever the
order in which the providers then make the VMs: the lock serialises the checks, and each check sees
the MachineDeployments the other wrote.

A worker VM is known as its Machine's by name (the contract: the VM's name is the Machine's).
Reads, under the lock: the VDC's zones' ``/cluster/resources`` (one per zone) and three lists of its
namespace (MachineDeployments, ProxmoxMachineTemplates, Machines; only the first when it has none).
A VM create or resize counts the workers not made yet too (``reserved_for_clusters``): the room a
cluster was given is not taken by the VMs made after it.

Control planes count too, for as long as they run: they are pods on the management cluster, which every
tenant shares, so each replica counts against its VDC's quota (and so its organization's allowance) as
``CONTROL_PLANE_REPLICA``, what its pods ask of the management cluster rounded up: the API server,
controller manager, scheduler and Konnectivity server request 0.42 CPU and 736 MiB, its etcd member
0.1 CPU and 256 MiB (providers/controlplane/render.py, etcd.py). A cluster of 3 replicas takes 3 vCPUs
and 3 GiB of its VDC's quota beside its workers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from orchestrator.models import ComputeProfile, Usage, Vdc
from orchestrator.models.clusters import (
    DEPLOYMENT_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    MACHINE,
    MACHINE_DEPLOYMENT,
    PROXMOX_MACHINE_TEMPLATE,
    KubeObject,
    namespace_of,
)
from orchestrator.models.vms import vdc_in
from orchestrator.services import catalog
from orchestrator.services.clusters.reads import read, templates_by_name
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import ClusterResources

# What one control-plane replica counts for in its VDC's quota (see the module's docstring).
CONTROL_PLANE_REPLICA = Usage(vcpus=1, memory_mib=1024)


def worker(vcpus: int, memory_mib: int, disk_gb: int, count: int = 1) -> Usage:
    """What ``count`` workers of a size count for."""
    return Usage(vcpus=vcpus * count, memory_mib=memory_mib * count, disk_gb=disk_gb * count, vms=count)


def control_plane(replicas: int) -> Usage:
    """What a control plane of ``replicas`` counts for."""
    each = CONTROL_PLANE_REPLICA
    return Usage(vcpus=each.vcpus * replicas, memory_mib=each.memory_mib * replicas)


def control_planes(planes: Iterable[KubeObject]) -> Usage:
    """What the control planes count for (those being deleted no longer; pure)."""
    total = Usage()
    for plane in planes:
        replicas = plane.spec.get("replicas")
        if not plane.deleting and isinstance(replicas, int):
            total = total + control_plane(replicas)
    return total


def size_of(template: KubeObject | None, profiles: Mapping[str, ComputeProfile]) -> Usage:
    spec = (template.spec.get("template") or {}).get("spec") or {} if template else {}
    profile = profiles.get(str(spec.get("computeProfile") or ""))
    disk = spec.get("diskGb")
    if profile is None:
        return Usage(vms=1)  # a profile gone from the catalog: no new VM can be made of it
    return worker(profile.vcpus, profile.memory_mib, disk if isinstance(disk, int) else 0)


def planned(
    deployments: Iterable[KubeObject],
    templates: Mapping[str, KubeObject],
    machines: Iterable[KubeObject],
    vm_names: set[str],
    profiles: Mapping[str, ComputeProfile],
) -> Usage:
    """The workers the MachineDeployments ask for that are not VMs yet, at their sizes (pure)."""
    made: dict[str, int] = {}
    for machine in machines:
        deployment = machine.labels.get(DEPLOYMENT_NAME_LABEL, "")
        if machine.name in vm_names:
            made[deployment] = made.get(deployment, 0) + 1
    total = Usage()
    for md in deployments:
        if md.deleting:
            continue
        replicas = md.spec.get("replicas")
        count = replicas if isinstance(replicas, int) else 0
        missing = max(0, count - made.get(md.name, 0))
        if missing:
            template_name = str(
                ((md.spec.get("template") or {}).get("spec") or {}).get("infrastructureRef", {}).get("name")
                or ""
            )
            size = size_of(templates.get(template_name), profiles)
            for _ in range(missing):
                total = total + size
    return total


def reserved_for_clusters(
    ctx: Context, vdc: Vdc, zones: Mapping[str, ClusterResources], creating: str | None = None
) -> Usage:
    """What the VDC's clusters take of its quota beside its VMs (call under its lock, with its zones read
    now): their workers asked for and not VMs yet, and their control planes.

    ``creating``: the name of the VM being created, taken as made: a worker's own create counts it once,
    as the VM it asks for. One list when the VDC has no MachineDeployment (no cluster: every cluster has
    a node pool), five otherwise.
    """
    namespace = namespace_of(vdc.id)
    found = read(ctx, [namespace], kinds=(MACHINE_DEPLOYMENT,))
    deployments = found.of(MACHINE_DEPLOYMENT)
    if not deployments:
        return Usage()
    planes = control_planes(read(ctx, [namespace], kinds=(FLEX_CONTROL_PLANE,)).of(FLEX_CONTROL_PLANE))
    names = {
        guest.name for resources in zones.values() for guest in resources.vms if vdc_in(guest.tags) == vdc.id
    }
    if creating is not None:
        names.add(creating)
    templates = templates_by_name(read(ctx, [namespace], kinds=(PROXMOX_MACHINE_TEMPLATE,)))
    machines = ctx.clusterapi.list(MACHINE, namespace, DEPLOYMENT_NAME_LABEL)
    profiles = {p.name: p for p in catalog.objects(ctx, catalog.COMPUTE_PROFILE, ComputeProfile.from_spec)}
    return planned(deployments, templates, machines, names, profiles) + planes
