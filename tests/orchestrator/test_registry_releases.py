"""The world's agent releases come from its own OCI registry (devstack/registry.py): the channel names
the digest, the nodes enrolled with the registry's read-only access and pulled the release with it,
and a renewal hands the access again, with the certificate. An admin has a host's agent check the
channel now, through the API and the portal's hosts page."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import ec

from agent import __version__
from agentclient.enrollment import RENEW_PATH, renewal_message, sign_proof
from devstack.registry import NODES
from devstack.world import World
from tests.apikit import GraphQL
from tests.enrollkit import csr, join, join_token, post, remove_host
from tests.portal.sessionkit import csrf_token, login
from tests.releasekit import get_manifest

ZONE = "zone-b"


def channel(world: World) -> dict[str, object]:
    url = f"{world.https_url}/agent/releases/channel.json"
    response = requests.get(url, verify=str(world.pki / "ca/ca.crt"), timeout=10)
    assert response.status_code == 200, response.text
    document: dict[str, object] = response.json()
    return document


def test_the_channel_names_the_release_the_world_pushed_to_its_registry_by_digest(world: World) -> None:
    registry = world.registry
    assert registry is not None
    digest = "sha256:" + hashlib.sha256(get_manifest(registry, __version__)).hexdigest()
    assert channel(world) == {
        "version": __version__,
        "pinned": False,
        "registry": {"repository": registry.repository, "digest": digest},
    }
    assert world.release is not None
    artifact = requests.get(
        f"{world.https_url}/agent/releases/{world.release.artifact.name}",
        verify=str(world.pki / "ca/ca.crt"),
        timeout=10,
    )
    assert artifact.status_code == 404  # the orchestrator serves no release bytes


def test_every_node_installed_its_release_from_the_registry_with_the_read_only_access_it_enrolled_with(
    world: World,
) -> None:
    registry = world.registry
    assert registry is not None
    assert world.release is not None
    for agent in world.agents.values():
        etc = agent.root / "etc" / "flexplane"
        access = json.loads((etc / "registry.json").read_text())
        assert (access["registry"], access["username"]) == (registry.address, NODES)
        assert access["password"] == registry.passwords[NODES]
        assert (etc / "registry.json").stat().st_mode & 0o777 == 0o600
        assert f'update_registry_credentials = "{etc / "registry.json"}"' in (etc / "agent.toml").read_text()
        installed = agent.root / "opt" / "flexplane-agent" / "current" / "flexplane-agent.pyz"
        assert hashlib.sha256(installed.read_bytes()).hexdigest() == world.release.manifest.sha256


@pytest.fixture
def joined(world: World, api: GraphQL) -> Iterator[tuple[str, ec.EllipticCurvePrivateKey, dict[str, object]]]:
    """Host pve40 enrolled by hand: its certificate, key and the settings the join answered."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = "pve40.zone-b.agents.flexplane"
    endpoint = f"127.{world.cfg.subnet}.2.140:7443"
    response = join(world, join_token(api, ZONE, "pve40"), csr(name, key), endpoint)
    assert response.status_code == 200, response.text
    yield response.json()["certificate"], key, response.json()["settings"]
    remove_host(world, ZONE, "pve40")


def test_a_join_and_a_renewal_both_hand_the_registrys_read_only_access(
    world: World, joined: tuple[str, ec.EllipticCurvePrivateKey, dict[str, object]]
) -> None:
    registry = world.registry
    assert registry is not None
    current, key, settings = joined
    expected = {
        "registry": registry.address,
        "username": NODES,
        "password": registry.passwords[NODES],
        "ca": registry.ca.cert_pem.decode(),
    }
    assert settings["update_registry"] == expected

    new_csr = csr("pve40.zone-b.agents.flexplane", ec.generate_private_key(ec.SECP256R1()))
    stamp = int(time.time())
    body = {
        "csr": new_csr,
        "certificate": current,
        "timestamp": stamp,
        "signature": sign_proof(key, renewal_message(stamp, new_csr)),
    }
    renewed = post(world, RENEW_PATH, body)
    assert renewed.status_code == 200, renewed.text
    assert renewed.json()["settings"]["update_registry"] == expected


# ------------------------------------------------------------------------------ update a host now

UPDATE_NOW = """mutation($zone: String!, $host: String!) {
  updateHostNow(zone: $zone, host: $host) {
    update { host { zone name } outcome offeredVersion applying runningVersion }
    errors { field message code } } }"""


def test_an_admin_has_a_hosts_agent_check_the_channel_now_through_its_own_updater(
    world: World, api: GraphQL
) -> None:
    answer = api(UPDATE_NOW, user="admin", variables={"zone": "zone-a", "host": "pve2"})
    assert answer.data["updateHostNow"]["errors"] == []
    assert answer.data["updateHostNow"]["update"] == {
        "host": {"zone": "zone-a", "name": "pve2"},
        "outcome": f"{__version__} is the channel's version: nothing to do",
        "offeredVersion": __version__,
        "applying": False,
        "runningVersion": __version__,
    }
    missing = api(UPDATE_NOW, user="admin", variables={"zone": "zone-a", "host": "pve99"})
    assert [e["code"] for e in missing.data["updateHostNow"]["errors"]] == ["NOT_FOUND"]
    refused = api(UPDATE_NOW, user="alice", variables={"zone": "zone-a", "host": "pve2"})
    assert [e["extensions"]["code"] for e in refused.errors] == ["FORBIDDEN"]


def test_update_now_on_the_hosts_page_says_what_the_agent_did(world: World) -> None:
    admin, _ = login(world, "admin", "/admin/")
    page = admin.get(f"{world.url}/admin/hosts/", timeout=60)
    assert 'action="/admin/hosts/zone-a/pve3/update-now/" data-action="host.update-now"' in page.text
    done = admin.post(
        f"{world.url}/admin/hosts/zone-a/pve3/update-now/",
        data={"csrfmiddlewaretoken": csrf_token(admin, world)},
        headers={"Referer": f"{world.url}/admin/hosts/"},
        timeout=60,
    )
    assert done.status_code == 200
    assert f"Host zone-a/pve3: {__version__} is the channel&#x27;s version: nothing to do." in done.text
