"""Fixtures of the edge gateways' packet tests: root, the tools, a network of namespaces per module."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from agent.gateways import GatewayManager
from tests.gateway.topology import Net


@pytest.fixture(scope="module", autouse=True)
def _root_and_tools() -> None:
    if os.geteuid() != 0:
        pytest.fail("the edge gateways' packet tests run as root (network namespaces, nftables)")
    missing = [tool for tool in ("ip", "nft", "bridge", "sysctl") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: make install installs nftables (iproute2 is Debian's)")


@pytest.fixture(scope="module")
def net() -> Iterator[Net]:
    """Two nodes, their joined bridges, three VMs and the internet; removed whole afterwards."""
    network = Net().build()
    try:
        yield network
    finally:
        network.destroy()


@pytest.fixture(scope="module")
def nodes(net: Net, tmp_path_factory: pytest.TempPathFactory) -> dict[int, GatewayManager]:
    """The gateway managers of node 1 and node 2 (their agents' part), each with its own kept specs."""
    return {
        n: GatewayManager(f"n{n}", tmp_path_factory.mktemp(f"gateways-n{n}"), host=net.node(n))
        for n in (1, 2)
    }
