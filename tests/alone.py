"""The modules `make test` runs alone, after the parallel run: beside another worker's world, their bursts
miss these deadlines. tests/conftest.py marks their tests ``alone`` (the load suite marks itself too), and
``python -m tests.alone`` prints their paths, so that the run alone imports these modules only rather than
collecting the whole suite to deselect it."""

from __future__ import annotations

ALONE = (
    # Twenty creates at once, each listing both zones through agents bound to six calls in flight.
    "tests/orchestrator/graphql/test_vm_concurrency.py",
    # Twenty creates at once per quota dimension, through four replicas and slowed nodes.
    "tests/security/test_quota_race.py",
    # Counts the calls a page makes: on a saturated machine a call past the agents' one-second deadline
    # is failed over to another node, and counted twice.
    "tests/portal/light/test_dashboard_tasks.py",
    # The load suite, which saturates the machine.
    "tests/resilience/test_load.py",
    # The disaster-recovery rehearsal: its meshed world's agent calls, through the hub, miss the agents'
    # four-second deadline beside other workers' worlds; and the time to recover it records is the
    # platform's, not the machine's load.
    "tests/recovery/test_rehearsal.py",
    # The rehearsal with a tenant cluster: the time to recover it records is the platform's too.
    "tests/recovery/test_cluster_rehearsal.py",
)

if __name__ == "__main__":
    print(" ".join(ALONE))
