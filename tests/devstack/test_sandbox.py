"""The devstack plays the agent unit's sandbox as systemd applies it (devstack/sandbox.py): every setting of
the packaged unit is played or argued, a process under it is confined as the unit says, and what the agent
does for gateways and the mesh (a pinned network namespace, nftables in it, wireguard-go) works under it."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent.service import MOUNT_NAMESPACING, service_settings
from devstack.sandbox import (
    NOT_PLAYED,
    PACKAGED_BOUNDING_SET,
    PACKAGED_UNIT,
    PLAYED,
    SERVICE,
    Sandbox,
    UnplayedSetting,
    as_packaged,
    check,
    confinement,
    expand,
)

PACKAGED = PACKAGED_UNIT.read_text(encoding="utf-8")

# What a process learns of its sandbox by trying: each line an attempt, its errno's name or "ok".
PROBE = r"""
import ctypes, errno, json, mmap, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
found = {}

def attempt(name, call):
    try:
        result = call()
    except OSError as error:
        found[name] = errno.errorcode[error.errno]
        return
    if isinstance(result, int) and result == -1:
        found[name] = errno.errorcode[ctypes.get_errno()]
    else:
        found[name] = "ok"

def in_child(flag):
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.unshare(flag) == 0 else ctypes.get_errno())
    code = os.waitpid(pid, 0)[1] >> 8
    if code:
        raise OSError(code, os.strerror(code))

