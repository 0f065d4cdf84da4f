"""Leader election on a Lease of the Kubernetes emulator: one replica leads; another takes over once the
first releases the Lease, and a leader whose Lease was taken over is told to stop."""

from __future__ import annotations

import dataclasses
import datetime
import threading
from collections.abc import Iterator

import pytest
from kubernetes import client, config

from devstack.kube import KubeServer
from orchestrator.sources.kube import KubeSource
from providers import leader
from tests.apikit import eventually

NAMESPACE = "flexplane"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeSource]:
    with KubeServer.start() as server:
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("leader") / "kubeconfig")
        api_client = config.new_client_from_config(config_file=str(kubeconfig))
        namespace = client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        client.CoreV1Api(api_client).create_namespace(namespace)  # the chart's release namespace
        yield KubeSource(api_client, NAMESPACE, 2.0)
        api_client.close()


def test_a_second_replica_waits_and_leads_once_the_first_lets_go(source: KubeSource) -> None:
    stop_a, stop_b = threading.Event(), threading.Event()
    led_b = threading.Event()

    def second() -> None:
        with leader.leadership(source, "b", stop_b, name="lead-1", ttl=5, retry=0.05) as held:
            if held is not None:
                led_b.set()

    with leader.leadership(source, "a", stop_a, name="lead-1", ttl=5, retry=0.05) as held:
        assert held is not None
        assert held.holder.startswith("a/")
        waiting = threading.Thread(target=second)
        waiting.start()
        assert not led_b.wait(0.3)  # b waits while a leads
    waiting.join(5)
    assert led_b.is_set()  # a released the Lease on the way out: b led at once (not after the ttl)


def test_a_replica_stopped_while_waiting_never_leads(source: KubeSource) -> None:
    stop = threading.Event()
    with leader.leadership(source, "a", threading.Event(), name="lead-2", ttl=5, retry=0.05) as held:
        assert held is not None
        threading.Timer(0.2, stop.set).start()
        with leader.leadership(source, "b", stop, name="lead-2", ttl=5, retry=0.05) as waiting:
            assert waiting is None


def test_a_leader_whose_lease_is_taken_over_is_told_to_stop(source: KubeSource) -> None:
    stop = threading.Event()
    with leader.leadership(source, "a", stop, name="lead-3", ttl=1, retry=0.05) as held:
        assert held is not None
        leader.watch(held, stop, period=0.05)
        # Another replica took it (as after this one was paused past its ttl).
        current = source.get_lease("lead-3")
        assert current is not None
        now = datetime.datetime.now(datetime.UTC)
        source.write_lease(
            dataclasses.replace(current, holder="c/1", renew_time=now, transitions=current.transitions + 1),
            current.resource_version,
        )
        eventually(stop.is_set, 5.0, "the stop of a leader that lost its Lease")
        assert held.lost
    lease = source.get_lease("lead-3")
    assert lease is not None
    assert lease.holder == "c/1"  # not released: it was no longer ours
