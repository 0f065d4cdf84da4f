"""Fixtures for agentclient's own tests: client TLS material from the dev PKI."""

from __future__ import annotations

import pytest

from agentclient import AgentTarget, ClientTLS
from devstack.pki import CertificateAuthority
from tests import addresses

# Addresses where no agent listens.
NOWHERE = addresses.address(addresses.AGENTCLIENT_SUITE, 250)
ELSEWHERE = addresses.address(addresses.AGENTCLIENT_SUITE, 251)


@pytest.fixture(scope="session")
def client_tls(tmp_path_factory: pytest.TempPathFactory) -> ClientTLS:
    directory = tmp_path_factory.mktemp("agentclient-pki")
    ca = CertificateAuthority.create(directory)
    cert, key = ca.issue_client("flexplane-orchestrator", directory, "orchestrator")
    return ClientTLS.from_files(ca.cert_path, cert, key)


@pytest.fixture
def target() -> AgentTarget:
    """An agent that is never running: nothing listens on NOWHERE."""
    return AgentTarget(identity="pve1.zone1.agents.flexplane", address=f"{NOWHERE}:7443")
