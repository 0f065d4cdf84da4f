"""What GraphQL's execution of a page of VMs costs, graphql-core's way against the orchestrator's
(``orchestrator.graphql.execution.LeafExecutionContext``), in one process and interleaved.

The page is ``benchmarks.vm_list``'s query (100 VMs, eight fields each, in a connection's edges) over the
schema's own ``VirtualMachine`` type, the VMs built as a listing builds them (``VirtualMachine.from_guest``).
No HTTP, no agents: only the execution, which the profile of a VDC's listing puts at about a sixth of
the orchestrator's time. Both ways must answer the same, which is checked first. Target: the
orchestrator's way at most 0.6 of graphql-core's (p50).

    .venv/bin/python -m benchmarks.graphql_leaves [--rounds 300]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexplane.settings.test")
django.setup()

import graphene  # noqa: E402 (after Django's setup: the models below need it)
from graphql import ExecutionContext, ExecutionResult, execute, parse  # noqa: E402

from benchmarks.kit import interleaved, p50s_p99s, verdict  # noqa: E402
from benchmarks.vm_list import QUERY  # noqa: E402
from orchestrator.graphql.execution import LeafExecutionContext  # noqa: E402
from orchestrator.graphql.view import synchronous  # noqa: E402 (what the view tells graphql-core)
from orchestrator.graphql.vms import VirtualMachineConnection  # noqa: E402
from orchestrator.models.vdcs import POOL_PREFIX  # noqa: E402
from orchestrator.models.vms import COMPUTE_PROFILE_TAG_PREFIX, VDC_TAG_PREFIX, VirtualMachine  # noqa: E402
from orchestrator.services.vms import Page  # noqa: E402
from orchestrator.sources.proxmox.values import Guest  # noqa: E402

TARGET = 0.6


def page(size: int = 100) -> Page:
    """A page of ``size`` VMs, as a listing reads them from Proxmox."""
    vms = [
        VirtualMachine.from_guest(
            "zone-1",
            Guest.from_resource(
                {
                    "type": "qemu",
                    "vmid": 1000 + n,
                    "name": f"vm-{n}",
                    "node": f"pve{n % 4 + 1}",
                    "status": "running",
                    "tags": f"{VDC_TAG_PREFIX}bench;{COMPUTE_PROFILE_TAG_PREFIX}small",
                    "maxcpu": 2,
                    "maxmem": 2 << 30,
                    "maxdisk": 20 << 30,
                    "pool": f"{POOL_PREFIX}bench",
                }
            ),
        )
        for n in range(size)
    ]
    return Page(items=vms, cursors=[str(n) for n in range(size)], has_next=True)


def schema(listing: Page) -> graphene.Schema:
    class Query(graphene.ObjectType):
        virtual_machines = graphene.Field(VirtualMachineConnection, required=True, first=graphene.Int())

        @staticmethod
        def resolve_virtual_machines(root: object, info: graphene.ResolveInfo, first: int) -> Page:
            return listing

    return graphene.Schema(query=Query)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args(argv)
    graphql_schema = schema(page()).graphql_schema
    document = parse(QUERY)

    def answer(context: type[ExecutionContext]) -> ExecutionResult:
        result = execute(
            graphql_schema, document, execution_context_class=context, is_awaitable=synchronous, middleware=[]
        )
        assert isinstance(result, ExecutionResult), "the schema's resolvers are synchronous"
        return result

    def probe(context: type[ExecutionContext]) -> Callable[[], int]:
        def execution() -> int:
            result = answer(context)
            assert not result.errors, result.errors
            return len(result.data or {})

        return execution

    ways = {"graphql-core": ExecutionContext, "leaves": LeafExecutionContext}
    answers = [answer(way).formatted for way in ways.values()]
    assert answers[0] == answers[1], "the two ways answer differently"
    probes = {name: probe(way) for name, way in ways.items()}
    interleaved(20, probes)  # warm both
    p50, p99 = p50s_p99s(interleaved(args.rounds, probes))
    ratio = p50["leaves"] / p50["graphql-core"]
    print(
        f"graphql_leaves: a page of 100 VMs x 8 fields, {args.rounds} rounds, python {sys.version.split()[0]}"
    )
    for name in ways:
        print(f"  {name:13} p50 {p50[name]:6.2f} ms  p99 {p99[name]:6.2f} ms")
    print(f"  leaves / graphql-core p50 {ratio:.2f} (target <= {TARGET})")
    return 0 if verdict(ratio <= TARGET) else 1


if __name__ == "__main__":
    sys.exit(main())
