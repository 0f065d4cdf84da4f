"""Virtual machines: the listing, one VM, and every mutation of a VM's life."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import graphene

from orchestrator.errors import FlexPlaneError
from orchestrator.graphql.errors import domain_errors, error_code_enum, error_type, payload_errors
from orchestrator.graphql.partial import report_partial
from orchestrator.graphql.tasks import Task
from orchestrator.models.vms import VirtualMachine as VirtualMachineModel
from orchestrator.services import vms
from orchestrator.services.context import Context
from orchestrator.services.placement import NoCapacity
from orchestrator.services.placement import Placement as PlacementDecision
from orchestrator.services.tasks import failed_task
from orchestrator.services.vms import Created, CreateVm, Outcome, Page, VmFilter

VirtualMachineErrorCode = error_code_enum("VirtualMachineErrorCode", "QUOTA_EXCEEDED", "NO_CAPACITY")
VirtualMachineError = error_type("VirtualMachineError", VirtualMachineErrorCode)
_CODES = {member.name for member in VirtualMachineErrorCode._meta.enum}


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
    host = graphene.String(required=True, description="The Proxmox node it runs on.")
    node = graphene.String(required=True, description="The Proxmox node it runs on (as host).")
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

    @staticmethod
    def resolve_node(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> str:
        return vm.host

    @staticmethod
    def resolve_compute_profile(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> str | None:
        return vm.compute_profile or None

    @staticmethod
    def resolve_storage_profile(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> str | None:
        return vm.storage_profile or None

    @staticmethod
    def resolve_image(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> str | None:
        return vm.image or None

    @staticmethod
    def resolve_lock(vm: VirtualMachineModel, info: graphene.ResolveInfo) -> str | None:
        return vm.lock or None


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


class RejectedHost(graphene.ObjectType):
    host = graphene.String(required=True)
    reason = graphene.String(required=True)


class Placement(graphene.ObjectType):
    """Where placement put a new VM, why, and why not on the zone's other hosts."""

    zone = graphene.String(required=True)
    host = graphene.String(description="The chosen host; null when no host had room (NO_CAPACITY).")
    reasons = graphene.List(graphene.NonNull(graphene.String), required=True)
    rejected = graphene.List(graphene.NonNull(RejectedHost), required=True)


def _ctx(info: graphene.ResolveInfo) -> Context:
    ctx: Context = info.context.flexplane
    return ctx


def _errors(exc: FlexPlaneError) -> list[dict[str, Any]]:
    """The payload's errors; a code this domain's enum lacks is reported as an upstream failure."""
    errors = payload_errors(exc)
    for error in errors:
        if error["code"] not in _CODES:
            error["code"] = "UPSTREAM_FAILURE"
    return errors


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
        return report_partial(info, vms.list_vms(_ctx(info), first=first, after=after, where=where))

    @staticmethod
    @domain_errors
    def resolve_virtual_machine(root: None, info: graphene.ResolveInfo, id: str) -> VirtualMachineModel:
        return vms.get_vm(_ctx(info), id)


# ------------------------------------------------------------------------------------------ mutations


class CreateVirtualMachineInput(graphene.InputObjectType):
    name = graphene.String(required=True, description="A DNS label: lowercase letters, digits, hyphens.")
    compute_profile = graphene.String(required=True, description="A compute profile the VDC allows.")
    storage_profile = graphene.String(required=True, description="A storage profile the VDC allows.")
    image = graphene.String(required=True, description="An image the VDC allows.")
    disk_gb = graphene.Int(
        description="Boot disk size; default: the storage profile's, at least the image's."
    )
    zone = graphene.String(description="A zone the VDC allows; may be left out when it allows only one.")
    ssh_keys = graphene.List(
        graphene.NonNull(graphene.String), description="OpenSSH public keys for the image's default user."
    )
    user_data = graphene.String(
        description="Cloud-init data merged in as vendor data (#cloud-config, a script, ...; at most 64 KiB)."
    )
    idempotency_key = graphene.String(
        description="Retrying with the same key returns the VM the first request made, never a second one."
    )


class CreateVirtualMachinePayload(graphene.ObjectType):
    virtual_machine = graphene.Field(VirtualMachine)
    task = graphene.Field(
        Task,
        description="The VM's start task; null when an earlier create's VM is returned. With an error: "
        "the task that failed, if one did.",
    )
    placement = graphene.Field(Placement, description="The decision; with NO_CAPACITY, why no host fitted.")
    errors = graphene.List(graphene.NonNull(VirtualMachineError), required=True)


