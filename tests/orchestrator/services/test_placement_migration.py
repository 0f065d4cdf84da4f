"""Placement of a VM that moves (a drain's): every storage its disks are on must be on the new host."""

from __future__ import annotations

import pytest

from orchestrator.services.placement import NoCapacity
from tests.orchestrator.services.test_placement import cluster, host, place, request, storage


def test_a_host_without_every_storage_of_the_vms_disks_is_rejected() -> None:
    resources = [*cluster("a", "b"), storage("fast", on="b")]
    placement = place(request(other_storages=("fast",)), [host("a"), host("b")], resources)
    assert placement.host == "b"
    assert placement.rejected[0].host == "a"
    assert placement.rejected[0].reason == "storage fast is not available here"


def test_a_storage_that_is_not_available_counts_as_missing() -> None:
    resources = [*cluster("a"), storage("fast", on="a", status="unknown")]
    with pytest.raises(NoCapacity) as refused:
        place(request(other_storages=("fast",)), [host("a")], resources)
    assert "a: storage fast is not available here" in refused.value.message
