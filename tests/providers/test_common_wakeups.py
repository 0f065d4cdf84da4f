"""Wakeups (one reconcile per owner at a time, woken by what it waits for), the timing settings, and
which Machine's change wakes which ProxmoxMachine."""

from __future__ import annotations

import threading

import pytest

from providers.common.settings import seconds
from providers.common.wakeups import Wakeups, run_woken
from providers.infrastructure.handlers import awaited_machine

KEY = ("vdc-demo", "m-1")


def test_a_wake_with_no_reconcile_under_way_runs_one_at_once() -> None:
    ran: list[str] = []
    assert run_woken(Wakeups(), KEY, lambda: ran.append("now"))
    assert ran == ["now"]


def test_a_wake_during_a_reconcile_marks_it_woken_instead_of_running_a_second() -> None:
    wakeups, ran = Wakeups(), []
    with wakeups.serial(KEY):
        assert not wakeups.woken(KEY)
        assert not run_woken(wakeups, KEY, lambda: ran.append("second"))
        assert wakeups.woken(KEY)
    assert ran == []
    with wakeups.serial(KEY):  # the next reconcile starts unwoken
        assert not wakeups.woken(KEY)


def test_reconciles_of_one_owner_run_one_at_a_time_and_of_two_owners_at_once() -> None:
    wakeups = Wakeups()
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        with wakeups.serial(KEY):
            inside.set()
            release.wait(5)
            order.append("first")

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(5)
    with wakeups.serial(("vdc-demo", "other")):  # another owner does not wait
        order.append("other")
    release.set()
    thread.join(5)
    with wakeups.serial(KEY):
        order.append("second")
    assert order == ["other", "first", "second"]


def test_timings_come_from_the_environment_and_default_to_productions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert seconds("RETRY_DELAY", 5.0) == 5.0
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_RETRY_DELAY", "0.5")
    assert seconds("RETRY_DELAY", 5.0) == 0.5
    for wrong in ("soon", "0", "-1"):
        monkeypatch.setenv("FLEXPLANE_PROVIDERS_RETRY_DELAY", wrong)
        with pytest.raises(ValueError, match="FLEXPLANE_PROVIDERS_RETRY_DELAY"):
            seconds("RETRY_DELAY", 5.0)


def machine(**spec: object) -> dict[str, object]:
    ref = {"apiGroup": "infrastructure.flexplane.io", "kind": "ProxmoxMachine", "name": "pm-1"}
    return {
        "metadata": {"name": "m-1", "namespace": "vdc-demo"},
        "spec": {"infrastructureRef": ref, "bootstrap": {"dataSecretName": "m-1"}, **spec},
    }


def test_a_machine_with_its_bootstrap_data_and_no_provider_id_wakes_its_proxmox_machine() -> None:
    assert awaited_machine(machine()) == ("vdc-demo", "pm-1")


@pytest.mark.parametrize(
    "change",
    [
        {"bootstrap": {}},
        {"providerID": "proxmox://x"},
        {
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "DockerMachine",
                "name": "d",
            }
        },
    ],
    ids=["no bootstrap data yet", "already made", "another provider's"],
)
def test_other_machines_wake_nothing(change: dict[str, object]) -> None:
    assert awaited_machine(machine(**change)) is None


def test_a_machine_being_deleted_wakes_nothing() -> None:
    body = machine()
    body["metadata"] = {"name": "m-1", "namespace": "vdc-demo", "deletionTimestamp": "2026-12-01T00:00:00Z"}
    assert awaited_machine(body) is None
