"""What the Cluster API providers cost at 100 tenant clusters, against Kamaji's published operator cost.

Brings up the devstack's world with the providers (``python -m providers``, a process of its own) and the
stand-ins (Cluster API core and CABPK, the LoadBalancer and the hosted control planes' pods: a tenant API
server each, over HTTPS, in this process), writes ``--clusters`` tenant clusters (Cluster, ProxmoxCluster,
FlexControlPlane; no workers) in VDC demo, and ``--vm-clusters`` more with ``--workers`` workers each, and
measures:

- time from writing the objects to every provider object ready (each FlexControlPlane Available and
  initialized, each ProxmoxCluster provisioned), the pools at 0;
- the providers' process: its memory (RSS) once all are ready, its CPU time idle (over ``--idle`` seconds,
  as mCPU; by default a drift interval and a little more, in which every control plane's drift timer
  reconciles it once: that window's CPU is a full resync's), and the CPU time of a restart until idle
  again (no CPU used for 2 s), beside an empty start's;
- Proxmox calls per worker VM: the requests the fake zones served while the pools were scaled up from 0 to
  ``--workers`` (less the idle world's own rate of calls), divided by the VMs made.

Kamaji's published figures (its operator, per tenant control plane): 12 mCPU and 6 MiB; 100 control planes
provisioned one every 4.5 s. The ratios printed are ours over Kamaji's (below 1: cheaper).

    .venv/bin/python -m benchmarks.providers [--clusters 100] [--vm-clusters 2] [--workers 2] [--subnet 47]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.config import new_client_from_config

from benchmarks.kit import bench_world
from devstack.world import World
from providers.controlplane.handlers import DRIFT_INTERVAL
from tests.apikit import vdc_namespace

KAMAJI_MCPU_PER_CLUSTER = 12.0
KAMAJI_MIB_PER_CLUSTER = 6.0
KAMAJI_SECONDS_PER_CLUSTER = 4.5
CORE, BOOTSTRAP = "cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io"
INFRA, CP = "infrastructure.flexplane.io", "controlplane.flexplane.io"
NS, VDC, ZONE = "vdc-demo", "demo", "zone-a"
NETWORK = "bench-nodes"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115, PTH123 - one read
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_mib(pid: int) -> float:
    for line in open(f"/proc/{pid}/status").read().splitlines():  # noqa: SIM115, PTH123 - one read
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def objects(name: str, network: str, workers: int, *, replicas: int | None = None) -> list[dict[str, Any]]:
    """A cluster's objects; with ``workers``, a pool of them (of ``replicas`` at first, if given)."""
    labels = {"cluster.x-k8s.io/cluster-name": name, "flexplane.io/vdc": VDC}
    found: list[dict[str, Any]] = [
        {
            "apiVersion": f"{INFRA}/v1alpha1",
            "kind": "ProxmoxCluster",
            "metadata": {"name": name, "labels": labels},
            "spec": {"vdc": VDC, "network": network},
        },
        {
            "apiVersion": f"{CP}/v1alpha1",
            "kind": "FlexControlPlane",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 2, "version": "v1.34.2"},
        },
        {
            "apiVersion": f"{CORE}/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "infrastructureRef": {"apiGroup": INFRA, "kind": "ProxmoxCluster", "name": name},
                "controlPlaneRef": {"apiGroup": CP, "kind": "FlexControlPlane", "name": name},
            },
        },
    ]
    if workers:
        template = {"metadata": {"name": f"{name}-w", "labels": labels}}
        found += [
            {
                **template,
                "apiVersion": f"{INFRA}/v1alpha1",
                "kind": "ProxmoxMachineTemplate",
                "spec": {
                    "template": {
                        "spec": {
                            "computeProfile": "small",
                            "storageProfile": "standard",
                            "image": "debian-12",
                        }
                    }
                },
            },
            {
                **template,
                "apiVersion": f"{BOOTSTRAP}/v1beta2",
                "kind": "KubeadmConfigTemplate",
                "spec": {"template": {"spec": {}}},
            },
            {
                "apiVersion": f"{CORE}/v1beta2",
                "kind": "MachineDeployment",
                "metadata": {"name": f"{name}-w", "labels": labels},
                "spec": {
                    "clusterName": name,
                    "replicas": workers if replicas is None else replicas,
                    "template": {
                        "spec": {
                            "clusterName": name,
                            "version": "v1.34.2",
                            "failureDomain": ZONE,
                            "bootstrap": {
                                "configRef": {
                                    "apiGroup": BOOTSTRAP,
                                    "kind": "KubeadmConfigTemplate",
                                    "name": f"{name}-w",
                                }
                            },
                            "infrastructureRef": {
                                "apiGroup": INFRA,
                                "kind": "ProxmoxMachineTemplate",
                                "name": f"{name}-w",
                            },
                        }
                    },
                },
            },
        ]
    return found


