"""Releases: building, signing, verifying and installing them; self-update's configuration and record."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.config import DEFAULT_APPLY_LAUNCHER, DEFAULT_RESTART_COMMAND, ConfigError, load_config
from agent.release import (
    BuiltRelease,
    Installation,
    Manifest,
    ReleaseRefused,
    check_artifact,
    check_version,
    install_file,
    load_public_key,
    read_envelope,
    sign,
    verify,
)
from agent.status import AgentStatus, UpdateState
from agent.update import Result, StateFile, dial_address, refuses
from tests.releasekit import Keys, build_release, release_files

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return Keys.create(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def release(keys: Keys, tmp_path_factory: pytest.TempPathFactory) -> BuiltRelease:
    return build_release("2.3.0", keys.signing(), tmp_path_factory.mktemp("built"))


def envelope(release: BuiltRelease) -> dict[str, str]:
    data: dict[str, str] = read_envelope(release.envelope.read_bytes())
    return data


# ---------------------------------------------------------------------------- build and verify


def test_a_built_release_verifies_and_runs_as_its_own_version(keys: Keys, release: BuiltRelease) -> None:
    manifest = verify(envelope(release), load_public_key(keys.public))
    assert manifest == release.manifest
    assert manifest.url == "flexplane-agent-2.3.0.pyz"
    check_artifact(release.artifact, manifest)
    ran = subprocess.run(
        [sys.executable, str(release.artifact), "--version"], capture_output=True, text=True, check=True
    )
    assert ran.stdout.strip() == "flexplane-agent 2.3.0"


def test_the_same_sources_build_the_same_bytes(keys: Keys, release: BuiltRelease, tmp_path: Path) -> None:
    again = build_release("2.3.0", keys.signing(), tmp_path)
    assert again.artifact.read_bytes() == release.artifact.read_bytes()


def test_a_signature_by_another_key_is_refused(keys: Keys, release: BuiltRelease) -> None:
    with pytest.raises(ReleaseRefused, match="does not verify against release_public_key"):
        verify(envelope(release), load_public_key(keys.stranger.with_name("stranger-public.pem")))


def test_a_manifest_altered_after_signing_is_refused(keys: Keys, release: BuiltRelease) -> None:
    signed = envelope(release)
    bigger = Manifest(release.manifest.version, release.manifest.sha256, release.manifest.size + 1, "x.pyz")
    altered = {**signed, "manifest": base64.b64encode(bigger.to_bytes()).decode()}
    with pytest.raises(ReleaseRefused, match="does not verify"):
        verify(altered, load_public_key(keys.public))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"signature": ""}, "the release is not signed"),
        ({"signature": None}, "the release is not signed"),
        ({"signature": "not base64!"}, "not base64"),
    ],
)
def test_an_unsigned_release_is_refused(
    keys: Keys, release: BuiltRelease, change: dict[str, object], reason: str
) -> None:
    with pytest.raises(ReleaseRefused, match=reason):
        verify({**envelope(release), **change}, load_public_key(keys.public))


def test_a_signed_manifest_must_still_make_sense(keys: Keys) -> None:
    key = keys.signing()
    odd = Manifest("2.3.0", "ab" * 32, 0, "x.pyz")
    with pytest.raises(ReleaseRefused, match="size 0 is not between 1 and"):
        verify(read_envelope(sign(odd, key)), load_public_key(keys.public))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda data: data[:-1], "the artifact has"),
        (lambda data: data[:-1] + bytes([data[-1] ^ 1]), "tampered or corrupt"),
    ],
)
def test_an_artifact_that_is_not_the_manifests_is_refused(
    release: BuiltRelease, tmp_path: Path, change: Callable[[bytes], bytes], reason: str
) -> None:
    copy = tmp_path / "copy.pyz"
    copy.write_bytes(change(release.artifact.read_bytes()))
    with pytest.raises(ReleaseRefused, match=reason):
        check_artifact(copy, release.manifest)


def test_an_artifact_stamped_with_another_version_is_refused(keys: Keys, tmp_path: Path) -> None:
    other = build_release("2.4.0", keys.signing(), tmp_path)
    claimed = Manifest("2.3.0", other.manifest.sha256, other.manifest.size, other.manifest.url)
    with pytest.raises(ReleaseRefused, match=re.escape("carries version '2.4.0', the manifest says 2.3.0")):
        check_artifact(other.artifact, claimed)


@pytest.mark.parametrize(
    ("version", "ok"), [("1.4.0", True), ("1.4.0rc1", True), ("v1.4", False), ("1.04", False)]
)
def test_versions_must_be_in_normal_form(version: str, ok: bool) -> None:
    if ok:
        check_version(version)
    else:
        with pytest.raises(ValueError, match=version):
            check_version(version)


def test_an_older_release_is_refused_unless_pinned() -> None:
    older = Manifest("1.9.0", "ab" * 32, 1, "x.pyz")
    assert refuses("1.10.0", older, pinned=False) == (
        "downgrade from 1.10.0 to 1.9.0 refused: the channel serves an older version and no admin pinned it"
    )
    assert refuses("1.10.0", older, pinned=True) is None
    assert refuses("1.8.0", older, pinned=False) is None


# -------------------------------------------------------------------------------- installation


def test_installing_keeps_the_running_version_as_previous_and_prunes_the_rest(
    keys: Keys, release: BuiltRelease, tmp_path: Path
) -> None:
    installation = Installation(tmp_path / "install")
    public = load_public_key(keys.public)
    older = build_release("2.2.0", keys.signing(), tmp_path)
    oldest = build_release("2.1.0", keys.signing(), tmp_path)
    for built in (oldest, older, release):
        install_file(installation, built.artifact, built.envelope, public)
    assert (installation.pointed("current"), installation.pointed("previous")) == ("2.3.0", "2.2.0")
    assert (installation.root / "current").readlink() == Path("versions/2.3.0")
    assert installation.artifact("2.3.0").read_bytes() == release.artifact.read_bytes()
    assert installation.prune(set()) == ["2.1.0"]
    assert sorted(p.name for p in installation.versions.iterdir()) == ["2.2.0", "2.3.0"]


def test_the_install_command_refuses_a_release_signed_by_another_key(
    keys: Keys, release: BuiltRelease, tmp_path: Path, run_agent: Run
) -> None:
    done = run_agent(
        "release",
        "install",
        *release_files(release),
        "--public-key",
        str(keys.stranger.with_name("stranger-public.pem")),
        "--install-dir",
        str(tmp_path / "install"),
    )
    assert done.returncode == 2
    assert "does not verify against release_public_key" in done.stderr
    assert not (tmp_path / "install" / "current").exists()


def test_the_build_command_builds_and_signs(keys: Keys, tmp_path: Path, run_agent: Run) -> None:
    done = run_agent(
        "release", "build", "--version", "3.0.0", "--key", str(keys.private), "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    built = read_envelope((tmp_path / "flexplane-agent-3.0.0.release.json").read_bytes())
    manifest = verify(built, load_public_key(keys.public))
    check_artifact(tmp_path / "flexplane-agent-3.0.0.pyz", manifest)


def test_the_build_command_names_a_bad_version(keys: Keys, tmp_path: Path, run_agent: Run) -> None:
    done = run_agent(
        "release", "build", "--version", "v3", "--key", str(keys.private), "--out", str(tmp_path)
    )
    assert done.returncode == 2
    assert "'v3' is not in normal form: write it as '3'" in done.stderr


def test_keygen_never_overwrites_a_signing_key(keys: Keys, run_agent: Run, tmp_path: Path) -> None:
    before = keys.private.read_bytes()
    done = run_agent("release", "keygen", "--private", str(keys.private), "--public", str(tmp_path / "p.pem"))
    assert done.returncode == 2
    assert "a signing key is never overwritten" in done.stderr
    assert keys.private.read_bytes() == before
    assert keys.private.stat().st_mode & 0o777 == 0o600


# ------------------------------------------------------------------------------------- the record


def test_the_state_file_keeps_the_last_result_and_the_versions_rolled_back(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "update-state.json")
    status = AgentStatus()
    state.refresh(status)
    assert status.update == UpdateState()
    state.record(
        UpdateState(Result.RESULT_ROLLED_BACK, "1.0.0", "1.2.0", "broken", 1.5), rolled_back=("1.2.0", "ab")
    )
    state.record(UpdateState(Result.RESULT_REFUSED, "1.0.0", "1.3.0", "unsigned", 2.5))
    state.refresh(status)
    assert status.update == UpdateState(Result.RESULT_REFUSED, "1.0.0", "1.3.0", "unsigned", 2.5)
    assert state.rolled_back() == {"1.2.0": "ab"}
    assert json.loads(state.path.read_text())["last"]["result"] == "refused"


def test_an_unreadable_state_file_reads_as_no_result(tmp_path: Path) -> None:
    path = tmp_path / "update-state.json"
    path.write_text("{")
    assert StateFile(path).last() == UpdateState()


@pytest.mark.parametrize(
    ("listen", "dialled"),
    [("10.0.0.11:7443", "10.0.0.11:7443"), ("0.0.0.0:7443", "127.0.0.1:7443"), ("[::]:7443", "[::1]:7443")],
)
def test_the_apply_step_dials_the_listen_address_or_loopback_for_a_wildcard(
    listen: str, dialled: str
) -> None:
    assert dial_address(listen) == dialled


# -------------------------------------------------------------------------------- configuration


def config_file(directory: Path, keys: Keys, **keys_values: object) -> Path:
    for name in ("agent.crt", "agent.key", "ca.crt"):
        (directory / name).write_text("pem\n")
    values: dict[str, object] = {
        "listen": "127.0.10.1:7443",
        "zone": "zone1",
        "node": "pve1",
        "tls_cert": "agent.crt",
        "tls_key": "agent.key",
        "ca": "ca.crt",
        "proxmox_token_secret": "s",
        "update_channel_url": "https://flexplane.example.com/agent/releases/channel.json",
        "release_public_key": str(keys.public),
        **keys_values,
    }
    path = directory / "agent.toml"
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items() if v is not None))
    return path


def test_self_update_is_off_without_a_channel(keys: Keys, tmp_path: Path) -> None:
    config = load_config(
        config_file(tmp_path, keys, update_channel_url=None, release_public_key=None), environ={}
    )
    assert config.update is None


def test_self_update_defaults_suit_a_systemd_node(keys: Keys, tmp_path: Path) -> None:
    update = load_config(config_file(tmp_path, keys), environ={}).update
    assert update is not None
    assert update.install_dir == Path("/opt/flexplane-agent")
    assert update.state_file == Path("/opt/flexplane-agent/update-state.json")
    assert update.restart_command == DEFAULT_RESTART_COMMAND == ("systemctl", "restart", "flexplane-agent")
    assert update.apply_launcher == DEFAULT_APPLY_LAUNCHER
    assert (update.interval, update.health_deadline) == (3600.0, 60.0)


def test_the_commands_can_come_from_the_environment(keys: Keys, tmp_path: Path) -> None:
    environ = {"FLEXPLANE_AGENT_SERVICE_RESTART_COMMAND": "rc-service,flexplane-agent,restart"}
    environ["FLEXPLANE_AGENT_UPDATE_APPLY_LAUNCHER"] = ""
    update = load_config(config_file(tmp_path, keys), environ=environ).update
    assert update is not None
    assert update.restart_command == ("rc-service", "flexplane-agent", "restart")
    assert update.apply_launcher == ()


def test_bad_self_update_settings_are_each_named(keys: Keys, tmp_path: Path) -> None:
    path = config_file(
        tmp_path,
        keys,
        listen="127.0.10.1:0",
        update_channel_url="http://flexplane.example.com/agent/releases/channel.json",
        release_public_key=None,
        update_interval=0.5,
        health_deadline=0,
        service_restart_command="systemctl restart flexplane-agent",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    message = str(caught.value)
    for problem in (
        "update_channel_url: must be an https:// URL",
        "release_public_key: missing: update_channel_url needs it to verify releases",
        "update_interval: must be 0 (never) or at least 1 second",
        "health_deadline: must be between 1 and 3600 seconds",
        "service_restart_command: must be a list of arguments",
        "listen: self-update needs a fixed port",
    ):
        assert problem in message
