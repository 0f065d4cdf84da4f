"""The admin's view of each host through the API: its agent, certificate, renewal, last update and usage,
as the devstack world's agents report them, and partial data when an agent does not answer."""

from __future__ import annotations

import time
import tomllib
from datetime import datetime
from pathlib import Path

from cryptography import x509

from agent import __version__ as AGENT_VERSION
from devstack.world import World
from tests.apikit import Answer, GraphQL
from tests.orchestrator.hostkit import reached_again

GIB = 1024**3
DETAILS = """{ hosts { id zone name online cordoned agentVersion agentPackageVersion proxmoxVersion
  certificateExpiresAt
  certificateRenewal { lastSuccessAt lastError failures nextAttemptAt }
  lastUpdate { result fromVersion toVersion message at }
  usage { cpu { usedFraction cores } memory { usedBytes totalBytes } storage { usedBytes totalBytes } }
  drain { state } } }"""


def certificate_expiry(world: World, zone: str, node: str) -> datetime:
    settings = tomllib.loads(world.agents[(zone, node)].config_path.read_text())
    cert = x509.load_pem_x509_certificate(Path(settings["tls_cert"]).read_bytes())
    return cert.not_valid_after_utc


def test_the_admin_sees_each_hosts_agent_certificate_update_and_usage(api: GraphQL, world: World) -> None:
    answer = api(DETAILS, user="admin")
    assert answer.errors == [], answer.body
    hosts = answer.data["hosts"]
    assert len(hosts) == len(world.agents)
    for host in hosts:
        assert host["agentVersion"] == AGENT_VERSION
        assert host["agentPackageVersion"] is None  # the world's agents run from the checkout, no package
        assert host["proxmoxVersion"].startswith("9.")
        expires = datetime.fromisoformat(host["certificateExpiresAt"])
        assert expires == certificate_expiry(world, host["zone"], host["name"]).replace(microsecond=0)
        assert host["certificateRenewal"]["failures"] == 0
        assert host["certificateRenewal"]["lastError"] is None
        assert host["lastUpdate"]["result"] in ("none", "updated", "refused", "rolled-back", "failed")
        usage = host["usage"]
        # What the fake's /cluster/resources says of every node.
        assert usage["cpu"] == {"usedFraction": 0.02, "cores": 4}
        assert usage["memory"] == {"usedBytes": 2 * GIB, "totalBytes": 8 * GIB}
        assert usage["storage"] == {"usedBytes": 4 * GIB, "totalBytes": 64 * GIB}
        assert host["drain"] is None


def test_a_user_sees_hosts_without_the_admins_details(api: GraphQL) -> None:
    answer = api(DETAILS, user="alice")
    assert answer.errors == [], answer.body
    for host in answer.data["hosts"]:
        assert host["online"] is True
        for field in (
            "agentVersion",
            "agentPackageVersion",
            "proxmoxVersion",
            "certificateExpiresAt",
            "certificateRenewal",
            "lastUpdate",
            "usage",
            "drain",
        ):
            assert host[field] is None, field


def test_a_host_whose_agent_does_not_answer_is_partial_data(api: GraphQL, world: World) -> None:
    world.stop_agent("zone-b", "pve2")
    try:
        started = time.monotonic()
        answer: Answer = api(DETAILS, user="admin")
        elapsed = time.monotonic() - started
    finally:
        world.start_agent("zone-b", "pve2")
        reached_again(api, "zone-b", "pve2")
    hosts = answer.data["hosts"]
    index = next(i for i, h in enumerate(hosts) if h["id"] == "zone-b/pve2")
    silent = hosts[index]
    assert silent["agentVersion"] is None
    assert silent["certificateExpiresAt"] is None
    assert silent["usage"]["memory"]["totalBytes"] == 8 * GIB  # Proxmox still reports the node
    assert all(h["agentVersion"] == AGENT_VERSION for i, h in enumerate(hosts) if i != index)
    assert answer.codes == ["UNAVAILABLE"]
    error = answer.errors[0]
    assert error["path"] == ["hosts", index]
    assert error["extensions"]["zone"] == "zone-b/pve2"
    assert "pve2.zone-b" in error["message"]
    assert elapsed < 10
