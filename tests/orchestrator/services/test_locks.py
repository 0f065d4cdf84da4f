"""VDC locks: Leases of the management cluster, taken by threads as replicas would take them; in memory,
and the races and versions in the world's management cluster too (its Leases, through the real source)."""

from __future__ import annotations

import datetime
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from orchestrator.auth import Principal
from orchestrator.errors import Conflict
from orchestrator.services import locks
from orchestrator.services.context import Context, Sources
from orchestrator.sources.kube_objects import Lease
from orchestrator.sources.protocols import KubeApi
from tests.orchestrator.fakekube import FakeKube


@pytest.fixture
def memory() -> FakeKube:
    return FakeKube()


@pytest.fixture(params=["memory", "wired"])
def cluster(request: pytest.FixtureRequest) -> KubeApi:
    """Both management clusters: in memory, and the world's through the product's source."""
    source: KubeApi = request.getfixturevalue(request.param)
    return source


def on(source: KubeApi, subject: str = "tester") -> Context:
    """A request of ``subject`` whose management cluster is ``source``."""
    principal = Principal(subject=subject, name=subject, email="", roles=frozenset({"USER"}))
    return Context(principal=principal, sources=Sources(kube=source))


def vdc() -> str:
    return f"lock-{uuid.uuid4().hex[:8]}"


def test_one_holder_at_a_time_among_many_takers(cluster: KubeApi) -> None:
    vdc_id = vdc()
    inside = 0
    most_inside = 0
    entries = 0
    guard = threading.Lock()

    def take(n: int) -> None:
        nonlocal inside, most_inside, entries
        with locks.vdc_lock(on(cluster), vdc_id, holder=f"taker-{n}", wait=30):
            with guard:
                inside += 1
                entries += 1
                most_inside = max(most_inside, inside)
            time.sleep(0.05)
            with guard:
                inside -= 1

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(take, range(8)))
    assert entries == 8
    assert most_inside == 1


def test_a_lock_is_a_lease_named_after_the_vdc_held_by_a_random_per_call_holder(memory: FakeKube) -> None:
    vdc_id = vdc()
    with locks.vdc_lock(on(memory, "alice-sub"), vdc_id) as first:
        lease = memory.get_lease(f"fp-lock-vdc-{vdc_id}")
        assert lease is not None
        assert lease.holder == first.holder
        assert first.holder.startswith("alice-sub/")
        assert lease.duration_seconds == 30
    with locks.vdc_lock(on(memory, "alice-sub"), vdc_id) as second:
        assert second.holder != first.holder


def test_a_released_lock_is_free_at_once(memory: FakeKube) -> None:
    vdc_id = vdc()
    with locks.vdc_lock(on(memory), vdc_id):
        pass
    lease = memory.get_lease(locks.lease_name(vdc_id))
    assert lease is not None
    assert lease.holder is None
    # Taken without waiting: a held lock would answer Conflict once the (short) wait ran out.
    with locks.vdc_lock(on(memory), vdc_id, wait=0.5) as held:
        assert held.holder


def test_a_busy_lock_answers_conflict_when_the_wait_runs_out(memory: FakeKube) -> None:
    vdc_id = vdc()
    with locks.vdc_lock(on(memory), vdc_id, holder="first"):
        started = time.monotonic()
        busy = pytest.raises(Conflict, match=f"VDC {vdc_id} is busy .*retry")
        with busy, locks.vdc_lock(on(memory), vdc_id, holder="second", wait=0.4):
            pass
        assert 0.4 <= time.monotonic() - started < 2


def test_an_expired_lease_is_taken_over(memory: FakeKube) -> None:
    vdc_id = vdc()
    name = locks.lease_name(vdc_id)
    long_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    memory.write_lease(Lease(name, "crashed-replica/1", long_ago, long_ago, 30, 3), None)
    started = time.monotonic()
    with locks.vdc_lock(on(memory), vdc_id, holder="survivor", wait=1) as held:
        assert time.monotonic() - started < 1
        lease = memory.get_lease(name)
        assert lease is not None
        assert lease.holder == held.holder
        assert lease.transitions == 4


def test_a_live_holder_keeps_its_lock_past_the_ttl_by_renewing_it(memory: FakeKube) -> None:
    vdc_id = vdc()
    with locks.vdc_lock(on(memory), vdc_id, holder="slow", ttl=1) as held:
        first = memory.get_lease(held.name)
        time.sleep(1.6)
        with pytest.raises(Conflict), locks.vdc_lock(on(memory), vdc_id, holder="impatient", wait=0.3):
            pass
        renewed = memory.get_lease(held.name)
        assert first is not None
        assert renewed is not None
        assert renewed.holder == held.holder
        assert renewed.renew_time is not None
        assert first.renew_time is not None
        assert renewed.renew_time > first.renew_time
        assert held.lost is False


def test_every_lock_write_changes_the_lease(cluster: KubeApi) -> None:
    vdc_id = vdc()
    versions: list[str | None] = []
    for _ in range(3):
        with locks.vdc_lock(on(cluster), vdc_id) as held:
            versions.append(held.lease.resource_version)
        lease = cluster.get_lease(held.name)
        assert lease is not None
        versions.append(lease.resource_version)
    assert len(set(versions)) == len(versions)


def test_a_holder_whose_lease_was_taken_does_not_release_the_new_holder(memory: FakeKube) -> None:
    vdc_id = vdc()
    name = locks.lease_name(vdc_id)
    with locks.vdc_lock(on(memory), vdc_id, holder="paused", ttl=30):
        lease = memory.get_lease(name)
        assert lease is not None
        now = datetime.datetime.now(datetime.UTC)
        # What a takeover after expiry looks like to the paused holder: someone else holds it now.
        memory.write_lease(
            Lease(name, "newcomer/1", now, now, 30, lease.transitions + 1), lease.resource_version
        )
    after = memory.get_lease(name)
    assert after is not None
    assert after.holder == "newcomer/1"
