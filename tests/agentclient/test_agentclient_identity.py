"""Host identities: the DNS names agents' certificates carry."""

from __future__ import annotations

import pytest

from agentclient.identity import host_identity


def test_a_host_identity_names_node_zone_and_the_agents_domain() -> None:
    assert host_identity("zone1", "pve1") == "pve1.zone1.agents.flexplane"


@pytest.mark.parametrize("label", ["", "-pve", "pve-", "pve_1", "pve.1", "pve 1", "a" * 64, "pvé"])
def test_it_refuses_a_node_that_is_not_a_dns_label(label: str) -> None:
    with pytest.raises(ValueError, match=r"node .* is not a DNS label"):
        host_identity("zone1", label)


@pytest.mark.parametrize("label", ["", "zone.1", "zone/1"])
def test_it_refuses_a_zone_that_is_not_a_dns_label(label: str) -> None:
    with pytest.raises(ValueError, match=r"zone .* is not a DNS label"):
        host_identity(label, "pve1")


def test_it_allows_the_longest_label() -> None:
    assert host_identity("z", "a" * 63) == "a" * 63 + ".z.agents.flexplane"
