"""No secret ever lands in a log line or an audit record (OWASP API Security Top 10: API3, excessive
data exposure; ASVS V7: logs hold no credentials).

The world's orchestrator and agents write every line they log under its scratch directory, and the
audit records are Events of its cluster. This suite does what hands the platform secrets (tokens in
every request, a cloud-init user data and SSH key in a create, a join token answered once, a portal
session), then greps every line the world logged so far and every audit record for each secret the
run used: the users' tokens, the deployment's secret key, the portal's OIDC client secret, the Proxmox
API token secrets of the agents, any JWT, and what this suite sent. The whole run's logs are searched
again when its world stops (``tests/conftest.py``, ``tests/secretscan.py``), after every suite.
"""

from __future__ import annotations

import json
import uuid

import pytest

from devstack.world import World
from orchestrator.services import audit
from tests import secretscan
from tests.apikit import GraphQL
from tests.kubekit import world_kube
from tests.portal.sessionkit import COOKIE, login
from tests.vmkit import DEBIAN, SMALL, STANDARD

# What a create carries that is the tenant's own secret: a password in its user data.
USER_DATA_SECRET = f"s3cret-{uuid.uuid4().hex}"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFwQ0mQvHk9Q2v8hFq7mDqk3z2C6lY3dQe0m1s0ZCwBx probe@secrets"
CREATE = """mutation($input: CreateVirtualMachineInput!) { createVirtualMachine(input: $input) {
  virtualMachine { id } errors { code message } } }"""
JOIN_TOKEN = """mutation($zone: String!, $host: String!) { createHostJoinToken(zone: $zone, host: $host) {
  joinToken { token } errors { code message } } }"""


def the_records(world: World) -> list[str]:
    """Every audit record the world's Events hold, as written."""
    source = world_kube(world)
    try:
        return [
            entry.annotations[audit.RECORD_ANNOTATION]
            for entry in source.list_events(f"{audit.AUDIT_LABEL}=true", 100_000)
        ]
    finally:
        source.core.api_client.close()


@pytest.fixture(scope="module")
def secrets_used(api: GraphQL, world: World) -> dict[str, str]:
    """Every secret the run handed the platform, by what it is; this suite's uses happen here."""
    used = {f"{user}'s access token": api.token(user) for user in ("admin", "alice", "bob")}
    used.update(secretscan.world_secrets(world))

    # A create carrying user data with a password and an SSH key (whatever it answers).
    user_data = f"#cloud-config\nchpasswd:\n  list: |\n    root:{USER_DATA_SECRET}\n"
    api.raw(
        CREATE,
        headers={"Authorization": f"Bearer {api.token('alice')}", "FlexPlane-VDC-ID": "demo"},
        variables={
            "input": {
                "name": f"secrets-{uuid.uuid4().hex[:6]}",
                "computeProfile": SMALL,
                "storageProfile": STANDARD,
                "image": DEBIAN,
                "zone": "nowhere",  # refused before anything is made: the inputs went through all the same
                "userData": user_data,
                "sshKeys": [SSH_KEY],
            }
        },
    )
    used["the user data's password"] = USER_DATA_SECRET
    used["the SSH key's body"] = SSH_KEY.split()[1]

    # A join token, answered once.
    made = api(JOIN_TOKEN, user="admin", variables={"zone": "zone-a", "host": f"probe{uuid.uuid4().hex[:6]}"})
    token = (made.data or {}).get("createHostJoinToken", {}).get("joinToken")
    if token:
        used["a join token"] = token["token"]

    # A portal session, signed in through the identity provider.
    session, _ = login(world, "alice")
    session.get(f"{world.url}/vdc/demo/", timeout=60)
    cookie = session.cookies.get(COOKIE, domain=world.cfg.orchestrator_host)
    assert cookie
    used["alice's portal session cookie"] = cookie
    return used


def test_no_log_line_holds_a_secret(world: World, secrets_used: dict[str, str]) -> None:
    assert secretscan.logged_lines(world), "the world logged nothing: nothing was checked"
    leaks = secretscan.leaks(world, secrets_used)
    assert not leaks, "\n".join(leaks[:20])


def test_no_audit_record_holds_a_secret(world: World, secrets_used: dict[str, str]) -> None:
    records = the_records(world)
    assert records, "no audit record was written: nothing was checked"
    for raw in records:
        record = json.loads(raw)
        text = json.dumps(record)
        assert not [what for what, secret in secrets_used.items() if secret and secret in text], record


def test_the_audit_records_of_this_suite_are_there_to_be_checked(
    world: World, secrets_used: dict[str, str]
) -> None:
    operations = {json.loads(raw)["operation"] for raw in the_records(world)}
    assert {"createVirtualMachine", "createHostJoinToken"} <= operations