@dataclass
class Figures:
    clusters: int
    workers: int
    ready_seconds: float
    rss_mib: float
    empty_rss_mib: float
    idle_mcpu: float
    resync_cpu_seconds: float
    startup_cpu_seconds: float
    resync_seconds: float
    proxmox_calls_per_vm: float


class Bench:
    def __init__(self, world: World) -> None:
        self.world = world
        self.api = new_client_from_config(config_file=str(world.kubeconfig))
        self.custom: Any = client.CustomObjectsApi(self.api)
        vdc_namespace(client.CoreV1Api(self.api), VDC)  # as the VDC's first cluster makes it

    def items(self, group: str, plural: str) -> list[dict[str, Any]]:
        version = "v1beta2" if group in (CORE, BOOTSTRAP) else "v1alpha1"
        found: list[dict[str, Any]] = self.custom.list_namespaced_custom_object(group, version, NS, plural)[
            "items"
        ]
        return found

    def write(self, bodies: list[dict[str, Any]]) -> None:
        for body in bodies:
            group, _, version = body["apiVersion"].rpartition("/")
            self.custom.create_namespaced_custom_object(group, version, NS, body["kind"].lower() + "s", body)

    def scale(self, deployment: str, replicas: int) -> None:
        self.custom.patch_namespaced_custom_object(
            CORE, "v1beta2", NS, "machinedeployments", deployment, {"spec": {"replicas": replicas}}
        )

    def ready(self, clusters: int, workers: int) -> bool:
        planes = [
            p
            for p in self.items(CP, "flexcontrolplanes")
            if p.get("status", {}).get("initialization", {}).get("controlPlaneInitialized")
            and any(
                c["type"] == "Available" and c["status"] == "True" for c in p["status"].get("conditions", [])
            )
        ]
        infra = [
            c
            for c in self.items(INFRA, "proxmoxclusters")
            if c.get("status", {}).get("initialization", {}).get("provisioned")
        ]
        machines = [
            m
            for m in self.items(INFRA, "proxmoxmachines")
            if m.get("status", {}).get("initialization", {}).get("provisioned")
        ]
        return len(planes) == clusters and len(infra) == clusters and len(machines) == workers

    def proxmox_requests(self) -> int:
        return sum(
            self.world.fakes.on_loop(lambda pve=self.world.fakes[zone].pve: len(pve.requests))
            for zone in self.world.fakes.zones
        )


def wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout:g} s")
        time.sleep(0.25)


def wait_idle(pid: int, quiet: float = 2.0, timeout: float = 600.0) -> float:
    """Wait until the process used no CPU for ``quiet`` seconds; the time that took."""
    started = time.monotonic()
    last, since = cpu_seconds(pid), time.monotonic()
    while time.monotonic() - started < timeout:
        time.sleep(0.25)
        now = cpu_seconds(pid)
        if now > last + 0.01:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return since - started
    raise RuntimeError("the providers never went idle")


def create_network(world: World) -> str:
    import requests

    mutation = "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) { errors { message } } }"
    answer = requests.post(
        f"{world.url}/graphql",
        json={
            "query": mutation,
            "variables": {"input": {"name": NETWORK, "zone": ZONE, "cidr": "10.178.0.0/22"}},
        },
        headers={"Authorization": f"Bearer {world.token('alice')}", "FlexPlane-VDC-ID": VDC},
        timeout=60,
    ).json()
    if answer.get("errors") or answer["data"]["createNetwork"]["errors"]:
        raise RuntimeError(f"createNetwork: {answer}")
    return f"{ZONE}/{NETWORK}"


