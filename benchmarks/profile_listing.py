"""Where the VM listing's time goes: a sampling profile of the orchestrator (and one agent).

Brings up the world of ``benchmarks.vm_list`` (4 zones x 4 nodes, 4,000 VMs), warms it, then
records the orchestrator's process with py-spy while it answers ``--requests`` listings, one at a
time, sampling only the thread that holds the GIL (the Python work, not the waiting), and prints
the functions that cost the most: by their own time (self) and with what they call (inclusive),
as a share of the samples. ``--agent`` profiles one agent instead; ``--vdc`` lists one VDC of 200 of
the VMs (``benchmarks.vdc_list``'s) rather than the fleet.

py-spy samples the running process from outside (no code of ours is changed to be measured);
it needs ptrace, so run it as root or with ``kernel.yama.ptrace_scope=0``.

    .venv/bin/python -m benchmarks.profile_listing [--vms 4000] [--requests 200] [--top 25] [--keep FILE]
        [--agent] [--vdc]
"""

from __future__ import annotations

import argparse
import collections
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import vdc_list, vm_list
from benchmarks.kit import bench_world
from benchmarks.vm_list import NODES, ZONES

PY_SPY = Path(sys.executable).with_name("py-spy")


def _frames(line: str) -> tuple[list[str], int]:
    """A collapsed stack (``frame;frame;... count``) as its frames, outermost first, and its count."""
    stack, _, count = line.rpartition(" ")
    return [frame for frame in stack.split(";") if frame], int(count)


def summarize(raw: Path, top: int) -> str:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        if not line.strip():
            continue
        frames, count = _frames(line)
        total += count
        if frames:
            own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [f"{total} samples"]
    for title, counter in (("self", own), ("inclusive", inclusive)):
        lines.append(f"-- top {top} by {title} time")
        lines.extend(f"{100 * n / total:5.1f}%  {frame}" for frame, n in counter.most_common(top))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vms", type=int, default=4000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--rate", type=int, default=400, help="samples per second")
    parser.add_argument("--agent", action="store_true", help="profile the agent of zone-1/pve1 instead")
    parser.add_argument(
        "--vdc",
        action="store_true",
        help="list one VDC of 200 of the VMs (benchmarks.vdc_list's world) rather than the fleet",
    )
    parser.add_argument(
        "--all-threads", action="store_true", help="sample waiting threads too (default: the GIL holder)"
    )
    parser.add_argument("--subnet", type=int, default=42)
    parser.add_argument("--keep", type=Path, help="also keep py-spy's collapsed stacks in this file")
    args = parser.parse_args(argv)

    with bench_world(args.subnet, ZONES, NODES) as world, tempfile.TemporaryDirectory() as scratch:
        if args.vdc:
            vdc_list.seed(world, args.vms, 200)
            vdc_probes = vdc_list.Probes(world)
            listing, close = vdc_probes.vdc, vdc_probes.close
            for _ in range(5):  # warm: connections, JWKS, imports
                listing()
        else:
            vm_list.seed(world, args.vms)
            vm_probes = vm_list.Probes(world)
            vm_probes.warm(args.vms)
            listing, close = vm_probes.stack, vm_probes.close
        process = world.agents[(ZONES[0], "pve1")].process if args.agent else world.orchestrator
        assert process is not None
        raw = Path(scratch) / "profile.txt"
        recorder = subprocess.Popen(
            [str(PY_SPY), "record", "--pid", str(process.popen.pid), "--rate", str(args.rate)]
            + ["--format", "raw", "--output", str(raw), "--full-filenames"]
            + (["--idle"] if args.all_threads else ["--gil"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            for _ in range(args.requests):
                listing()
        finally:
            recorder.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
            _, err = recorder.communicate(timeout=60)
            close()
        if not raw.exists():
            print(err.decode(errors="replace"), file=sys.stderr)
            return 1
        if args.keep:
            args.keep.write_bytes(raw.read_bytes())
        print(summarize(raw, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
