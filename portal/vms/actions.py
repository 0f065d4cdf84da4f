"""What the VM pages let a user do, and the GraphQL mutation behind each action.

Everything the portal can do, the API can do (docs/architecture.md): each action here calls the same
service function as its mutation's resolver, and :data:`MUTATIONS` names that mutation so that a
test can check the schema still offers it. A destructive action asks for a confirmation first.
:func:`call` is that service call, for a VM's page and for the list's actions on several VMs alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.errors import Conflict, NotFound, QuotaExceeded, Unavailable, UpstreamFailure
from orchestrator.services import vms
from orchestrator.services.context import Context
from orchestrator.services.vms import Outcome

# What an action (a snapshot's too) may fail with, leaving the VM as it was: said on the VM's page, with
# Proxmox's task when one failed (a VM that does not exist is the 404 page).
FAILURES = (Conflict, QuotaExceeded, Unavailable, UpstreamFailure)


@dataclass(frozen=True)
class VmAction:
    """One thing a user can do to a VM from its page."""

    name: str
    label: str
    mutation: str
    # Asks "are you sure?" before it runs: it powers the VM off hard, or loses data.
    destructive: bool
    # Said on the confirmation page and in the button's accessible description.
    explanation: str


CREATE_MUTATION = "createVirtualMachine"

ACTIONS: dict[str, VmAction] = {
    action.name: action
    for action in (
        VmAction(
            "start", "Start", "startVirtualMachine", False, "Power the VM on; a running VM is left as it is."
        ),
        VmAction(
            "shutdown",
            "Shut down",
            "shutdownVirtualMachine",
            False,
            "Ask the guest OS to power off; the VM keeps running if it does not within the timeout.",
        ),
        VmAction("reboot", "Reboot", "rebootVirtualMachine", False, "Restart the VM through its guest OS."),
        VmAction(
            "stop",
            "Stop",
            "stopVirtualMachine",
            True,
            "Power the VM off at once, like pulling its plug: what the guest OS has not written is lost.",
        ),
        VmAction(
            "resize",
            "Resize",
            "resizeVirtualMachine",
            False,
            "Move the VM to another compute profile (it must be stopped) and/or grow its disk; disks "
            "never shrink.",
        ),
        VmAction(
            "delete",
            "Delete",
            "deleteVirtualMachine",
            True,
            "Stop the VM and destroy it with its disks. This cannot be undone.",
        ),
    )
}

# What the VM list offers for the VMs ticked on it (and from a VM's row: start, and stop, confirmed first).
BULK_ACTIONS = ("start", "stop", "delete")


def call(ctx: Context, action: VmAction, ident: str, timeout: int | None = None) -> Outcome:
    """The service call of ``action`` on VM ``ident``: the one its GraphQL mutation's resolver makes
    (``timeout``: a shutdown's, in seconds; None for the default)."""
    if action.name == "start":
        return vms.start_vm(ctx, ident)
    if action.name == "stop":
        return vms.stop_vm(ctx, ident)
    if action.name == "shutdown":
        return vms.shutdown_vm(ctx, ident, timeout)
    if action.name == "reboot":
        return vms.reboot_vm(ctx, ident)
    if action.name == "delete":
        return vms.delete_vm(ctx, ident)
    raise NotFound("action", action.name)


# The snapshot actions of a VM's page (portal.vms.snapshots) -> their mutations.
SNAPSHOT_MUTATIONS: dict[str, str] = {
    "snapshot-create": "createSnapshot",
    "snapshot-rollback": "rollbackSnapshot",
    "snapshot-delete": "deleteSnapshot",
}

# Every portal action on VMs -> the GraphQL mutation that does the same (read by the parity test).
MUTATIONS: dict[str, str] = (
    {"create": CREATE_MUTATION}
    | {name: action.mutation for name, action in ACTIONS.items()}
    | SNAPSHOT_MUTATIONS
)
