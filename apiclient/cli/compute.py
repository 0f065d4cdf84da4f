"""``flexplane vdcs``, ``vms``, ``snapshots`` and ``tasks``: the VDCs one may act in, their VMs, the VMs'
snapshots, and the Proxmox tasks that change them. A VM is named by its name or its id wherever one is
asked for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from apiclient.cli.output import Column, Output, OutputOption, WaitOption, answered, follow, group
from apiclient.cli.session import session_of
from apiclient.client import FlexPlane
from apiclient.errors import NotFound
from apiclient.generated.input_types import CreateVirtualMachineInput, VirtualMachineFilter

VDC_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("ZONES", "zones"),
    ("ORGANIZATION", "organization"),
]
VM_COLUMNS: list[Column] = [
    ("NAME", "name"),
    ("ID", "id"),
    ("STATUS", "status"),
    ("ZONE", "zone"),
    ("HOST", "host"),
    ("PROFILE", "computeProfile"),
    ("IMAGE", "image"),
]
TASK_COLUMNS: list[Column] = [("TASK", "id"), ("TITLE", "title"), ("STATUS", "status"), ("RESULT", "result")]
SNAPSHOT_COLUMNS: list[Column] = [
    ("NAME", "name"),
    ("TAKEN", "takenAt"),
    ("MEMORY", "includesMemory"),
    ("PARENT", "parent"),
    ("CURRENT", "current"),
    ("DESCRIPTION", "description"),
]

vdcs = group("The VDCs you may act in.")
vms = group("Virtual machines of the VDC.")
snapshots = group("A VM's snapshots (Proxmox's).")
tasks = group("The Proxmox tasks that change the VDC's VMs.")

VmArgument = Annotated[str, typer.Argument(help="the VM's name (in the VDC) or id")]
SnapshotArgument = Annotated[str, typer.Argument(help="the snapshot's name")]


@vdcs.command("list", epilog="Example: `flexplane vdcs list -o yaml`.")
def list_vdcs(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The VDCs you are a member of, with their quotas and usage (-o json or yaml)."""
    session = session_of(ctx)
    session.show(session.api().vdcs().vdcs, output, VDC_COLUMNS)


def vm_id(api: FlexPlane, ref: str) -> str:
    """The id of the VM named ``ref`` in the VDC, else ``ref`` itself (an id: the API says if it is none)."""
    by_name = VirtualMachineFilter.model_validate({"nameContains": ref})
    named = [vm.id for vm in api.all_virtual_machines(by_name) if vm.name == ref]
    if len(named) > 1:
        raise typer.BadParameter(f"{len(named)} VMs are named {ref}: give the id ({', '.join(named)})")
    return named[0] if named else ref


def the_vm(api: FlexPlane, ref: str) -> Any:
    found = api.virtual_machine(vm_id(api, ref)).virtual_machine
    if found is None:
        raise NotFound(f"no VM {ref} in the VDC")
    return found


