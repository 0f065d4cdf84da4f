"""``flexplane-agent doctor``, and the bootstrap's preflight: against a fake zone and a node's tools in
folders of the test's own, a ready node passes every check, and each failure, provoked once, is found
and says what to do; a blocking one stops the bootstrap before it changes anything.
"""

from __future__ import annotations

import datetime
import email.utils
import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.__main__ import main
from agent.bootstrap import BootstrapError, Finding, Host, Options, bootstrap, examine
from agent.pveadmin import AGENT_USER, ApiAdmin
from agent.service import UnitOnly
from agentclient.enrollment import parse_join_token
from devstack.fakezones import FakeZones
from tests import addresses

ZONE = "zone-d"
NODES = {"pve1": addresses.address(addresses.AGENT_SUITE, 94)}
CLOCK_HOST = addresses.address(addresses.AGENT_SUITE, 95)
READY_CONTENT = "iso,vztmpl,backup,snippets,import"


class SkewedClock(http.server.BaseHTTPRequestHandler):
    """An orchestrator whose clock is ``skew`` away from this machine's: it answers HEAD with its Date."""

    skew = datetime.timedelta(0)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def date_time_string(self, timestamp: float | None = None) -> str:
        return email.utils.format_datetime(datetime.datetime.now(datetime.UTC) + self.skew, usegmt=True)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the findings, not the server's log."""


@dataclass
class Node:
    """The fake zone's node, its tools' folders (PATH, /sys), and an orchestrator to compare clocks with."""

    fakes: FakeZones
    host: Host
    orchestrator: str
    tools: Path
    sys_dir: Path

    @property
    def admin(self) -> ApiAdmin:
        pve = self.fakes[ZONE].pve
        return ApiAdmin(
            self.fakes[ZONE].url("pve1"), "root@pam", pve.password, ca_file=Path(self.fakes.certfile)
        )

    def content(self, storage: str, content: str) -> None:
        def set_content() -> None:
            self.fakes[ZONE].pve.storages[storage]["content"] = content

        self.fakes.on_loop(set_content)

    def findings(self, *, storage_changes: bool = True) -> dict[str, Finding]:
        found = examine(
            self.admin, orchestrator=self.orchestrator, host=self.host, storage_changes=storage_changes
        )
        return {f.check: f for f in found}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    """A node as it should be: Proxmox VE 9, local taking snippets and imports, WireGuard's module, nft."""
    fakes = FakeZones({ZONE: NODES}, {ZONE: "s3cret"}, tmp_path / "pki")
    tools, sys_dir = tmp_path / "bin", tmp_path / "sys"
    (sys_dir / "module/wireguard").mkdir(parents=True)
    tools.mkdir()
    (tools / "nft").write_text("#!/bin/sh\n")
    (tools / "nft").chmod(0o755)
    clock = http.server.ThreadingHTTPServer((CLOCK_HOST, 0), SkewedClock)
    serving = threading.Thread(target=clock.serve_forever, args=(0.02,), daemon=True)  # quick to shut down
    serving.start()
    fakes.start()
    try:
        ready = Node(
            fakes, Host(str(tools), sys_dir), f"http://{CLOCK_HOST}:{clock.server_port}", tools, sys_dir
        )
        ready.content("local", READY_CONTENT)
        yield ready
    finally:
        SkewedClock.skew = datetime.timedelta(0)
        fakes.stop()
        clock.shutdown()
        clock.server_close()


def test_a_ready_node_passes_every_check(node: Node) -> None:
    findings = node.findings()
    assert {check: f.ok for check, f in findings.items()} == {
        "proxmox version": True,
        "storage local content snippets": True,
        "storage local content import or iso": True,
        "sdn": True,
        "wireguard": True,
        "nftables": True,
        "clock": True,
    }
    assert main(["doctor", *api_options(node)]) == 0


