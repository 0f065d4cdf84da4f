"""What listing a VDC's Kubernetes clusters costs: a bounded number of management-cluster reads.

For each size (20 and 100 clusters by default, two node pools each, with the statuses the providers
would write), brings up the devstack's world (the Kubernetes emulator with the CRDs, identity, the
orchestrator under uvicorn) and measures, in one run and interleaved so that a noisy machine weighs on
both alike:

- raw: the five lists a listing needs (Cluster, FlexControlPlane, ProxmoxCluster, MachineDeployment,
  ProxmoxMachineTemplate of the VDC's namespace, by the VDC's label), with the official client;
- api: GraphQL ``kubernetesClusters`` naming the VDC, through the orchestrator.

It also counts the reads the emulator served for one listing. Targets: 5 reads at every size (never
one per cluster or per field); the API's p50 at most 3x the raw lists' (it adds HTTP, the token's
check and GraphQL's serialization of every field).

    .venv/bin/python -m benchmarks.clusters [--sizes 20,100] [--rounds 30]
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import django
import kmock
import requests
from kubernetes import client, config

# The orchestrator's models (the objects' builders use them) need Django's apps: the tests' settings.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexplane.settings.test")
django.setup()

from benchmarks.kit import arguments, bench_world, interleaved, p50s_p99s, verdict  # noqa: E402
from devstack.world import World  # noqa: E402
from orchestrator.models.clusters import (  # noqa: E402
    FLEX_CONTROL_PLANE,
    LISTED,
    MACHINE_DEPLOYMENT,
    VDC_LABEL,
    namespace_of,
)
from orchestrator.services.clusters import objects  # noqa: E402
from tests.apikit import vdc_namespace  # noqa: E402
from tests.orchestrator.clusterkit import install_crds  # noqa: E402

VDC = "demo"
QUERY = """{ kubernetesClusters { name vdc version phase endpoint network
  controlPlane { replicas readyReplicas version } nodePools { name computeProfile count ready version } } }"""
READS = len(LISTED)
TARGET_OVER_RAW = 3.0


@dataclass(frozen=True)
class Figures:
    clusters: int
    reads: int
    p50: dict[str, float]
    p99: dict[str, float]


def seed(custom: client.CustomObjectsApi, count: int) -> None:
    """``count`` clusters of VDC demo, two pools each, as ready as the providers would leave them."""
    namespace = namespace_of(VDC)
    vdc_namespace(client.CoreV1Api(custom.api_client), VDC)  # as the VDC's first cluster makes it
    pools = (
        objects.PoolPlan("web", "small", "standard", 3, 20, 1, 1024),
        objects.PoolPlan("batch", "medium", "standard", 2, 20, 2, 4096),
    )
    for n in range(count):
        plan = objects.ClusterPlan(VDC, f"bench{n}", "v1.34.2", "debian-12", "zone-1/bench", 2, pools)
        for resource, body in objects.all_objects(plan):
            custom.create_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, body
            )
        custom.patch_namespaced_custom_object_status(
            FLEX_CONTROL_PLANE.group,
            FLEX_CONTROL_PLANE.version,
            namespace,
            FLEX_CONTROL_PLANE.plural,
            plan.name,
            {
                "status": {
                    "initialization": {"controlPlaneInitialized": True},
                    "readyReplicas": 2,
                    "version": "v1.34.2",
                }
            },
        )
        for pool in pools:
            custom.patch_namespaced_custom_object_status(
                MACHINE_DEPLOYMENT.group,
                MACHINE_DEPLOYMENT.version,
                namespace,
                MACHINE_DEPLOYMENT.plural,
                objects.deployment_name(plan.name, pool.name),
                {
                    "status": {
                        "replicas": pool.count,
                        "readyReplicas": pool.count,
                        "upToDateReplicas": pool.count,
                    }
                },
            )


class Probes:
    def __init__(self, world: World) -> None:
        self.world = world
        self.custom = client.CustomObjectsApi(
            config.new_client_from_config(config_file=str(world.kubeconfig))
        )
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"Bearer {world.token('alice')}"
        self.api.headers["FlexPlane-VDC-ID"] = VDC

    def raw(self) -> int:
        found = 0
        for r in LISTED:
            answer: dict[str, list[object]] = self.custom.list_namespaced_custom_object(  # type: ignore[assignment]
                r.group, r.version, namespace_of(VDC), r.plural, label_selector=VDC_LABEL
            )
            found += len(answer["items"])
        return found

    def listing(self) -> int:
        response = self.api.post(f"{self.world.url}/graphql", json={"query": QUERY}, timeout=60)
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise RuntimeError(f"the stack answered {response.status_code}: {body}")
        return len(body["data"]["kubernetesClusters"])

    def reads_of_one_listing(self) -> int:
        emulator = self.world.kube.emulator
        mark = max(r.id for r in list(emulator))
        self.listing()
        return sum(
            1
            for r in list(emulator)
            if r.id > mark and r.method == kmock.method.GET and "/apis/" in str(r.url.path)
        )

    def close(self) -> None:
        self.custom.api_client.close()
        self.api.close()


def measure(subnet: int, count: int, rounds: int) -> Figures:
    with bench_world(subnet, ("zone-1",), 1) as world:
        install_crds(world)
        probes = Probes(world)
        seed(probes.custom, count)
        assert probes.listing() == count
        reads = probes.reads_of_one_listing()
        times = interleaved(rounds, {"raw": probes.raw, "api": probes.listing})
        probes.close()
    return Figures(
        count,
        reads,
        *p50s_p99s(times),
    )


def report(figures: list[Figures], rounds: int) -> bool:
    print(
        f"clusters: kubernetesClusters of VDC {VDC}, two node pools per cluster, {rounds} rounds, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    met = True
    for f in figures:
        ratio = f.p50["api"] / f.p50["raw"]
        met = met and f.reads == READS and ratio <= TARGET_OVER_RAW
        print(f"  {f.clusters} clusters: {f.reads} management-cluster reads per listing (target {READS})")
        for name, label in (("raw", f"{READS} list calls, official client:"), ("api", "kubernetesClusters:")):
            print(f"    {name:4} {label:34} p50 {f.p50[name]:7.1f} ms  p99 {f.p99[name]:7.1f} ms")
        print(f"    api / raw p50 {ratio:.2f} (target <= {TARGET_OVER_RAW})")
    return verdict(met)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, rounds=30, subnet=44)
    parser.add_argument("--sizes", default="20,100", help="numbers of clusters, comma-separated")
    args = parser.parse_args(argv)
    figures = [measure(args.subnet, int(size), args.rounds) for size in args.sizes.split(",")]
    return 0 if report(figures, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
