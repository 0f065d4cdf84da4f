"""What the proxy's parameter check adds to a forwarded config write.

Serves a fake Proxmox (fakepve, HTTPS on loopback) and measures, in one run and interleaved so that a
noisy machine weighs on both alike, the agent's own forwarding of the config write the VM create sends
(profile, cloud-init, vendor snippet, tags, the boot disk's I/O limits: twelve parameters):

- unchecked: the agent's Proxmox client sends the write (what the proxy does once a call is allowed);
- checked:   ``agent.proxy.authorize`` with the node's policy, then the same write;
- check:     ``authorize`` alone, the pure function (the added latency, without the round trip's noise).

It prints p50 and p99 of each and the p50 difference. Target: the check under 1 ms p50 per call.

    .venv/bin/python -m benchmarks.proxy_check [--rounds 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path

from fakepve.certs import make_cert
from fakepve.server import FakePve

from agent.proxmox import ProxmoxClient
from agent.proxy import Policy, authorize
from benchmarks.kit import percentile

TOKEN_ID = "root@pam!bench"  # noqa: S105 - a token id, not a secret
TOKEN_SECRET = "bench-secret"  # noqa: S105 - the fake's token, on loopback, for this run only
VMID = 4242
PATH = f"/nodes/pve1/qemu/{VMID}/config"
POLICY = Policy(snippets_storage="local")
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"
TARGET_MS = 1.0
# The create's configure write, as ConfigChange renders it.
PARAMS = {
    "cores": "2",
    "sockets": "1",
    "memory": "2048",
    "cpu": "x86-64-v2-AES",
    "agent": "1",
    "ciuser": "ubuntu",
    "ipconfig0": "ip=dhcp",
    "sshkeys": urllib.parse.quote(KEY + "\n", safe=""),
    "cicustom": f"vendor=local:snippets/fp-demo-{VMID}-vendor.yaml",
    "tags": "fp-vdc-demo;fp-idem-3f2a9c;fp-cp-small;fp-sp-fast;fp-img-ubuntu-24.04;fp-req-2-2048-20",
    "scsi0": f"local-lvm:vm-{VMID}-disk-0,iops_rd=500,iops_wr=500,mbps_rd=80,mbps_wr=80,size=4G",
    "description": "Managed by flex.plane: a VM of VDC demo.",
}


async def timed(rounds: int, probes: dict[str, Callable[[], Awaitable[None]]]) -> dict[str, list[float]]:
    """Milliseconds of each probe, ``rounds`` times, one of each in turn."""
    times: dict[str, list[float]] = {name: [] for name in probes}
    for _ in range(rounds):
        for name, probe in probes.items():
            started = time.perf_counter()
            await probe()
            times[name].append((time.perf_counter() - started) * 1000)
    return times


async def measure(rounds: int, scratch: Path) -> dict[str, list[float]]:
    certfile, keyfile, _ = make_cert(str(scratch))
    pve = FakePve(host="127.0.0.1", port=0)
    pve.time_scale = 0
    pve.apitokens[TOKEN_ID] = TOKEN_SECRET
    pve.add_vm(VMID, "bench", node="pve1", config={"scsi0": f"local-lvm:vm-{VMID}-disk-0,size=4G"})
    await pve.start(certfile, keyfile)
    try:
        async with ProxmoxClient(pve.url, TOKEN_ID, TOKEN_SECRET, ca_file=Path(certfile)) as client:
            first = await client.request("PUT", PATH, PARAMS)
            if first.status != 200:
                raise SystemExit(f"the fake refused the config write: {first.status} {first.message}")

            async def unchecked() -> None:
                await client.request("PUT", PATH, PARAMS)

            async def checked() -> None:
                authorize("PUT", PATH, PARAMS, policy=POLICY)
                await client.request("PUT", PATH, PARAMS)

            async def check() -> None:
                authorize("PUT", PATH, PARAMS, policy=POLICY)

            await timed(max(rounds // 20, 5), {"unchecked": unchecked, "checked": checked})  # warm up
            return await timed(rounds, {"unchecked": unchecked, "checked": checked, "check": check})
    finally:
        await pve.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fp-bench-proxy-") as scratch:
        times = asyncio.run(measure(args.rounds, Path(scratch)))
    for name, samples in times.items():
        print(f"{name:10} p50 {percentile(samples, 0.5):8.3f} ms   p99 {percentile(samples, 0.99):8.3f} ms")
    added = percentile(times["checked"], 0.5) - percentile(times["unchecked"], 0.5)
    check = percentile(times["check"], 0.5)
    print(f"added p50 (checked - unchecked): {added:.3f} ms; the check alone p50: {check:.3f} ms")
    print(f"{len(PARAMS)} parameters; target: the check under {TARGET_MS:g} ms p50")
    return 0 if check < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
