"""The agent's systemd unit (the package's, completed by the bootstrap's drop-in) runs it in the host's
mount namespace, so that the network namespaces of its edge gateways (mounts in /run/netns) reach the
host and outlive it; the devstack runs a unit as systemd would, as far as namespaces go (and under its
sandbox: tests/devstack/test_sandbox.py). The unit's sandbox itself is checked by systemd (tests/artifacts:
systemd-analyze, and the agent under systemd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.service import PACKAGED_UNITS, dropin_text, exec_start, mount_namespacing, packaged_unit
from devstack.world.agents import unit_command

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "packaging" / "deb" / "flexplane-agent.service"


def unit(*service: str) -> str:
    return "\n".join(["[Unit]", "Description=x", "[Service]", "ExecStart=/bin/agent serve", *service, ""])


@pytest.mark.parametrize(
    "text",
    [
        PACKAGED.read_text() + dropin_text(["/usr/bin/python3", "/opt/flexplane-agent/a.pyz", "serve"]),
        PACKAGED.read_text(),
    ],
    ids=["with the bootstrap's drop-in", "the package's"],
)
def test_the_agents_units_have_no_file_system_namespacing(text: str) -> None:
    assert mount_namespacing(text) == []
    assert exec_start(text)


@pytest.mark.parametrize(
    "setting",
    [
        "PrivateTmp=yes",
        "PrivateMounts=true",
        "ProtectSystem=strict",
        "ProtectHome=read-only",
        "ReadWritePaths=/run/netns",
        "BindPaths=/run/netns",
        "ProtectKernelTunables=1",
        "ProtectProc=invisible",
        "MountFlags=slave",
    ],
)
def test_a_setting_that_makes_systemd_give_the_service_a_mount_namespace_is_found(setting: str) -> None:
    assert mount_namespacing(unit("Restart=on-failure", setting)) == [setting]


@pytest.mark.parametrize(
    "settings",
    [
        ("PrivateTmp=no",),
        ("ProtectSystem=false",),
        ("ProtectProc=default", "ProcSubset=all"),
        ("MountFlags=shared",),
        ("ReadWritePaths=/run/netns", "ReadWritePaths="),  # an empty value resets the list
        ("PrivateTmp=yes", "PrivateTmp=no"),  # the last one counts
        ("NoNewPrivileges=yes", "Restart=always"),
    ],
)
def test_settings_that_leave_the_service_in_the_hosts_mount_namespace_are_not(
    settings: tuple[str, ...],
) -> None:
    assert mount_namespacing(unit(*settings)) == []


def test_only_the_service_section_counts() -> None:
    text = "\n".join(
        [
            "[Unit]",
            "PrivateTmp=yes",
            "[Service]",
            "ExecStart=/bin/agent",
            "# PrivateTmp=yes",
            "[Install]",
            "PrivateTmp=yes",
        ]
    )
    assert mount_namespacing(text) == []


def test_the_devstack_runs_a_unit_on_its_node_in_the_hosts_mount_namespace() -> None:
    assert unit_command(unit()) == ["/bin/agent", "serve"]
    assert unit_command(unit(), "fpm-ab12-n1") == [
        "nsenter",
        "--net=/run/netns/fpm-ab12-n1",
        "--",
        "/bin/agent",
        "serve",
    ]


def test_the_devstack_runs_a_unit_with_file_system_namespacing_in_a_mount_namespace_of_its_own() -> None:
    """As systemd does: a slave of the host's, whose mounts never reach the host (so the devstack sees
    what a node with such a unit would: gateways that go with their agent)."""
    assert unit_command(unit("PrivateTmp=yes"), "fpm-ab12-n1") == [
        "nsenter",
        "--net=/run/netns/fpm-ab12-n1",
        "--",
        "unshare",
        "--mount",
        "--propagation",
        "slave",
        "--",
        "/bin/agent",
        "serve",
    ]


def test_the_bootstraps_drop_in_replaces_the_packages_command_and_nothing_else() -> None:
    packaged = PACKAGED.read_text()
    release = ["/opt/flexplane-agent/venv/bin/python3", "/opt/flexplane-agent/current/flexplane-agent.pyz"]
    dropin = dropin_text([*release, "serve", "--config", "/etc/flexplane/agent.toml"])

    assert exec_start(packaged)[0] == "/opt/flexplane-agent/venv/bin/flexplane-agent"
    assert exec_start(packaged + dropin) == [*release, "serve", "--config", "/etc/flexplane/agent.toml"]
    assert [line for line in dropin.splitlines() if not line.startswith("#")] == [
        "[Service]",
        "ExecStart=",
        f"ExecStart={' '.join(release)} serve --config /etc/flexplane/agent.toml",
    ]


def test_a_unit_whose_command_is_cleared_and_not_set_again_has_none() -> None:
    with pytest.raises(ValueError, match="no ExecStart"):
        exec_start(unit("ExecStart="))


@pytest.mark.parametrize("where", PACKAGED_UNITS, ids=str)
def test_the_packages_unit_is_found_where_dpkg_puts_it(tmp_path: Path, where: Path) -> None:
    assert packaged_unit(tmp_path) is None, "a pip install carries no unit"
    (tmp_path / where).parent.mkdir(parents=True)
    (tmp_path / where).write_text(PACKAGED.read_text())
    assert packaged_unit(tmp_path) == tmp_path / where
