"""A VM's usage over time (CPU, memory, disk and network), from Proxmox's RRD: what the VM page draws."""

from __future__ import annotations

from datetime import UTC, datetime

import graphene

from orchestrator.graphql.errors import domain_errors
from orchestrator.graphql.fields import attr, described_enum
from orchestrator.services import usage
from orchestrator.sources.proxmox.usage import UsageSample as SampleModel
from orchestrator.sources.proxmox.usage import VmUsage

UsageTimeframe = described_enum(
    "UsageTimeframe",
    {
        name: (value, f"About 70 samples of {step} each.")
        for name, value, step in (
            ("HOUR", "hour", "a minute"),
            ("DAY", "day", "30 minutes"),
            ("WEEK", "week", "3 hours"),
            ("MONTH", "month", "12 hours"),
            ("YEAR", "year", "a week"),
        )
    },
)


class UsageSample(graphene.ObjectType):
    """Proxmox's averages over one step; a value is null where Proxmox has none (the VM was off)."""

    time = graphene.DateTime(required=True, description="The end of the step.")
    cpu = graphene.Float(description="The share of the VM's vCPUs in use, 0 to 1.")
    cores = graphene.Int(required=True, description="The VM's vCPUs then (0 when Proxmox does not say).")
    memory_bytes = graphene.Float(description="Memory in use.")
    memory_total_bytes = graphene.Float(description="The VM's memory.")
    disk_read_bytes_per_second = graphene.Float()
    disk_write_bytes_per_second = graphene.Float()
    net_in_bytes_per_second = graphene.Float()
    net_out_bytes_per_second = graphene.Float()

    @staticmethod
    def resolve_time(sample: SampleModel, info: graphene.ResolveInfo) -> datetime:
        return datetime.fromtimestamp(sample.time, UTC)

    resolve_memory_bytes = attr("memory")
    resolve_memory_total_bytes = attr("memory_total")
    resolve_disk_read_bytes_per_second = attr("disk_read")
    resolve_disk_write_bytes_per_second = attr("disk_write")
    resolve_net_in_bytes_per_second = attr("net_in")
    resolve_net_out_bytes_per_second = attr("net_out")


class VirtualMachineUsage(graphene.ObjectType):
    timeframe = graphene.Field(UsageTimeframe, required=True)
    samples = graphene.List(graphene.NonNull(UsageSample), required=True, description="Oldest first.")


class Query(graphene.ObjectType):
    virtual_machine_usage = graphene.Field(
        graphene.NonNull(VirtualMachineUsage),
        id=graphene.ID(required=True, description="The VM (<zone>/<vmid>)."),
        timeframe=graphene.Argument(UsageTimeframe, default_value=UsageTimeframe.HOUR),
        description="A VM's CPU, memory, disk and network use over a time frame, Proxmox's averages (its "
        "RRD data). Needs USER or ADMIN and membership of the VM's VDC; another VDC's VM is NOT_FOUND, "
        "exactly like a missing one. Two Proxmox calls: the VM's zone's guests, then its rrddata.",
    )

    @staticmethod
    @domain_errors
    def resolve_virtual_machine_usage(
        root: None, info: graphene.ResolveInfo, id: str, timeframe: object = UsageTimeframe.HOUR
    ) -> VmUsage:
        # graphene hands resolvers the enum's member (its value is Proxmox's word).
        return usage.vm_usage(info.context.flexplane, id, str(getattr(timeframe, "value", timeframe)))
