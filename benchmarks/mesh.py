"""What the WireGuard mesh costs: agent calls and VM listings over the mesh against direct mTLS.

Brings up the devstack's world with two fake zones of one node each and ``--vms`` VMs per zone.
``zone-d``'s agent is dialled directly (mTLS on loopback), as without a mesh. ``zone-m``'s node is a
network namespace behind the hub (``devstack/meshnet.py``'s topology, on the direct path, not the
NAT'd one): it enrolls with ``flexplane-agent bootstrap`` run in its namespace against the
orchestrator restarted with the mesh's settings, the mesh control server (``manage.py mesh_hub``)
runs as its own process, and its agent serves on its mesh address only, over userspace WireGuard
(``wireguard-go``; the kernel here has no WireGuard, so the kernel path is not measurable).

Measured in one run, interleaved:

- agent call: ``GET /version`` through each agent (the pool's mTLS channel, reused), and to the
  mesh node once more through the hub's CONNECT proxy (``orchestrator.mesh.proxy``), as an
  orchestrator's pod on Kubernetes reaches it;
- listing:    GraphQL ``virtualMachines(first: 100, filter: {zone})`` of each zone.

It prints p50 and p99 of each, and the mesh/direct ratio of the p50s. Target: ratio <= 1.2 (the
proxied call's ratio is printed too, for information).
Needs root (namespaces, WireGuard) and Debian's wireguard-tools and wireguard-go.

    .venv/bin/python -m benchmarks.mesh [--vms 500] [--rounds 200]
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import requests

from agent.service import DROPIN, exec_start
from agentclient import AgentPool, AgentTarget, ClientTLS, host_identity
from benchmarks.kit import arguments, bench_world, interleaved, percentile, seed_vms
from devstack.meshnet import Topology, in_ns, relay, topology
from devstack.processes import Process, spawn, wait_for_line
from devstack.world import World

DIRECT, MESHED = "zone-d", "zone-m"
NODE = "pve1"
HUB_PORT = 51820
PROXY_PORT = 3128
QUERY = """query ($zone: String) { virtualMachines(first: 100, filter: {zone: $zone}) {
  edges { node { id name status zone host vdc cores memoryMb } } } }"""
TARGET = 1.2


# ---------------------------------------------------------------------------------- the mesh node


def proxy_address(net: Topology) -> str:
    """The hub's side of this process's link to it: where its proxy listens in the benchmark."""
    return net.ip(250, 2)


@contextmanager
def meshed_node(world: World, net: Topology) -> Iterator[AgentTarget]:
    """zone-m's node enrolled on the mesh from its namespace, its agent running there."""
    ns = net.node(1)
    scratch = world.cfg.scratch
    mesh_env = {
        "FLEXPLANE_MESH_RANGE": net.mesh_range,
        "FLEXPLANE_MESH_HUB_ENDPOINT": f"{net.hub_public}:{HUB_PORT}",
        "FLEXPLANE_MESH_KEEPALIVE": "5",
    }
    # zone-m leaves its direct node: the world's agent stops, its host goes, the orchestrator meshes.
    world.forget_agent(MESHED, NODE)
    requests.post(
        f"{world.url}/graphql",
        json={
            "query": "mutation ($z: String!, $h: String!) { removeHost(zone: $z, host: $h, force: true) "
            "{ errors { message } } }",
            "variables": {"z": MESHED, "h": NODE},
        },
        headers={"Authorization": f"Bearer {world.token('admin')}"},
        timeout=30,
    ).raise_for_status()
    assert world.orchestrator is not None
    world.orchestrator.stop()
    world.start_orchestrator(mesh_env)
    hub: Process = spawn(
        "mesh hub",
        [
            sys.executable,
            "manage.py",
            "mesh_hub",
            "--interface",
            net.link("hub"),
            "--netns",
            net.hub,
            "--port",
            str(HUB_PORT),
            "--interval",
            "0.5",
            "--proxy-listen",
            f"{proxy_address(net)}:{PROXY_PORT}",
        ],
        scratch / "logs" / "mesh-hub.log",
        env={**world.orchestrator_env(), **mesh_env},
    )
    agent: Process | None = None
    relays: list[socket.socket] = []
    try:
        wait_for_line(hub, "mesh hub listening", 30)
        net.masquerade_into(net.link("hub"))
        https = world.https_url.removeprefix("https://")
        # The world's agent-release registry, where it runs one (its bootstrap installs from it).
        served = getattr(world, "registry", None)
        registry = [str(served.address)] if served is not None else []
        for address in (https, world.fakes[MESHED].url(NODE).removeprefix("https://"), *registry):
            host, _, port = address.rpartition(":")
            relays.append(relay(ns, host, int(port)))
        token = world.join_token(MESHED, NODE)
        root = scratch / "nodes" / "mesh-node"
        argv = world.bootstrap_argv(MESHED, NODE, net.node_direct(1), token, root)
        done = subprocess.run(
            in_ns(ns, *argv, "--mesh-interface", net.link("w1")),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the mesh node's bootstrap failed:\n{done.stdout}{done.stderr}")
        command = exec_start((root / DROPIN).read_text())
        agent = spawn("mesh agent", in_ns(ns, *command), scratch / "logs" / "agent-mesh.log")
        wait_for_line(agent, "flexplane-agent listening", 30)
        listening = agent.output().split("flexplane-agent listening on ", 1)[1].split()[0]
        yield AgentTarget(host_identity(MESHED, NODE), listening)
    finally:
        if agent is not None:
            agent.stop()
        hub.stop()
        for server in relays:
            server.close()


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, rounds=200, subnet=45)
    parser.add_argument("--vms", type=int, default=500, help="VMs per zone")
    args = parser.parse_args(argv)
    if os.geteuid() != 0 or not shutil.which("wireguard-go") or not shutil.which("wg"):
        print(
            "benchmarks.mesh needs root and wireguard-tools and wireguard-go (make install)", file=sys.stderr
        )
        return 2
    with bench_world(args.subnet, (DIRECT, MESHED), 1) as world, topology(args.subnet) as net:
        seed_vms(world, args.vms, nodes=1, vdcs=("demo",))
        env = world.orchestrator_env()
        tls = ClientTLS.from_files(
            env["FLEXPLANE_AGENT_CA"], env["FLEXPLANE_AGENT_CERT"], env["FLEXPLANE_AGENT_KEY"]
        )
        direct = AgentTarget(host_identity(DIRECT, NODE), world.agents[(DIRECT, NODE)].endpoint)
        with (
            meshed_node(world, net) as meshed,
            AgentPool(tls, timeout=10) as pool,
            AgentPool(tls, timeout=10, proxy=f"http://{proxy_address(net)}:{PROXY_PORT}") as proxied,
        ):
            api = requests.Session()
            api.headers["Authorization"] = f"Bearer {world.token('admin')}"

            def call(target: AgentTarget, through: AgentPool = pool) -> int:
                through.proxmox(target, "GET", "/version")
                return 1

            def listing(zone: str) -> int:
                body = api.post(
                    f"{world.url}/graphql", json={"query": QUERY, "variables": {"zone": zone}}, timeout=30
                ).json()
                if body.get("errors"):
                    raise RuntimeError(f"virtualMachines of {zone}: {body['errors']}")
                return len(body["data"]["virtualMachines"]["edges"])

            for _ in range(10):  # warm: channels, TLS sessions, the orchestrator's imports
                call(direct), call(meshed), call(meshed, proxied), listing(DIRECT), listing(MESHED)
            assert listing(MESHED) == listing(DIRECT) == min(100, args.vms)
            times = interleaved(
                args.rounds,
                {
                    "agent call, direct": lambda: call(direct),
                    "agent call, mesh": lambda: call(meshed),
                    "agent call, mesh via proxy": lambda: call(meshed, proxied),
                    "virtualMachines, direct": lambda: listing(DIRECT),
                    "virtualMachines, mesh": lambda: listing(MESHED),
                },
            )
    print(f"{args.rounds} rounds; the mesh node at {meshed.address} over userspace WireGuard")
    for name, samples in times.items():
        print(f"  {name:26} p50 {percentile(samples, 0.5):7.2f} ms   p99 {percentile(samples, 0.99):7.2f} ms")
    worst = 0.0
    for what in ("agent call", "virtualMachines"):
        ratio = percentile(times[f"{what}, mesh"], 0.5) / percentile(times[f"{what}, direct"], 0.5)
        worst = max(worst, ratio)
        print(f"  {what}: mesh/direct p50 ratio {ratio:.2f} (target <= {TARGET})")
    ratio = percentile(times["agent call, mesh via proxy"], 0.5) / percentile(
        times["agent call, direct"], 0.5
    )
    print(f"  agent call through the hub's proxy (a pod on Kubernetes): p50 ratio {ratio:.2f} to direct")
    print("  the kernel's WireGuard: not measurable here (no module)")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