def measure(world: World, clusters: int, vm_clusters: int, workers: int, idle: float) -> Figures:
    bench = Bench(world)
    network = create_network(world)
    world.start_cluster_api({"LEADER_TTL": "3"})
    assert world.providers is not None
    process = world.providers
    wait(lambda: "providers ready" in process.output(), 60, "the providers start")
    wait_idle(process.popen.pid)
    empty_rss, startup_cpu = rss_mib(process.popen.pid), cpu_seconds(process.popen.pid)

    total = clusters + vm_clusters
    vms = vm_clusters * workers
    started = time.monotonic()
    for index in range(total):
        bench.write(objects(f"b{index:03d}", network, 0 if index < clusters else workers, replicas=0))
    wait(lambda: bench.ready(total, 0), 1800, f"{total} clusters ready")
    ready_seconds = time.monotonic() - started

    pid = process.popen.pid
    wait_idle(pid)
    rss = rss_mib(pid)
    before, requests_before = cpu_seconds(pid), bench.proxmox_requests()
    time.sleep(idle)
    idle_mcpu = (cpu_seconds(pid) - before) / idle * 1000
    background = (bench.proxmox_requests() - requests_before) / idle  # the world's own calls a second

    # The workers: the pools scaled up, Proxmox's requests counted until every VM is provisioned, less the
    # background rate the idle world makes (its agents' and orchestrator's own reads).
    requests_before, scaling = bench.proxmox_requests(), time.monotonic()
    for index in range(clusters, total):
        bench.scale(f"b{index:03d}-w", workers)
    wait(lambda: bench.ready(total, vms), 1800, f"{vms} workers ready")
    elapsed = time.monotonic() - scaling
    calls = bench.proxmox_requests() - requests_before - background * elapsed

    # A full resync: the operator started again reconciles every object once.
    world.providers.stop()
    world._processes.remove(world.providers)
    restarted = world.start_providers_process()
    resync_seconds = wait_idle(restarted.popen.pid)
    resync_cpu = cpu_seconds(restarted.popen.pid)
    return Figures(
        clusters=total,
        workers=vms,
        ready_seconds=ready_seconds,
        rss_mib=rss,
        empty_rss_mib=empty_rss,
        idle_mcpu=idle_mcpu,
        resync_cpu_seconds=resync_cpu,
        startup_cpu_seconds=startup_cpu,
        resync_seconds=resync_seconds,
        proxmox_calls_per_vm=calls / vms if vms else float("nan"),
    )


def report(f: Figures) -> str:
    per_cluster_mib = f.rss_mib / f.clusters
    marginal_mib = (f.rss_mib - f.empty_rss_mib) / f.clusters
    per_cluster_mcpu = f.idle_mcpu / f.clusters
    per_cluster_seconds = f.ready_seconds / f.clusters
    lines = [
        f"tenant clusters: {f.clusters} ({f.workers} worker VMs)",
        f"all provider objects ready after writing them: {f.ready_seconds:.1f} s "
        f"({per_cluster_seconds:.2f} s a cluster; Kamaji: {KAMAJI_SECONDS_PER_CLUSTER} s; "
        f"ratio {per_cluster_seconds / KAMAJI_SECONDS_PER_CLUSTER:.2f})",
        f"providers' memory (RSS): {f.rss_mib:.0f} MiB ({f.empty_rss_mib:.0f} MiB with no cluster), "
        f"{per_cluster_mib:.2f} MiB a cluster, {marginal_mib:.2f} MiB a cluster over the empty process "
        f"(Kamaji: {KAMAJI_MIB_PER_CLUSTER} MiB; ratios {per_cluster_mib / KAMAJI_MIB_PER_CLUSTER:.2f} and "
        f"{marginal_mib / KAMAJI_MIB_PER_CLUSTER:.2f})",
        f"providers' CPU idle: {f.idle_mcpu:.1f} mCPU, {per_cluster_mcpu:.3f} mCPU a cluster "
        f"(Kamaji: {KAMAJI_MCPU_PER_CLUSTER} mCPU; ratio {per_cluster_mcpu / KAMAJI_MCPU_PER_CLUSTER:.3f})",
        # Each FlexControlPlane's drift timer reconciles it once a DRIFT_INTERVAL: over that window (the
        # idle one, --idle, at least that long) every cluster is resynced once.
        f"a full resync (every control plane's drift pass, in one {DRIFT_INTERVAL:.0f} s window): "
        f"{f.idle_mcpu * DRIFT_INTERVAL / 1000:.2f} s of CPU, "
        f"{f.idle_mcpu * DRIFT_INTERVAL / f.clusters:.1f} ms of CPU a cluster",
        f"a restart until idle: {f.resync_cpu_seconds:.1f} s of CPU in {f.resync_seconds:.1f} s (an empty "
        f"start: {f.startup_cpu_seconds:.1f} s; kopf skips the objects it handled already)",
        f"Proxmox calls per worker VM: {f.proxmox_calls_per_vm:.1f} (the idle world's own calls taken off)",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clusters", type=int, default=100, help="tenant clusters without workers")
    parser.add_argument("--vm-clusters", type=int, default=2, help="tenant clusters with workers")
    parser.add_argument("--workers", type=int, default=2, help="workers of each of those")
    parser.add_argument(
        "--idle",
        type=float,
        default=DRIFT_INTERVAL + 5,
        help="seconds of idle CPU measured (at least a drift interval: every cluster resynced once in it)",
    )
    parser.add_argument("--subnet", type=int, default=47)
    args = parser.parse_args()
    with bench_world(args.subnet, ("zone-a", "zone-b"), 2) as world:
        try:
            figures = measure(world, args.clusters, args.vm_clusters, args.workers, args.idle)
        finally:
            world.stop_cluster_api()
    print(report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
