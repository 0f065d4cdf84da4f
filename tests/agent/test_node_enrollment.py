"""The bootstrap's Proxmox step on a node, and its undoing, against a fake zone of two nodes: the snippets
storage is given the content type the agent needs (or, when the operator keeps storages to themselves,
the bootstrap refuses before changing anything and names the command), and ``flexplane-agent remove``
takes back one node's token while the other node's agent keeps working.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import requests

from agent.__main__ import main
from agent.bootstrap import BootstrapError, Options, setup_proxmox
from agent.pveadmin import AGENT_USER, ApiAdmin, Change, token_id
from agentclient.enrollment import parse_join_token
from devstack.fakezones import FakeZones
from tests import addresses

ZONE = "zone-n"
NODES = {
    "pve1": addresses.address(addresses.AGENT_SUITE, 91),
    "pve2": addresses.address(addresses.AGENT_SUITE, 92),
}


@dataclass
class Zone:
    """A fake zone of two nodes, and root's password in a file as the commands take it."""

    fakes: FakeZones
    password_file: Path

    def admin(self, node: str) -> ApiAdmin:
        pve = self.fakes[ZONE].pve
        return ApiAdmin(
            self.fakes[ZONE].url(node), "root@pam", pve.password, ca_file=Path(self.fakes.certfile)
        )

    def content(self, storage: str) -> set[str]:
        text = self.fakes.on_loop(lambda: self.fakes[ZONE].pve.storages[storage]["content"])
        return set(str(text).split(","))

    def answers(self, node: str, token: str, secret: str) -> int:
        """The status of a call the agent makes, with that token, at the node's Proxmox API."""
        return requests.get(
            f"{self.fakes[ZONE].url(node)}/api2/json/version",
            headers={"Authorization": f"PVEAPIToken={token}={secret}"},
            verify=self.fakes.certfile,
            timeout=10,
        ).status_code


@pytest.fixture
def zone(tmp_path: Path) -> Iterator[Zone]:
    fakes = FakeZones({ZONE: NODES}, {ZONE: "s3cret"}, tmp_path / "pki")
    fakes.start()
    try:
        password = tmp_path / "root-password"
        password.write_text(fakes[ZONE].pve.password)
        yield Zone(fakes, password)
    finally:
        fakes.stop()


def options(tmp_path: Path, node: str) -> Options:
    """The bootstrap's options for node, as parse_options makes them, with a root of its own."""
    expires = int((datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).timestamp())
    root = tmp_path / node
    return Options(
        orchestrator="https://flexplane.example.com",
        token=parse_join_token(f"{ZONE}.{node}.{expires}.0123456789abcdef.{'s' * 43}"),
        root=root,
        endpoint=f"{NODES[node]}:7443",
        ca_file=None,
        proxmox_url=f"https://{NODES[node]}:8006",
        proxmox_ca=None,
        image_cache=root / "var/cache/flexplane",
        snippets_dir=root / "var/lib/vz/snippets",
        install_dir=root / "opt/flexplane-agent",
    )


def test_the_bootstrap_gives_the_snippets_storage_its_content_type_and_keeps_the_others(
    zone: Zone, tmp_path: Path
) -> None:
    before = zone.content("local")
    assert "snippets" not in before  # as Proxmox leaves storage local
    setup_proxmox(zone.admin("pve1"), options(tmp_path, "pve1"))
    assert zone.content("local") == before | {"snippets"}
    assert zone.admin("pve1").ensure_snippets("local") is Change.UNCHANGED


def test_told_not_to_change_storages_the_bootstrap_refuses_naming_the_storage_and_the_command(
    zone: Zone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = zone.content("local")
    keep = replace(options(tmp_path, "pve1"), storage_changes=False)
    with pytest.raises(BootstrapError) as refused:
        setup_proxmox(zone.admin("pve1"), keep)
    command = f"pvesm set local --content {','.join(sorted(before | {'snippets'}))}"
    assert "storage local does not allow snippets" in str(refused.value)
    assert f"enable it: {command}" in str(refused.value)
    assert "Nothing was written" in refused.value.plan
    assert zone.content("local") == before
    assert AGENT_USER not in zone.admin("pve1").users()  # refused before anything was changed


def test_removing_one_node_leaves_the_other_nodes_agent_working(
    zone: Zone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, _ = setup_proxmox(zone.admin("pve1"), options(tmp_path, "pve1"))
    two, _ = setup_proxmox(zone.admin("pve2"), options(tmp_path, "pve2"))
    acl_before = zone.admin("pve2").acl()
    capsys.readouterr()

    api = ["--proxmox-admin", "api", "--proxmox-url", zone.fakes[ZONE].url("pve2")]
    api += ["--proxmox-password-file", str(zone.password_file), "--proxmox-ca", zone.fakes.certfile]
    assert main(["remove", "--node", "pve1", *api]) == 0

    said = capsys.readouterr().out
    assert f"proxmox token {token_id('pve1')}: removed" in said
    assert f"kept: the tokens of other nodes use it ({token_id('pve2')})" in said
    assert zone.answers("pve2", token_id("pve2"), two) == 200
    assert zone.answers("pve2", token_id("pve1"), one) == 401
    admin = zone.admin("pve2")
    assert AGENT_USER in admin.users()
    assert admin.acl() == acl_before  # the user's permissions, which pve2's token works through
    assert main(["remove", "--node", "pve1", *api]) == 0  # again: nothing left to do
    assert f"proxmox token {token_id('pve1')}: unchanged" in capsys.readouterr().out


def test_removing_the_last_node_reads_its_name_from_the_config_and_says_how_to_remove_the_user(
    zone: Zone, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_proxmox(zone.admin("pve1"), options(tmp_path, "pve1"))
    config = tmp_path / "agent.toml"
    config.write_text(f'zone = "{ZONE}"\nnode = "pve1"\n')
    capsys.readouterr()

    api = ["--proxmox-admin", "api", "--proxmox-url", zone.fakes[ZONE].url("pve1")]
    api += ["--proxmox-password-file", str(zone.password_file), "--proxmox-ca", zone.fakes.certfile]
    assert main(["remove", "--config", str(config), *api]) == 0

    said = capsys.readouterr().out
    assert f"proxmox token {token_id('pve1')}: removed" in said
    assert f"no node's token is left; to remove it: pveum user delete {AGENT_USER}" in said
    assert zone.admin("pve1").tokens(AGENT_USER) == set()


def test_removal_without_a_node_name_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["remove", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "give it with --node" in capsys.readouterr().err