@vms.command(
    "list",
    epilog="Examples: `flexplane vms list`, `flexplane vms list --status running -o json | jq '.[].name'`.",
)
def list_vms(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="only VMs in this state (running, stopped)")] = None,
    zone: Annotated[str | None, typer.Option(help="only VMs of this zone")] = None,
    search: Annotated[str | None, typer.Option(help="a part of the name, an address, a status, ...")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """The VDC's VMs by name, every page of them."""
    session = session_of(ctx)
    only = VirtualMachineFilter.model_validate({"status": status, "zone": zone, "search": search})
    session.show(list(session.api().all_virtual_machines(only)), output, VM_COLUMNS)


@vms.command("show", epilog="Example: `flexplane vms show web-3 -o json | jq .ipAddresses`.")
def show_vm(ctx: typer.Context, vm: VmArgument, output: OutputOption = Output.TABLE) -> None:
    """One VM: its size, where it runs, its addresses, NICs and security groups."""
    session = session_of(ctx)
    session.show(the_vm(session.api(), vm), output, VM_COLUMNS)


@vms.command(
    "create",
    epilog=(
        "Example: `flexplane vms create web-3 --compute-profile small --storage-profile standard "
        '--image debian-12 --ssh-key "$(cat ~/.ssh/id_ed25519.pub)" --wait`.'
    ),
)
def create_vm(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="a DNS label: lowercase letters, digits, hyphens")],
    compute_profile: Annotated[
        str, typer.Option("--compute-profile", "-c", help="a compute profile the VDC allows")
    ],
    storage_profile: Annotated[
        str, typer.Option("--storage-profile", "-s", help="a storage profile the VDC allows")
    ],
    image: Annotated[str, typer.Option("--image", "-i", help="an image the VDC allows")],
    disk_gb: Annotated[int | None, typer.Option(help="the boot disk's size (default: the profile's)")] = None,
    zone: Annotated[str | None, typer.Option(help="a zone of the VDC (default: placement chooses)")] = None,
    ssh_key: Annotated[list[str] | None, typer.Option(help="an OpenSSH public key (repeatable)")] = None,
    network: Annotated[
        list[str] | None, typer.Option(help="a network for a NIC, NETWORK or NETWORK=ADDRESS (repeatable)")
    ] = None,
    security_group: Annotated[list[str] | None, typer.Option(help="a security group (repeatable)")] = None,
    user_data: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="cloud-init data to merge in")
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="retrying with it never makes a second VM")
    ] = None,
    wait: WaitOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Create a VM; with --wait, follow its creation to the end and show it as it then is."""
    session = session_of(ctx)
    api = session.api()
    spec: dict[str, Any] = {
        "name": name,
        "computeProfile": compute_profile,
        "storageProfile": storage_profile,
        "image": image,
        "diskGb": disk_gb,
        "zone": zone,
        "sshKeys": ssh_key or None,
        "securityGroups": security_group or None,
        "userData": user_data.read_text(encoding="utf-8") if user_data else None,
        "idempotencyKey": idempotency_key,
    }
    if network:
        spec["networks"] = [nic(text) for text in network]
    made = answered(
        api.create_virtual_machine(CreateVirtualMachineInput.model_validate(spec)).create_virtual_machine
    )
    assert made.virtual_machine is not None  # a payload without errors carries the VM
    if wait:
        follow(api, made.task, session.err)
        session.show(the_vm(api, made.virtual_machine.id), output, VM_COLUMNS)
    else:
        session.show(made.virtual_machine, output, VM_COLUMNS)


def nic(text: str) -> dict[str, str]:
    network, _, address = text.partition("=")
    return {"network": network, "ipAddress": address} if address else {"network": network}


def vm_task(ctx: typer.Context, wait: bool, output: Output, mutate: Callable[[FlexPlane], Any]) -> None:
    """A VM mutation (``mutate`` sends it and picks its payload) whose answer is a task: followed to its end
    with --wait, shown either way. Every command that changes a VM's state reads the same from here on."""
    session = session_of(ctx)
    api = session.api()
    task = answered(mutate(api)).task
    if wait:
        task = follow(api, task, session.err)
    session.show(task, output, TASK_COLUMNS)


@vms.command("start", epilog="Example: `flexplane vms start web-3 --wait`.")
def start_vm(
    ctx: typer.Context, vm: VmArgument, wait: WaitOption = False, output: OutputOption = Output.TABLE
) -> None:
    """Start a VM."""
    vm_task(ctx, wait, output, lambda api: api.start_virtual_machine(vm_id(api, vm)).start_virtual_machine)


@vms.command(
    "stop", epilog="Example: `flexplane vms stop web-3 --wait` (a hard stop; the guest is not asked)."
)
def stop_vm(
    ctx: typer.Context, vm: VmArgument, wait: WaitOption = False, output: OutputOption = Output.TABLE
) -> None:
    """Stop a VM at once (as pulling its plug)."""
    vm_task(ctx, wait, output, lambda api: api.stop_virtual_machine(vm_id(api, vm)).stop_virtual_machine)


@vms.command("delete", epilog="Example: `flexplane vms delete web-3 --wait`.")
def delete_vm(
    ctx: typer.Context, vm: VmArgument, wait: WaitOption = False, output: OutputOption = Output.TABLE
) -> None:
    """Delete a VM and its disks."""
    vm_task(ctx, wait, output, lambda api: api.delete_virtual_machine(vm_id(api, vm)).delete_virtual_machine)