def test_an_unsupported_proxmox_version_blocks(
    node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node.fakes.on_loop(setattr, node.fakes[ZONE].pve, "version", "7.4.17")
    found = node.findings()["proxmox version"]
    assert (found.ok, found.blocking) == (False, True)
    assert "Proxmox VE 7 is not supported" in found.detail
    assert "pve7to8" in found.fix
    capsys.readouterr()
    assert main(["doctor", *api_options(node)]) == 1
    assert (
        capsys.readouterr().err == "flexplane-agent doctor: the bootstrap would stop here (proxmox version)\n"
    )


def test_a_doctor_that_cannot_log_in_to_proxmox_says_why_and_what_to_check(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    options = api_options(node)
    Path(options[options.index("--proxmox-password-file") + 1]).write_text("not the password")
    assert main(["doctor", *options]) == 1
    said = capsys.readouterr().err.splitlines()
    assert said[0].startswith("flexplane-agent doctor: logging in to Proxmox")
    assert said[1:] == ["Nothing was changed. Check the Proxmox URL and credentials."]


def test_a_snippets_storage_the_bootstrap_may_not_change_blocks_and_names_the_command(node: Node) -> None:
    node.content("local", "iso,vztmpl,backup")
    assert node.findings()["storage local content snippets"].ok  # the bootstrap will enable it
    found = node.findings(storage_changes=False)["storage local content snippets"]
    assert (found.ok, found.blocking) == (False, True)
    assert found.fix == "pvesm set local --content backup,iso,snippets,vztmpl"


def test_a_staging_storage_without_import_or_iso_is_said_with_the_command(node: Node) -> None:
    node.content("local", "backup,snippets")
    found = node.findings()["storage local content import or iso"]
    assert (found.ok, found.blocking) == (False, False)
    assert found.fix == "pvesm set local --content backup,import,snippets"


def test_an_sdn_that_does_not_answer_is_said(node: Node) -> None:
    node.fakes.on_loop(node.fakes[ZONE].pve.traffic.drop, "GET", "/cluster/sdn/zones")
    found = node.findings()["sdn"]
    assert (found.ok, found.blocking) == (False, False)
    assert "tenant networks cannot be made" in found.detail


def test_without_wireguard_the_node_is_told_how_to_get_it_and_wireguard_go_will_do(node: Node) -> None:
    (node.sys_dir / "module/wireguard").rmdir()
    found = node.findings()["wireguard"]
    assert (found.ok, found.blocking) == (False, False)
    assert "modprobe wireguard" in found.fix
    (node.tools / "wireguard-go").write_text("#!/bin/sh\n")
    (node.tools / "wireguard-go").chmod(0o755)
    assert node.findings()["wireguard"].detail == "wireguard-go (the kernel has no module loaded)"


def test_without_nft_edge_gateways_cannot_run(node: Node) -> None:
    (node.tools / "nft").unlink()
    found = node.findings()["nftables"]
    assert (found.ok, found.fix) == (False, "apt install nftables")


def test_a_clock_minutes_off_is_said_with_how_to_sync_it(node: Node) -> None:
    SkewedClock.skew = datetime.timedelta(minutes=-10)  # the orchestrator is behind: this node is ahead
    found = node.findings()["clock"]
    assert not found.ok
    assert "ahead of the orchestrator's" in found.detail
    assert "timedatectl set-ntp true" in found.fix


def test_the_bootstrap_stops_on_a_blocking_finding_before_changing_anything(
    node: Node, tmp_path: Path
) -> None:
    node.fakes.on_loop(setattr, node.fakes[ZONE].pve, "version", "7.4.17")
    expires = int((datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).timestamp())
    root = tmp_path / "root"
    opts = Options(
        orchestrator=node.orchestrator,
        token=parse_join_token(f"{ZONE}.pve1.{expires}.0123456789abcdef.{'s' * 43}"),
        root=root,
        endpoint=f"{NODES['pve1']}:7443",
        ca_file=None,
        proxmox_url=node.fakes[ZONE].url("pve1"),
        proxmox_ca=None,
        image_cache=root / "var/cache/flexplane",
        snippets_dir=root / "var/lib/vz/snippets",
        install_dir=root / "opt/flexplane-agent",
    )
    with pytest.raises(
        BootstrapError, match="the node is not ready: proxmox version: Proxmox VE 7"
    ) as stopped:
        bootstrap(opts, node.admin, UnitOnly())
    assert "Nothing was written" in stopped.value.plan
    assert AGENT_USER not in node.admin.users()
    assert not root.exists()


def api_options(node: Node) -> list[str]:
    password = node.tools.parent / "root-password"
    password.write_text(node.fakes[ZONE].pve.password)
    return [
        "--proxmox-admin",
        "api",
        "--proxmox-url",
        node.fakes[ZONE].url("pve1"),
        "--proxmox-password-file",
        str(password),
        "--proxmox-ca",
        node.fakes.certfile,
    ]
