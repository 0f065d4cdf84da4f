"""``flexplane volumes``: the VDC's volumes, disks that outlive VMs (docs/api.md, "Volumes"). Each change
answers once Proxmox's task ended: there is no task to wait for."""

from __future__ import annotations

from typing import Annotated

import typer

from apiclient.cli.output import Column, Output, OutputOption, answered, group
from apiclient.cli.session import session_of
from apiclient.errors import NotFound

VOLUME_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("SIZE GIB", "sizeGb"),
    ("STATUS", "status"),
    ("ATTACHED TO", "attachedTo"),
    ("ZONE", "zone"),
    ("HOST", "host"),
    ("PROFILE", "storageProfile"),
    ("SERIAL", "serial"),
]

volumes = group("The VDC's volumes: disks that outlive VMs, attached to one VM at a time.")

VolumeArgument = Annotated[str, typer.Argument(help="its id, <zone>/<vmid>")]


@volumes.command(
    "list", epilog="Example: `flexplane volumes list -o json | jq -r '.[] | select(.attachedTo)'`."
)
def list_volumes(ctx: typer.Context, output: OutputOption = Output.TABLE) -> None:
    """The VDC's volumes, by name."""
    session = session_of(ctx)
    session.show(session.api().volumes().volumes, output, VOLUME_COLUMNS)


@volumes.command("show", epilog="Example: `flexplane volumes show zone-a/117 -o yaml`.")
def show_volume(ctx: typer.Context, volume: VolumeArgument, output: OutputOption = Output.TABLE) -> None:
    """One volume."""
    session = session_of(ctx)
    found = session.api().volume(volume).volume
    if found is None:
        raise NotFound(f"volume {volume} not found")
    session.show(found, output, VOLUME_COLUMNS)


@volumes.command(
    "create",
    epilog="Example: `flexplane volumes create data --profile standard --size 20 --near zone-a/104`.",
)
def create_volume(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="a DNS label, unique among the VDC's volumes")],
    profile: Annotated[str, typer.Option(help="a storage profile the VDC allows")],
    size: Annotated[int, typer.Option(help="its size in GiB")],
    zone: Annotated[str | None, typer.Option(help="a zone of the VDC (may be left out with one)")] = None,
    near: Annotated[str | None, typer.Option(help="a VM to make it beside: its zone and host")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """Create a volume, counted in the VDC's disk quota (the same name and spec again: the one made
    before)."""
    session = session_of(ctx)
    made = answered(session.api().create_volume(name, profile, size, zone=zone, near=near).create_volume)
    session.show(made.volume, output, VOLUME_COLUMNS)


@volumes.command("attach", epilog="Example: `flexplane volumes attach zone-a/117 zone-a/104`.")
def attach_volume(
    ctx: typer.Context,
    volume: VolumeArgument,
    vm: Annotated[str, typer.Argument(help="the VM's id, <zone>/<vmid>: of the VDC, in the volume's zone")],
    output: OutputOption = Output.TABLE,
) -> None:
    """Attach a volume to a VM (hot-plugged into a running one, as its next SCSI disk)."""
    session = session_of(ctx)
    done = answered(session.api().attach_volume(volume, vm).attach_volume)
    session.show(done.volume, output, VOLUME_COLUMNS)


@volumes.command("detach", epilog="Example: `flexplane volumes detach zone-a/117`.")
def detach_volume(ctx: typer.Context, volume: VolumeArgument, output: OutputOption = Output.TABLE) -> None:
    """Detach a volume from its VM (unmount it in the guest first); its data stays."""
    session = session_of(ctx)
    done = answered(session.api().detach_volume(volume).detach_volume)
    session.show(done.volume, output, VOLUME_COLUMNS)


@volumes.command("resize", epilog="Example: `flexplane volumes resize zone-a/117 --size 40`.")
def resize_volume(
    ctx: typer.Context,
    volume: VolumeArgument,
    size: Annotated[int, typer.Option(help="its new size in GiB (volumes only grow)")],
    output: OutputOption = Output.TABLE,
) -> None:
    """Grow a volume, attached or not."""
    session = session_of(ctx)
    done = answered(session.api().resize_volume(volume, size).resize_volume)
    session.show(done.volume, output, VOLUME_COLUMNS)


@volumes.command("delete", epilog="Example: `flexplane volumes delete zone-a/117`.")
def delete_volume(ctx: typer.Context, volume: VolumeArgument, output: OutputOption = Output.TABLE) -> None:
    """Delete a volume and its data (refused while it is attached)."""
    session = session_of(ctx)
    gone = answered(session.api().delete_volume(volume).delete_volume)
    session.show(gone.volume, output, [("DELETED", "id")])


SNAPSHOT_COLUMNS: list[Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("SIZE GIB", "sizeGb"),
    ("STATUS", "status"),
    ("SOURCE", "source"),
    ("TAKEN AT", "takenAt"),
    ("ZONE", "zone"),
    ("PROFILE", "storageProfile"),
]


@volumes.command("snapshots", epilog="Example: `flexplane volumes snapshots --volume zone-a/117 -o json`.")
def list_snapshots(
    ctx: typer.Context,
    volume: Annotated[str | None, typer.Option(help="only this volume's, <zone>/<vmid>")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """The VDC's volume snapshots, by name (those of volumes deleted since too)."""
    session = session_of(ctx)
    session.show(session.api().volume_snapshots(volume=volume).volume_snapshots, output, SNAPSHOT_COLUMNS)


@volumes.command("snapshot", epilog="Example: `flexplane volumes snapshot zone-a/117 before-upgrade`.")
def snapshot_volume(
    ctx: typer.Context,
    volume: VolumeArgument,
    name: Annotated[str, typer.Argument(help="a DNS label, unique among the VDC's snapshots")],
    output: OutputOption = Output.TABLE,
) -> None:
    """Take a snapshot of a detached volume: a copy of its disk, counted in the VDC's disk quota (a
    copy still being made is `creating`: the same command again finishes it once whole)."""
    session = session_of(ctx)
    made = answered(session.api().create_volume_snapshot(volume, name).create_volume_snapshot)
    session.show(made.snapshot, output, SNAPSHOT_COLUMNS)


@volumes.command("restore", epilog="Example: `flexplane volumes restore zone-a/131 data-copy --size 40`.")
def restore_snapshot(
    ctx: typer.Context,
    snapshot: Annotated[str, typer.Argument(help="the snapshot's id, <zone>/<vmid>")],
    name: Annotated[str, typer.Argument(help="the new volume's name, a DNS label")],
    size: Annotated[int | None, typer.Option(help="its size in GiB (the snapshot's at least)")] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """Make a new volume from a snapshot, in its zone and storage profile."""
    session = session_of(ctx)
    made = answered(
        session.api().create_volume_from_snapshot(snapshot, name, size_gb=size).create_volume_from_snapshot
    )
    session.show(made.volume, output, VOLUME_COLUMNS)


@volumes.command("delete-snapshot", epilog="Example: `flexplane volumes delete-snapshot zone-a/131`.")
def delete_snapshot(
    ctx: typer.Context,
    snapshot: Annotated[str, typer.Argument(help="the snapshot's id, <zone>/<vmid>")],
    output: OutputOption = Output.TABLE,
) -> None:
    """Delete a volume snapshot and its copy."""
    session = session_of(ctx)
    gone = answered(session.api().delete_volume_snapshot(snapshot).delete_volume_snapshot)
    session.show(gone.snapshot, output, [("DELETED", "id")])
