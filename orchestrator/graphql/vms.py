"""Virtual machines: the listing, one VM, and every mutation of a VM's life."""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.errors import FlexPlaneError
from orchestrator.graphql.core import VDC_MEMBER, VM_MEMBER, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.fields import attr
from orchestrator.graphql.partial import report_partial
from orchestrator.graphql.tasks import Task
from orchestrator.models.networks import Nic
from orchestrator.models.security_groups import groups_in
from orchestrator.models.vms import VirtualMachine as VirtualMachineModel
from orchestrator.services import vms
from orchestrator.services.context import Context
from orchestrator.services.networks.attach import vm_nics
from orchestrator.services.networks.nics import NicRequest
from orchestrator.services.placement import NoCapacity
from orchestrator.services.placement import Placement as PlacementDecision
from orchestrator.services.tasks import failed_task
from orchestrator.services.vms import Created, CreateVm, Outcome, Page, VmFilter
from orchestrator.services.vms.listing import smbios_uuid

VirtualMachineErrorCode, VirtualMachineError = error_types("VirtualMachine", "QUOTA_EXCEEDED", "NO_CAPACITY")


class VirtualMachine(graphene.ObjectType):
    """A VM of a VDC, live from Proxmox."""

    id = graphene.ID(required=True, description="Global id: <zone>/<vmid>.")
    name = graphene.String(required=True)
    status = graphene.String(
        required=True,
        description="Proxmox's status: running, stopped, unknown (host offline); deleted after "
        "deleteVirtualMachine.",
    )
    zone = graphene.String(required=True)
    host = graphene.String(required=True, description="The host it runs on (its Proxmox node).")
    vdc = graphene.String(required=True)
    cores = graphene.Int(required=True, description="vCPUs.")
    memory_mb = graphene.Int(required=True, description="Memory in MiB.")
    disk_gb = graphene.Float(required=True, description="Size of the boot disk in GiB.")
    compute_profile = graphene.String(description="The compute profile it was made from or resized to.")
    storage_profile = graphene.String(description="The storage profile of its disk.")
    image = graphene.String(description="The image it was made from.")
    lock = graphene.String(description="Proxmox's lock on it (clone, backup, migrate, ...), if any.")
    ip_addresses = graphene.List(
        graphene.NonNull(graphene.String),
        description="Its addresses as its guest agent reports them. Read for virtualMachine(id) only, when "
        "the VM runs a guest agent; null in listings and when unknown.",
    )
    nics = graphene.List(
        graphene.NonNull("orchestrator.graphql.networks.Nic"),
        description="Its network cards, with their network, MAC and address: read from the VM's config (one "
        "Proxmox call per VM, so ask for it on one VM, not in a long listing).",
    )

    smbios_uuid = graphene.String(
        description="Its SMBIOS uuid (smbios1), lowercase: a Kubernetes node's provider ID is "
        "proxmox://<uuid>. Read from the VM's config (one Proxmox call per VM, as nics); null when unset.",
    )

    resolve_compute_profile = attr("compute_profile", blank_is_null=True)
    resolve_storage_profile = attr("storage_profile", blank_is_null=True)
    resolve_image = attr("image", blank_is_null=True)
    resolve_lock = attr("lock", blank_is_null=True)

    security_groups = graphene.List(
        graphene.NonNull(graphene.String),
        description="The security groups it is in (its fp-sg-<group> tags; default when it has none). Null "
        "where its tags were not read: listings scoped to a few VDCs read their pools, which carry no tags.",
    )

    @staticmethod
    def resolve_security_groups(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> list[str] | None:
        return groups_in(vm.tags) if vm.tags else None

    @staticmethod
    @domain_errors
    def resolve_nics(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> list[Nic]:
        return vm_nics(flexplane(info), vm.id)

    @staticmethod
    @domain_errors
    def resolve_smbios_uuid(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> str | None:
        return smbios_uuid(flexplane(info), vm.id)


class VirtualMachineEdge(graphene.ObjectType):
    cursor = graphene.String(required=True)
    node = graphene.Field(VirtualMachine, required=True)


class PageInfo(graphene.ObjectType):
    has_next_page = graphene.Boolean(required=True)
    end_cursor = graphene.String()


class VirtualMachineConnection(graphene.ObjectType):
    edges = graphene.List(graphene.NonNull(VirtualMachineEdge), required=True)
    page_info = graphene.Field(PageInfo, required=True)

    @staticmethod
    def resolve_edges(page: Page, info: graphene.ResolveInfo) -> list[VirtualMachineEdge]:
        return [VirtualMachineEdge(cursor=c, node=vm) for c, vm in zip(page.cursors, page.items, strict=True)]

    @staticmethod
    def resolve_page_info(page: Page, info: graphene.ResolveInfo) -> PageInfo:
        return PageInfo(has_next_page=page.has_next, end_cursor=page.end_cursor)


class VirtualMachineFilter(graphene.InputObjectType):
    """Every condition given must hold."""

    status = graphene.String(description="Proxmox's status, e.g. running or stopped.")
    zone = graphene.String()
    name_contains = graphene.String(description="A part of the name, in any case.")
    search = graphene.String(
        description="A part of the name, an address, the status, the zone or the compute profile, in any "
        "case. The addresses and profiles are the VMs' tags: a scoped listing then reads each zone's "
        "/cluster/resources rather than the VDC's pools (one call per zone all the same)."
    )


class RejectedHost(graphene.ObjectType):
    host = graphene.String(required=True)
    reason = graphene.String(required=True)


class Placement(graphene.ObjectType):
    """Where placement put a new VM, why, and why not on the zone's other hosts."""

    zone = graphene.String(required=True)
    host = graphene.String(description="The chosen host; null when no host had room (NO_CAPACITY).")
    reasons = graphene.List(graphene.NonNull(graphene.String), required=True)
    rejected = graphene.List(graphene.NonNull(RejectedHost), required=True)


# ------------------------------------------------------------------------------------------ queries


class Query(graphene.ObjectType):
    virtual_machines = graphene.Field(
        VirtualMachineConnection,
        required=True,
        first=graphene.Int(description="Page size (default 50)."),
        after=graphene.String(description="The endCursor of the previous page."),
        filter=graphene.Argument(VirtualMachineFilter),
        description="VMs sorted by name. Scoped to the VDC named by the FlexPlane-VDC-ID header (its "
        "members and ADMIN); without it, the caller's VDCs (ADMIN: every VDC). Needs USER or "
        "ADMIN. One Proxmox call per zone; ipAddresses are not read. Zones that do not answer are "
        "left out, each with an UNAVAILABLE error.",
    )
    virtual_machine = graphene.Field(
        VirtualMachine,
        id=graphene.ID(required=True),
        description="One VM, live, with its IP addresses from its guest agent. Needs USER or ADMIN and "
        "membership of its VDC; another VDC's VM is NOT_FOUND, exactly like a missing one.",
    )

    @staticmethod
    @domain_errors
    def resolve_virtual_machines(
        root: None,
        info: graphene.ResolveInfo,
        first: int | None = None,
        after: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> Page:
        where = VmFilter(**(filter or {}))
        listed = vms.list_vms(flexplane(info), first=first, after=after, where=where, tags=bool(where.search))
        return report_partial(info, listed)

    @staticmethod
    @domain_errors
    def resolve_virtual_machine(root: None, info: graphene.ResolveInfo, id: str) -> VirtualMachineModel:
        return vms.get_vm(flexplane(info), id)


# ------------------------------------------------------------------------------------------ mutations


class NicInput(graphene.InputObjectType):
    network = graphene.String(
        required=True,
        description="A network of the VDC: its id (<zone>/<name>), or its name in the VM's zone.",
    )
    ip_address = graphene.String(description="Its address; default: the network's next free one.")


class CreateVirtualMachineInput(graphene.InputObjectType):
    name = graphene.String(required=True, description="A DNS label: lowercase letters, digits, hyphens.")
    compute_profile = graphene.String(required=True, description="A compute profile the VDC allows.")
    storage_profile = graphene.String(required=True, description="A storage profile the VDC allows.")
    image = graphene.String(required=True, description="An image the VDC allows.")
    disk_gb = graphene.Int(
        description="Boot disk size; default: the storage profile's, at least the image's."
    )
    zone = graphene.String(
        description="A zone the VDC allows; left out, placement chooses among them (see placement's reasons)."
    )
    ssh_keys = graphene.List(
        graphene.NonNull(graphene.String), description="OpenSSH public keys for the image's default user."
    )
    user_data = graphene.String(
        description="Cloud-init data merged in as vendor data (#cloud-config, a script, ...; at most 64 KiB)."
    )
    idempotency_key = graphene.String(
        description="Retrying with the same key returns the VM the first request made, never a second one."
    )
    security_groups = graphene.List(
        graphene.NonNull(graphene.String),
        description="The VDC's security groups its firewall follows; left out: default.",
    )
    networks = graphene.List(
        graphene.NonNull(NicInput),
        description="Its NICs, in order (net0, net1, ...), all in one zone. Left out or null: one NIC on the "
        "VDC's default network of the zone it goes to; an empty list: no NIC.",
    )


def _create_vm(ctx: Context, input: dict[str, Any]) -> Created:
    asked = input.get("networks")
    requests = None if asked is None else tuple(NicRequest(n["network"], n.get("ip_address")) for n in asked)
    return vms.create_vm(
        ctx,
        CreateVm(
            **{
                **input,
                "ssh_keys": tuple(input.get("ssh_keys") or ()),
                "networks": requests,
                "security_groups": tuple(groups) if (groups := input.get("security_groups")) else None,
            }
        ),
    )


def _resize_vm(ctx: Context, input: dict[str, Any]) -> Outcome:
    return vms.resize_vm(
        ctx, input["id"], compute_profile=input.get("compute_profile"), disk_gb=input.get("disk_gb")
    )


def _placement(decision: PlacementDecision | None) -> Placement | None:
    if decision is None:
        return None
    return Placement(
        zone=decision.zone,
        host=decision.host,
        reasons=decision.reasons,
        rejected=[RejectedHost(host=r.host, reason=r.reason) for r in decision.rejected],
    )


class VirtualMachineMutation(ServiceMutation):
    """A mutation of one VM: the VM as it is after, and the Proxmox task that did it."""

    class Meta:
        abstract = True

    shared = Shared(VM_MEMBER, VirtualMachineError)

    virtual_machine = graphene.Field(VirtualMachine)
    task = graphene.Field(
        Task, description="The Proxmox task (FAILED with an error); null when there was nothing to do."
    )

    @classmethod
    def answer(cls, result: Outcome | Created) -> dict[str, Any]:
        return {"virtual_machine": result.vm, "task": result.task}

    @classmethod
    def failed(cls, exc: FlexPlaneError) -> dict[str, Any]:
        return {"task": failed_task(exc)}


class CreateVirtualMachine(VirtualMachineMutation):
    class Meta:
        role = VDC_MEMBER
        service = _create_vm
        description = (
            "Create a VM from an image, on the host placement chooses (in the zone named, or in the VDC's "
            "zone with the most room), and start it. An earlier create's VM of the same idempotency key, or "
            "of the same name and spec in the VDC, is returned instead of a second one (a retry); its task "
            "is then null. The same name with another spec is INVALID on name. Errors: INVALID (naming the "
            "field), QUOTA_EXCEEDED, NO_CAPACITY, "
            "CONFLICT, UNAVAILABLE, UPSTREAM_FAILURE (with Proxmox's message, and the task that failed, if "
            "one did); a VM that failed half-way is removed again."
        )

    class Arguments:
        input = CreateVirtualMachineInput(required=True)

    placement = graphene.Field(Placement, description="The decision; with NO_CAPACITY, why no host fitted.")

    @classmethod
    def answer(cls, result: Outcome | Created) -> dict[str, Any]:
        assert isinstance(result, Created)
        return {**super().answer(result), "placement": _placement(result.placement)}

    @classmethod
    def failed(cls, exc: FlexPlaneError) -> dict[str, Any]:
        if isinstance(exc, NoCapacity):
            return {"placement": _placement(exc.placement)}
        return super().failed(exc)


_ERRORS = (
    "Errors: NOT_FOUND, CONFLICT (the VM is locked by another operation), UNAVAILABLE (its host is "
    "offline), UPSTREAM_FAILURE (with Proxmox's message, e.g. its TASK ERROR)."
)


class StartVirtualMachine(VirtualMachineMutation):
    class Meta:
        service = vms.start_vm
        description = f"Start a stopped VM (a running one is left as it is). {_ERRORS}"

    class Arguments:
        id = graphene.ID(required=True)


class StopVirtualMachine(VirtualMachineMutation):
    class Meta:
        service = vms.stop_vm
        description = f"Power a VM off at once (a stopped one is left as it is). {_ERRORS}"

    class Arguments:
        id = graphene.ID(required=True)


class ShutdownVirtualMachine(VirtualMachineMutation):
    class Meta:
        service = vms.shutdown_vm
        description = (
            "Ask the guest OS to shut down; Proxmox gives up after `timeout` seconds (default 60) and the VM "
            "keeps running. The answer waits up to 30 s: a longer shutdown's task is returned RUNNING. "
            f"{_ERRORS}"
        )

    class Arguments:
        id = graphene.ID(required=True)
        timeout = graphene.Int(description="Seconds, 1 to 3600 (default 60).")


class RebootVirtualMachine(VirtualMachineMutation):
    class Meta:
        service = vms.reboot_vm
        description = f"Reboot a running VM through its guest OS (CONFLICT when it is not running). {_ERRORS}"

    class Arguments:
        id = graphene.ID(required=True)


class DeleteVirtualMachine(VirtualMachineMutation):
    class Meta:
        service = vms.delete_vm
        description = (
            "Stop a VM and destroy it with its disks; it leaves its VDC's pool and nothing remains. The "
            f"payload's virtualMachine is its last state, with status deleted. {_ERRORS}"
        )

    class Arguments:
        id = graphene.ID(required=True)


class ResizeVirtualMachineInput(graphene.InputObjectType):
    id = graphene.ID(required=True)
    compute_profile = graphene.String(
        description="Another compute profile the VDC allows (the VM must be stopped)."
    )
    disk_gb = graphene.Int(description="A bigger boot disk, in GiB: disks grow, never shrink (INVALID).")


class ResizeVirtualMachine(VirtualMachineMutation):
    class Meta:
        service = _resize_vm
        description = (
            "Move a VM to another compute profile (it must be stopped: CONFLICT otherwise) and/or grow its "
            f"disk, within the VDC's quota (QUOTA_EXCEEDED saying by how much). {_ERRORS}"
        )

    class Arguments:
        input = ResizeVirtualMachineInput(required=True)


class Mutation(graphene.ObjectType):
    create_virtual_machine = CreateVirtualMachine.Field()
    start_virtual_machine = StartVirtualMachine.Field()
    stop_virtual_machine = StopVirtualMachine.Field()
    shutdown_virtual_machine = ShutdownVirtualMachine.Field()
    reboot_virtual_machine = RebootVirtualMachine.Field()
    delete_virtual_machine = DeleteVirtualMachine.Field()
    resize_virtual_machine = ResizeVirtualMachine.Field()
