"""Bringing many VMs' firewalls in line: at most PER_NODE at once per node, failures kept per VM."""

from __future__ import annotations

import threading
import time
from collections import Counter

from orchestrator.errors import Unavailable
from orchestrator.models.security_groups import SecurityGroup
from orchestrator.services.security_groups.apply import PER_NODE, Member, _per_node, referencing


def vms(node: str, count: int, start: int = 100) -> list[Member]:
    return [Member("z", node, vmid, f"vm{vmid}", ("default",)) for vmid in range(start, start + count)]


def test_at_most_four_vms_per_node_are_written_at_once_and_nodes_run_side_by_side() -> None:
    running: Counter[str] = Counter()
    most: Counter[str] = Counter()
    started: Counter[str] = Counter()
    guard = threading.Lock()
    # The first four of each node wait for each other and for the other node's: all eight at once.
    together = threading.Barrier(2 * PER_NODE)

    def work(vm: Member) -> None:
        with guard:
            running[vm.node] += 1
            started[vm.node] += 1
            first = started[vm.node] <= PER_NODE
            most[vm.node] = max(most[vm.node], running[vm.node])
        if first:
            together.wait(timeout=10)
        else:
            time.sleep(0.005)
        with guard:
            running[vm.node] -= 1

    failures = _per_node([*vms("a", 12), *vms("b", 9, 200)], work)
    assert failures == {}
    assert most == {"a": PER_NODE, "b": PER_NODE}
    assert started == {"a": 12, "b": 9}


def test_a_vm_that_fails_is_reported_and_the_others_are_done() -> None:
    done: list[int] = []

    def work(vm: Member) -> None:
        if vm.vmid == 102:
            raise Unavailable("z/a", "host a is unreachable")
        done.append(vm.vmid)

    failures = _per_node(vms("a", 5), work)
    assert list(failures) == ["z/102"]
    assert sorted(done) == [100, 101, 103, 104]


def test_the_vms_whose_rules_name_a_group_are_found() -> None:
    groups = {
        "default": SecurityGroup("default"),
        "web": SecurityGroup("web"),
        "db": SecurityGroup.from_spec(
            {"name": "db", "rules": [{"direction": "in", "protocol": "tcp", "group": "web"}]}
        ),
    }
    members = [
        Member("z", "a", 100, "w", ("web",)),
        Member("z", "a", 101, "d", ("db",)),
        Member("z", "a", 102, "x", ("default",)),
    ]
    assert [m.vmid for m in referencing(members, groups, {"web"})] == [101]
    assert referencing(members, groups, {"db"}) == []