@snapshots.command("list", epilog="Example: `flexplane snapshots list web-3`.")
def list_snapshots(ctx: typer.Context, vm: VmArgument, output: OutputOption = Output.TABLE) -> None:
    """A VM's snapshots, oldest first."""
    session = session_of(ctx)
    api = session.api()
    session.show(api.snapshots(vm_id(api, vm)).snapshots, output, SNAPSHOT_COLUMNS)


@snapshots.command(
    "create", epilog="Example: `flexplane snapshots create web-3 before-upgrade --memory --wait`."
)
def create_snapshot(
    ctx: typer.Context,
    vm: VmArgument,
    name: SnapshotArgument,
    description: Annotated[str | None, typer.Option(help="what it is for")] = None,
    memory: Annotated[bool, typer.Option("--memory", help="with a running VM's memory")] = False,
    wait: WaitOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Take a snapshot of a VM's disks and configuration (and memory)."""

    def take(api: FlexPlane) -> Any:
        return api.create_snapshot(
            vm_id(api, vm), name, description=description, include_memory=memory
        ).create_snapshot

    vm_task(ctx, wait, output, take)


@snapshots.command(
    "rollback", epilog="Example: `flexplane snapshots rollback web-3 before-upgrade --start --wait`."
)
def rollback_snapshot(
    ctx: typer.Context,
    vm: VmArgument,
    name: SnapshotArgument,
    start: Annotated[
        bool, typer.Option("--start", help="start the VM after (a snapshot without memory)")
    ] = False,
    wait: WaitOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Roll a VM back to a snapshot (a running VM is stopped first)."""

    def roll_back(api: FlexPlane) -> Any:
        return api.rollback_snapshot(vm_id(api, vm), name, start=start).rollback_snapshot

    vm_task(ctx, wait, output, roll_back)


@snapshots.command("delete", epilog="Example: `flexplane snapshots delete web-3 before-upgrade --wait`.")
def delete_snapshot(
    ctx: typer.Context,
    vm: VmArgument,
    name: SnapshotArgument,
    wait: WaitOption = False,
    output: OutputOption = Output.TABLE,
) -> None:
    """Delete a snapshot; the VM as it is does not change."""
    vm_task(ctx, wait, output, lambda api: api.delete_snapshot(vm_id(api, vm), name).delete_snapshot)


TaskArgument = Annotated[str, typer.Argument(help="the task's id (a mutation's answer, or tasks list)")]


@tasks.command("list", epilog="Example: `flexplane tasks list --vm web-3`.")
def list_tasks(
    ctx: typer.Context,
    vm: Annotated[str | None, typer.Option(help="only this VM's (its name or id)")] = None,
    last: Annotated[int, typer.Option(help="how many, newest first")] = 20,
    output: OutputOption = Output.TABLE,
) -> None:
    """The latest tasks of the VDC's VMs (or one VM's), newest first."""
    session = session_of(ctx)
    api = session.api()
    session.show(api.tasks(first=last, vm=vm_id(api, vm) if vm else None).tasks, output, TASK_COLUMNS)


@tasks.command("show", epilog="Example: `flexplane tasks show UPID:pve1:... -o json | jq -r '.log[]'`.")
def show_task(ctx: typer.Context, task: TaskArgument, output: OutputOption = Output.TABLE) -> None:
    """A task as it is now, with Proxmox's log."""
    session = session_of(ctx)
    found = session.api().task(task).task
    if found is None:
        raise NotFound(f"no task {task}")
    session.show(found, output, TASK_COLUMNS)


@tasks.command("wait", epilog="Example: `flexplane tasks wait UPID:pve1:... || echo failed`.")
def wait_task(ctx: typer.Context, task: TaskArgument, output: OutputOption = Output.TABLE) -> None:
    """Follow a task to its end with a progress bar: exit 0 if it succeeded, 5 if it failed."""
    session = session_of(ctx)
    api = session.api()
    found = api.task(task).task
    if found is None:
        raise NotFound(f"no task {task}")
    session.show(follow(api, found, session.err), output, TASK_COLUMNS)
