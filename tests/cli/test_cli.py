"""``flexplane`` as a script runs it: signed in with a service account's key, acting in VDC demo of the light
world through the API in this process; answers in each format, a VM's creation followed to its end, the
exit codes of the API's typed errors, and the credentials kept where only their owner reads them."""

from __future__ import annotations

import json
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from apiclient.cli.config import config_dir as default_config_dir
from devstack import seed
from devstack.identity.process import IdentityProvider
from tests.apiclient.conftest import ORIGIN
from tests.cli.conftest import Flexplane
from tests.orchestrator.lightworld import LightWorld

SMALL_VM = ("-c", "small", "-s", "standard", "-i", "debian-12", "--zone", "zone-a")


def stored(config_dir: Path) -> dict[str, object]:
    credential: dict[str, object] = json.loads((config_dir / "credentials.json").read_text())["default"]
    return credential


def test_a_service_accounts_key_logs_in_and_is_kept_where_only_its_owner_reads_it(
    flexplane: Flexplane, logged_in: dict[str, str], config_dir: Path, identity: IdentityProvider
) -> None:
    credentials = config_dir / "credentials.json"
    profile = json.loads((config_dir / "config.json").read_text())["profiles"]["default"]
    listed = flexplane("vdcs", "list", "-o", "json")

    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(config_dir.stat().st_mode) == 0o700
    credential = stored(config_dir)
    assert credential["kind"] == "service-account"
    assert credential["subject"] == logged_in["userId"]
    assert credential["key"] == logged_in
    assert profile == {"url": ORIGIN, "issuer": identity.issuer, "project_id": seed.PROJECT_ID, "vdc": "demo"}
    assert listed.exit_code == 0, listed.output
    assert [vdc["id"] for vdc in json.loads(listed.stdout)] == ["demo"]


def test_the_cached_token_serves_later_runs_until_it_nears_its_end_and_is_then_renewed(
    flexplane: Flexplane, logged_in: dict[str, str], config_dir: Path
) -> None:
    first = stored(config_dir)
    assert flexplane("networks", "list").exit_code == 0
    unchanged = stored(config_dir)
    # A token a minute from its end is renewed before it is sent: as if it were.
    path = config_dir / "credentials.json"
    document = json.loads(path.read_text())
    document["default"]["expires_at"] = time.time() + 30
    path.write_text(json.dumps(document))

    renewed_run = flexplane("networks", "list", "-o", "json")

    assert unchanged["access_token"] == first["access_token"]
    assert renewed_run.exit_code == 0, renewed_run.output
    renewed = stored(config_dir)
    assert renewed["access_token"] != first["access_token"]
    assert float(str(renewed["expires_at"])) > time.time() + 3600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_vm_created_with_wait_is_followed_to_its_end_then_shown_in_each_format(
    flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str]
) -> None:
    name = vm_name("cli")

    made = flexplane("vms", "create", name, *SMALL_VM, "--wait", "-o", "json")

    assert made.exit_code == 0, made.output
    vm = json.loads(made.stdout)
    assert (vm["name"], vm["vdc"], vm["zone"], vm["computeProfile"]) == (name, "demo", "zone-a", "small")
    assert "SUCCEEDED" in made.stderr
    as_json = json.loads(flexplane("vms", "list", "-o", "json").stdout)
    as_yaml = yaml.safe_load(flexplane("vms", "list", "-o", "yaml").stdout)
    as_table = flexplane("vms", "list").stdout
    assert [v["id"] for v in as_json if v["name"] == name] == [vm["id"]]
    assert as_yaml == as_json
    assert as_table.split()[:3] == ["NAME", "ID", "STATUS"]
    assert name in as_table
    shown = flexplane("vms", "show", name, "-o", "yaml")
    assert shown.exit_code == 0, shown.output
    assert yaml.safe_load(shown.stdout)["id"] == vm["id"]


def test_a_vm_is_stopped_started_and_deleted_by_name_each_task_followed(
    flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str]
) -> None:
    name = vm_name("life")
    assert flexplane("vms", "create", name, *SMALL_VM, "--wait").exit_code == 0

    stopped = flexplane("vms", "stop", name, "--wait", "-o", "json")
    started = flexplane("vms", "start", name, "--wait", "-o", "json")
    deleted = flexplane("vms", "delete", name, "--wait", "-o", "json")
    gone = flexplane("vms", "show", name)

    for result in (stopped, started, deleted):
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["status"] == "SUCCEEDED"
    assert gone.exit_code == 3, gone.output
    assert "NOT_FOUND" in gone.stderr


