"""Every loopback address the tests listen on, derived from FLEXPLANE_TEST_SUBNET and the xdist worker.

Each pytest-xdist worker (``gw0``, ``gw1``, ...) brings up worlds and servers of its own, so each
owns a block of ``SUBNETS_PER_WORKER`` second octets, ``127.<BASE + index * SUBNETS_PER_WORKER + n>``:
n = 0 for the session's world (``WORLD``), 1 for the small world whose neighbours
``tests/orchestrator/test_health.py`` stops (``FRAGILE``). The
servers a suite starts on its own (an agent, a fake zone, an identity provider) listen on the worker's
world subnet, at a third octet of their own (below), away from the world's 127.<WORLD>.{0,1,2}.x.
Ports are picked free per address, and no two workers share an address, so workers never clash.

Without xdist, the run is worker 0. ``BASE`` defaults to 30, and the blocks must stay away from
``make dev``'s 127.10 and the benchmarks' 127.40, 127.41, 127.44, 127.45, 127.47 and 127.48: a run
that would reach one fails at once.
"""

from __future__ import annotations

import os

BASE = int(os.environ.get("FLEXPLANE_TEST_SUBNET", "30"))
SUBNETS_PER_WORKER = 2
# Who else uses a 127.<n> subnet on this machine.
RESERVED = {
    10: "make dev",
    40: "benchmarks/vm_list.py",
    41: "benchmarks/portal_pages.py",
    44: "benchmarks/console.py",
    45: "benchmarks/mesh.py",
    47: "benchmarks/providers.py",
    48: "benchmarks/throughput.py",
}


def worker_index(name: str | None = None) -> int:
    """The xdist worker's number (``gw3``: 3); 0 without xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "") if name is None else name
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def subnet(n: int, worker: int | None = None) -> int:
    """The second octet of the worker's ``n``-th subnet."""
    value = BASE + (worker_index() if worker is None else worker) * SUBNETS_PER_WORKER + n
    if value in RESERVED:
        raise RuntimeError(
            f"the tests' subnet 127.{value} is {RESERVED[value]}'s: choose another FLEXPLANE_TEST_SUBNET"
        )
    if not 1 <= value <= 254:
        raise RuntimeError(
            f"the tests' subnet 127.{value} is out of range: choose a smaller FLEXPLANE_TEST_SUBNET"
        )
    return value


WORLD = subnet(0)
FRAGILE = subnet(1)

# Third octets on the world subnet for the servers suites start on their own.
RELEASE_PLATFORM = 60  # tests/releasekit.py: the orchestrator over HTTPS, its kube emulator and identity
AGENT_SUITE = 200  # tests/agent: agent processes, and addresses where nothing listens
AGENTCLIENT_SUITE = 201  # tests/agentclient: an address where no agent listens
IDENTITY_SUITE = 202  # tests/devstack: identity providers
MIGRATION_ZONE = 203  # tests/devstack/test_fakezones_migrate.py: a fake zone's nodes (port 8006)
FAKE_ZONE = 204  # tests/devstack/test_fakezones.py: a fake zone's node (port 8006)
SNAPSHOT_ZONE = 205  # tests/devstack/test_fakesnapshots.py: a fake zone's node (port 8006)
LIGHT_ZONES = 206  # tests/orchestrator/lightworld.py: its zones' nodes, one third octet a zone (206, 207)
LIGHT_PORTAL = 208  # tests/portal/served.py: the portal served from the test's process
DOCTOR = 209  # tests/orchestrator/test_doctor.py: bare clusters, an old API server, dead addresses
PROBES = 210  # tests/orchestrator/test_probes.py: the probes of the processes that serve nothing else
BACKUP = 211  # tests/orchestrator/test_backup.py: Kubernetes emulators and an S3 server (moto)
SNI_SUITE = 212  # tests/providers/sni: the SNI router, API server and Konnectivity stand-ins
ETCD_SUITE = 213  # tests/orchestrator/test_etcd_backup.py: throwaway etcd members and an S3 server (moto)
CLOUD_CONTROLLER_POD = 214  # tests/providers/controlplane: a rendered cloud controller's tenant API server
APISERVER_METRICS = 215  # tests/providers/controlplane: an API server's /metrics over mutual TLS
ETCD_RESTORE = 216  # tests/providers/controlplane/test_restore.py: a tenant API server, an S3 server
PROVIDERS_METRICS = 217  # tests/providers/test_metrics.py: python -m providers' /metrics, its emulator
DISK_ZONE = 218  # tests/devstack/test_fakedisks.py: a fake zone's nodes (port 8006)
IMAGE_MIRROR = 219  # tests/packaging/test_pin_images.py: a registry standing in for an air-gapped mirror
SERVE = 220  # tests/flexplane/test_serve.py: python -m flexplane.serve's endpoints


def address(third: int, fourth: int, on: int = WORLD) -> str:
    """``127.<on>.<third>.<fourth>``: by default on this worker's world subnet."""
    return f"127.{on}.{third}.{fourth}"