for family in ("AF_PACKET", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_UNIX"):
    attempt(family, lambda: socket.socket(getattr(socket, family), socket.SOCK_DGRAM).close())
for kind, flag in (("user", 0x10000000), ("uts", 0x04000000), ("pid", 0x20000000), ("ipc", 0x08000000),
                   ("net", 0x40000000), ("mnt", 0x00020000)):
    attempt("unshare " + kind, lambda: in_child(flag))
attempt("sethostname", lambda: libc.sethostname(b"x", 1))
attempt("personality", lambda: libc.personality(0x0040000))
attempt("W+X memory", lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC).close())
attempt("W memory", lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE).close())
open("probe", "w").close()
attempt("set-user-id", lambda: os.chmod("probe", 0o4755))
attempt("chmod", lambda: os.chmod("probe", 0o640))
now = (ctypes.c_long * 2)(int(time.time()), 0)
attempt("clock_settime", lambda: libc.clock_settime(0, now))
attempt("swapoff", lambda: libc.swapoff(b"/nonexistent"))
attempt("realtime", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)))
found["umask"] = oct(os.umask(0))
print(json.dumps(found))
"""


# Settings the sandbox does not play: a unit that gets one makes the devstack refuse to run it.
REFUSED = ["PrivateUsers=yes", "IPAddressDeny=any", "CapabilityBoundingSet=~CAP_SYS_TIME"]


def test_every_setting_of_the_packaged_unit_is_played_or_argued() -> None:
    keys = {key for key, _ in service_settings(PACKAGED)}
    played = {key for key, _ in check(PACKAGED)}

    assert played == keys & PLAYED
    assert keys - PLAYED <= SERVICE | set(NOT_PLAYED) | set(MOUNT_NAMESPACING)
    assert {"SystemCallFilter", "RestrictNamespaces", "CapabilityBoundingSet"} <= played


@pytest.mark.parametrize(
    "line", ["PrivateUsers=yes", "IPAddressDeny=any", "CapabilityBoundingSet=~CAP_SYS_TIME"]
)
def test_a_setting_nobody_plays_is_refused_by_name(line: str) -> None:
    with pytest.raises(UnplayedSetting, match=line.split("=")[0]):
        check(f"{PACKAGED}[Service]\n{line}\n")


def test_the_system_call_groups_are_systemds_own() -> None:
    box = Sandbox.of(check(PACKAGED))
    assert box.allowed is not None
    allowed = expand(box.allowed) - expand(box.denied)

    assert {"mount", "setns", "unshare", "execve", "capset"} <= allowed  # what `ip netns` and setpriv use
    assert not {"clock_settime", "swapoff", "reboot", "init_module", "ptrace"} & allowed
    with pytest.raises(ValueError, match="@nonsense"):
        expand(["@nonsense"])


def run_packaged(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(as_packaged(argv), cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture
def root() -> None:
    if os.geteuid() != 0:
        pytest.fail("the unit's sandbox is root's: these tests run as root, as `make test` does")


@pytest.mark.usefixtures("root")
def test_a_process_under_the_packaged_units_sandbox_is_confined_as_the_unit_says(tmp_path: Path) -> None:
    found = json.loads(run_packaged([sys.executable, "-c", PROBE], tmp_path).stdout)

    assert found == {
        # RestrictAddressFamilies: IP, netlink and Unix sockets only.
        "AF_PACKET": "EAFNOSUPPORT",
        "AF_INET": "ok",
        "AF_INET6": "ok",
        "AF_NETLINK": "ok",
        "AF_UNIX": "ok",
        # RestrictNamespaces=net mnt; ProtectHostname.
        "unshare user": "EPERM",
        "unshare uts": "EPERM",
        "unshare pid": "EPERM",
        "unshare ipc": "EPERM",
        "unshare net": "ok",
        "unshare mnt": "ok",
        "sethostname": "EPERM",
        # LockPersonality, MemoryDenyWriteExecute, RestrictSUIDSGID, ProtectClock and ~@clock, ~@swap,
        # RestrictRealtime.
        "personality": "EPERM",
        "W+X memory": "EPERM",
        "W memory": "ok",
        "set-user-id": "EPERM",
        "chmod": "ok",
        "clock_settime": "EPERM",
        "swapoff": "EPERM",
        "realtime": "EPERM",
        "umask": "0o27",
    }


@pytest.mark.usefixtures("root")
def test_its_capabilities_and_seccomp_are_what_systemd_gives_the_unit(tmp_path: Path) -> None:
    """What make test-artifacts reads of the agent that systemd runs (tests/artifacts/test_systemd.py)."""
    sleeper = subprocess.Popen(as_packaged(["sleep", "30"]), cwd=tmp_path)
    try:
        for _ in range(100):  # until the launcher has exec'd sleep
            if Path(f"/proc/{sleeper.pid}/comm").read_text().strip() == "sleep":
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert confinement(sleeper.pid) == (PACKAGED_BOUNDING_SET, True, 2)
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.usefixtures("root")
def test_what_the_agent_does_for_gateways_and_the_mesh_works_under_it(tmp_path: Path) -> None:
    """A network namespace pinned for the host, a ruleset in it and a WireGuard interface: as the agent does
    them, in the sandbox; the namespace is the host's after the sandboxed process ends."""
    if shutil.which("wireguard-go") is None:
        pytest.fail("wireguard-go is missing: make install installs it")
    netns, link = f"fpsbx{secrets.token_hex(3)}", f"fpwg{secrets.token_hex(3)}"
    script = f"""set -e
ip netns add {netns}
ip netns exec {netns} nft add table inet fpsandbox
ip netns exec {netns} nft add chain inet fpsandbox forward '{{ type filter hook forward priority 0; }}'
ip netns exec {netns} ip link add {link} type veth peer name {link}p
ip netns exec {netns} wireguard-go {link}w
"""
    try:
        run_packaged(["/bin/sh", "-c", script], tmp_path)
        tables = subprocess.run(
            ["ip", "netns", "exec", netns, "nft", "list", "tables"],
            capture_output=True,
            text=True,
            check=True,
        )
        links = subprocess.run(["ip", "-n", netns, "-o", "link"], capture_output=True, text=True, check=True)
        assert "table inet fpsandbox" in tables.stdout
        assert f"{link}w:" in links.stdout
        assert f"{link}@{link}p" in links.stdout
    finally:
        subprocess.run(["ip", "-n", netns, "link", "del", f"{link}w"], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