class CreateVirtualMachine(graphene.Mutation):
    """Create a VM from an image, on the host placement chooses, and start it.

    Needs USER and membership of the VDC named by the FlexPlane-VDC-ID header (or ADMIN). An earlier
    create's VM of the same idempotency key, or of the same name in the VDC, is returned instead of a
    second one. Errors: INVALID (naming the field), QUOTA_EXCEEDED, NO_CAPACITY, CONFLICT, UNAVAILABLE,
    UPSTREAM_FAILURE (with Proxmox's message); a VM that failed half-way is removed again.
    """

    class Arguments:
        input = CreateVirtualMachineInput(required=True)

    Output = CreateVirtualMachinePayload

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, input: dict[str, Any]) -> CreateVirtualMachinePayload:
        spec = CreateVm(**{**input, "ssh_keys": tuple(input.get("ssh_keys") or ())})
        try:
            created: Created = vms.create_vm(_ctx(info), spec)
        except NoCapacity as exc:
            return CreateVirtualMachinePayload(errors=_errors(exc), placement=_placement(exc.placement))
        except FlexPlaneError as exc:
            return CreateVirtualMachinePayload(errors=_errors(exc), task=failed_task(exc))
        return CreateVirtualMachinePayload(
            virtual_machine=created.vm, task=created.task, placement=_placement(created.placement), errors=[]
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


def _action_payload(name: str) -> type[graphene.ObjectType]:
    return type(
        f"{name}Payload",
        (graphene.ObjectType,),
        {
            "__doc__": f"What {name[0].lower()}{name[1:]} did: the VM, its task, or why not.",
            "virtual_machine": graphene.Field(VirtualMachine),
            "task": graphene.Field(
                Task,
                description="The Proxmox task (FAILED with an error); null when there was nothing to do.",
            ),
            "errors": graphene.List(graphene.NonNull(VirtualMachineError), required=True),
        },
    )


def _act(payload: type[graphene.ObjectType], run: Callable[[], Outcome]) -> Any:
    try:
        outcome = run()
    except FlexPlaneError as exc:
        return payload(errors=_errors(exc), task=failed_task(exc))
    return payload(virtual_machine=outcome.vm, task=outcome.task, errors=[])


_ACCESS = (
    " Needs USER or ADMIN and membership of the VM's VDC (another VDC's VM is NOT_FOUND). Errors: "
    "NOT_FOUND, CONFLICT (the VM is locked by another operation), UNAVAILABLE (its host is offline), "
    "UPSTREAM_FAILURE (with Proxmox's message, e.g. its TASK ERROR)."
)

StartVirtualMachinePayload = _action_payload("StartVirtualMachine")
StopVirtualMachinePayload = _action_payload("StopVirtualMachine")
ShutdownVirtualMachinePayload = _action_payload("ShutdownVirtualMachine")
RebootVirtualMachinePayload = _action_payload("RebootVirtualMachine")
DeleteVirtualMachinePayload = _action_payload("DeleteVirtualMachine")
ResizeVirtualMachinePayload = _action_payload("ResizeVirtualMachine")


class StartVirtualMachine(graphene.Mutation):
    __doc__ = "Start a stopped VM (a running one is left as it is)." + _ACCESS

    class Arguments:
        id = graphene.ID(required=True)

    Output = StartVirtualMachinePayload

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, id: str) -> Any:
        return _act(StartVirtualMachinePayload, lambda: vms.start_vm(_ctx(info), id))


class StopVirtualMachine(graphene.Mutation):
    __doc__ = "Power a VM off at once (a stopped one is left as it is)." + _ACCESS

    class Arguments:
        id = graphene.ID(required=True)

    Output = StopVirtualMachinePayload

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, id: str) -> Any:
        return _act(StopVirtualMachinePayload, lambda: vms.stop_vm(_ctx(info), id))


class ShutdownVirtualMachine(graphene.Mutation):
    __doc__ = (
        "Ask the guest OS to shut down; Proxmox gives up after `timeout` seconds (default 60) and the VM "
        "keeps running. The answer waits up to 30 s: a longer shutdown's task is returned RUNNING." + _ACCESS
    )

    class Arguments:
        id = graphene.ID(required=True)
        timeout = graphene.Int(description="Seconds, 1 to 3600 (default 60).")

    Output = ShutdownVirtualMachinePayload

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, id: str, timeout: int | None = None) -> Any:
        return _act(ShutdownVirtualMachinePayload, lambda: vms.shutdown_vm(_ctx(info), id, timeout))


class RebootVirtualMachine(graphene.Mutation):
    __doc__ = "Reboot a running VM through its guest OS (CONFLICT when it is not running)." + _ACCESS

    class Arguments:
        id = graphene.ID(required=True)

    Output = RebootVirtualMachinePayload

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, id: str) -> Any:
        return _act(RebootVirtualMachinePayload, lambda: vms.reboot_vm(_ctx(info), id))


class DeleteVirtualMachine(graphene.Mutation):
    __doc__ = (
        "Stop a VM and destroy it with its disks; it leaves its VDC's pool and nothing remains. The "
        "payload's virtualMachine is its last state, with status deleted." + _ACCESS
    )

    class Arguments:
        id = graphene.ID(required=True)

    Output = DeleteVirtualMachinePayload

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, id: str) -> Any:
        return _act(DeleteVirtualMachinePayload, lambda: vms.delete_vm(_ctx(info), id))


class ResizeVirtualMachineInput(graphene.InputObjectType):
    id = graphene.ID(required=True)
    compute_profile = graphene.String(
        description="Another compute profile the VDC allows (the VM must be stopped)."
    )
    disk_gb = graphene.Int(description="A bigger boot disk, in GiB: disks grow, never shrink (INVALID).")


class ResizeVirtualMachine(graphene.Mutation):
    __doc__ = (
        "Move a VM to another compute profile (it must be stopped: CONFLICT otherwise) and/or grow its disk, "
        "within the VDC's quota (QUOTA_EXCEEDED saying by how much)." + _ACCESS
    )

    class Arguments:
        input = ResizeVirtualMachineInput(required=True)

    Output = ResizeVirtualMachinePayload

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, input: dict[str, Any]) -> Any:
        return _act(
            ResizeVirtualMachinePayload,
            lambda: vms.resize_vm(
                _ctx(info),
                input["id"],
                compute_profile=input.get("compute_profile"),
                disk_gb=input.get("disk_gb"),
            ),
        )


class Mutation(graphene.ObjectType):
    create_virtual_machine = CreateVirtualMachine.Field()
    start_virtual_machine = StartVirtualMachine.Field()
    stop_virtual_machine = StopVirtualMachine.Field()
    shutdown_virtual_machine = ShutdownVirtualMachine.Field()
    reboot_virtual_machine = RebootVirtualMachine.Field()
    delete_virtual_machine = DeleteVirtualMachine.Field()
    resize_virtual_machine = ResizeVirtualMachine.Field()