def test_a_network_is_created_listed_and_deleted(flexplane: Flexplane, logged_in: dict[str, str]) -> None:
    name = f"cli{time.monotonic_ns() % 10**6}"

    made = flexplane("networks", "create", name, "--cidr", "10.231.7.0/24", "--zone", "zone-a", "-o", "json")
    listed = flexplane("networks", "list", "-o", "json")
    deleted = flexplane("networks", "delete", f"zone-a/{name}")
    after = flexplane("networks", "list", "-o", "json")

    assert made.exit_code == 0, made.output
    network = json.loads(made.stdout)
    assert (network["name"], network["cidr"]) == (name, "10.231.7.0/24")
    assert network["id"] in [n["id"] for n in json.loads(listed.stdout)]
    assert deleted.exit_code == 0, deleted.output
    assert network["id"] not in [n["id"] for n in json.loads(after.stdout)]


def test_the_api_typed_errors_are_exit_codes(
    flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str]
) -> None:
    invalid = flexplane("vms", "create", vm_name("tiny"), *SMALL_VM, "--disk-gb", "1")
    missing = flexplane("vms", "show", "no-such-vm")
    elsewhere = flexplane("--vdc", "other", "networks", "list")
    usage = flexplane("vms", "create", vm_name("bare"))

    assert invalid.exit_code == 1, invalid.output
    assert "INVALID" in invalid.stderr
    assert "diskGb" in invalid.stderr
    assert missing.exit_code == 3, missing.output
    assert elsewhere.exit_code == 4, elsewhere.output
    assert "FORBIDDEN" in elsewhere.stderr
    assert usage.exit_code == 2, usage.output
    assert "--compute-profile" in usage.stderr
    for result in (invalid, missing, elsewhere):
        assert "Traceback" not in result.output


def test_a_task_that_failed_is_exit_5_when_waited_for(
    flexplane: Flexplane, logged_in: dict[str, str], vm_name: Callable[[str], str], light: LightWorld
) -> None:
    name = vm_name("fails")
    assert flexplane("vms", "create", name, *SMALL_VM, "--wait").exit_code == 0
    pve = light.fakes["zone-a"].pve
    light.fakes.on_loop(lambda: pve.fail("POST", "/status/stop", error="quit_powerdown_failed", times=1))

    refused = flexplane("vms", "stop", name)
    # The id as the hint gives it, after "--" where it begins with "-" (one in 64: it is base64url).
    pointed = re.search(r"flexplane tasks show ((?:-- )?\S+)`", refused.stderr)
    assert pointed is not None, refused.stderr
    task = pointed.group(1).split()
    waited = flexplane("tasks", "wait", *task)
    shown = flexplane("tasks", "show", "-o", "json", *task)

    assert refused.exit_code == 1, refused.output
    assert "UPSTREAM_FAILURE" in refused.stderr
    assert waited.exit_code == 5, waited.output
    assert "TASK_FAILED" in waited.stderr
    assert "VM quit/powerdown failed" in waited.stderr
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["status"] == "FAILED"


def test_after_logout_a_command_says_to_log_in_and_exits_4(
    flexplane: Flexplane, logged_in: dict[str, str], config_dir: Path
) -> None:
    out = flexplane("logout")

    refused = flexplane("vms", "list")

    assert out.exit_code == 0
    assert "default" not in json.loads((config_dir / "credentials.json").read_text())
    assert refused.exit_code == 4, refused.output
    assert "flexplane login" in refused.stderr


def test_the_config_folder_is_xdgs() -> None:
    assert default_config_dir({"XDG_CONFIG_HOME": "/srv/conf"}) == Path("/srv/conf/flexplane")
    assert default_config_dir({}) == Path.home() / ".config" / "flexplane"


def test_every_command_has_help_with_an_example(flexplane: Flexplane) -> None:
    groups = {
        "vdcs": ["list"],
        "vms": ["list", "show", "create", "start", "stop", "delete"],
        "snapshots": ["list", "create", "rollback", "delete"],
        "tasks": ["list", "show", "wait"],
        "networks": ["list", "create", "delete"],
        "security-groups": ["list"],
        "gateways": ["list", "show"],
        "public-ips": ["list", "allocate", "release"],
        "port-forwards": ["list", "create", "delete"],
        "clusters": ["list", "show", "kubeconfig"],
    }
    commands = [["login"], ["logout"]] + [
        [group, command] for group, names in groups.items() for command in names
    ]

    for command in commands:
        result = flexplane(*command, "--help")
        assert result.exit_code == 0, (command, result.output)
        assert "Example" in result.stdout, command
        assert f"flexplane {' '.join(command)}" in " ".join(result.stdout.split()), command
