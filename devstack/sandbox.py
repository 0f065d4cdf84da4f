"""The agent unit's sandbox, played where systemd is not: the devstack and the tests run each agent under
the sandbox settings of the package's unit (packaging/deb/flexplane-agent.service), applied as systemd
applies them, so that an agent that passes there works under systemd on a node.

:func:`sandboxed` turns a unit and its command into ``python -c <launcher> --set=Key=value ... --
command``, the launcher importing this module by its path (the command inherits no PYTHONPATH). That
process applies the settings to itself (a UTS namespace, the session keyring, the umask, no_new_privs,
systemd's seccomp filters, one per setting as systemd loads them) and ends in ``setpriv``, which drops the
capabilities outside the bounding set and runs the command. A setting of the unit that is neither played
here, nor the world's own (:data:`SERVICE`), nor argued away (:data:`NOT_PLAYED`) is refused by name: a
new hardening line in the unit must be played here before the tests run again.

The system call groups (``@system-service`` and the like) are systemd's own, read from ``systemd-analyze
syscall-filter``. The mount namespacing settings are devstack.world.agents.unit_command's.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import socket
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent.service import MOUNT_NAMESPACING, UNIT_NAME, service_settings

if TYPE_CHECKING:
    from pyseccomp import SyscallFilter

ROOT = Path(__file__).resolve().parents[1]
# The unit the package installs.
PACKAGED_UNIT = ROOT / "packaging" / "deb" / UNIT_NAME

# What systemd's process management does and the world does in its place (it runs and restarts agents).
SERVICE = frozenset({"Type", "ExecStart", "Restart", "RestartSec"})
# Settings not played here, and where they are exercised instead (an agent opening another device passes
# here and fails only there).
NOT_PLAYED = {
    "DevicePolicy": "a device cgroup (BPF) of systemd's; make test-artifacts boots the unit under systemd, "
    "where wireguard-go opens /dev/net/tun through it",
    "DeviceAllow": "as DevicePolicy",
}
# Settings this module plays.
PLAYED = frozenset(
    {
        "NoNewPrivileges",
        "CapabilityBoundingSet",
        "AmbientCapabilities",
        "RestrictNamespaces",
        "RestrictAddressFamilies",
        "SystemCallArchitectures",
        "SystemCallFilter",
        "SystemCallErrorNumber",
        "LockPersonality",
        "MemoryDenyWriteExecute",
        "RestrictRealtime",
        "RestrictSUIDSGID",
        "ProtectClock",
        "ProtectHostname",
        "KeyringMode",
        "UMask",
    }
)

# linux/sched.h: the namespace flags of clone(), unshare() and setns(), by systemd's names.
NAMESPACES = {
    "cgroup": 0x02000000,
    "ipc": 0x08000000,
    "net": 0x40000000,
    "mnt": 0x00020000,
    "pid": 0x20000000,
    "user": 0x10000000,
    "uts": 0x04000000,
}
PR_SET_NO_NEW_PRIVS = 38
KEYCTL_JOIN_SESSION_KEYRING = 1
PROT_WRITE, PROT_EXEC = 0x2, 0x4
SHM_EXEC = 0o100000
S_ISUID, S_ISGID = 0o4000, 0o2000
O_CREAT = 0o100
SCHED_RESET_ON_FORK = 0x40000000
SCHED_FIFO, SCHED_RR, SCHED_DEADLINE = 1, 2, 6
PERSONALITY_QUERY = 0xFFFFFFFF  # personality()'s argument that asks for the current one


# CAP_NET_ADMIN (12) and CAP_SYS_ADMIN (21): the packaged unit's CapabilityBoundingSet, as /proc shows it.
PACKAGED_BOUNDING_SET = (1 << 12) | (1 << 21)


class UnplayedSetting(ValueError):
    """The unit has a setting the devstack does not play: teach this module, or argue it in NOT_PLAYED."""


def _truthy(value: str) -> bool:
    return value.lower() in {"1", "yes", "true", "on"}


def _split(value: str) -> tuple[bool, list[str]]:
    """A list setting's value: whether it is a deny list (``~``), and its items."""
    inverted = value.startswith("~")
    return inverted, value.removeprefix("~").split()


@dataclass
class Sandbox:
    """What a unit's sandbox settings ask for, folded as systemd folds repeated settings."""

    no_new_privileges: bool = False
    bounding: list[str] | None = None  # capability names kept; None: all
    namespaces: set[str] | None = None  # the namespace kinds allowed; None: any
    families: tuple[bool, set[str]] | None = None  # (deny list?, AF_ names); None: any
    native_only: bool = False
    allowed: list[str] | None = None  # system calls and groups allowed; None: no allow list
    denied: list[str] = field(default_factory=list)
    error: int = errno.EPERM
    lock_personality: bool = False
    deny_write_execute: bool = False
    no_realtime: bool = False
    no_suid: bool = False
    hostname: bool = False
    private_keyring: bool = False
    umask: int | None = None

    @classmethod
    def of(cls, settings: Iterable[tuple[str, str]]) -> Sandbox:
        box = cls()
        for key, value in settings:
            box.set(key, value)
        return box

    def set(self, key: str, value: str) -> None:
        if key == "NoNewPrivileges":
            self.no_new_privileges = _truthy(value)
        elif key == "CapabilityBoundingSet":
            inverted, names = _split(value)
            if inverted:
                raise UnplayedSetting("CapabilityBoundingSet=~... (a deny list) is not played")
            self.bounding = [*(self.bounding or []), *names] if value else None
        elif key == "AmbientCapabilities":
            if value:
                raise UnplayedSetting(
                    "AmbientCapabilities with capabilities is not played; the unit has none"
                )
        elif key == "RestrictNamespaces":
            inverted, kinds = _split(value)
            if value in {"yes", "true"}:
                self.namespaces = set()
            elif value in {"", "no", "false"}:
                self.namespaces = None
            else:
                self.namespaces = set(NAMESPACES) - set(kinds) if inverted else set(kinds)
        elif key == "RestrictAddressFamilies":
            inverted, names = _split(value)
            self.families = (inverted, set(names)) if value else None
        elif key == "SystemCallArchitectures":
            self.native_only = value == "native"
        elif key == "SystemCallFilter":
            inverted, names = _split(value)
            if not value:
                self.allowed, self.denied = None, []
            elif inverted:
                self.denied += names
            else:
                self.allowed = [*(self.allowed or []), *names]
        elif key == "SystemCallErrorNumber":
            self.error = getattr(errno, value)
        elif key == "LockPersonality":
            self.lock_personality = _truthy(value)
        elif key == "MemoryDenyWriteExecute":
            self.deny_write_execute = _truthy(value)
        elif key == "RestrictRealtime":
            self.no_realtime = _truthy(value)
        elif key == "RestrictSUIDSGID":
            self.no_suid = _truthy(value)
        elif key == "ProtectClock":
            if _truthy(value):  # systemd denies the clock's system calls, as SystemCallFilter=~@clock
                self.denied.append("@clock")
        elif key == "ProtectHostname":
            self.hostname = _truthy(value)
        elif key == "KeyringMode":
            self.private_keyring = value == "private"
        elif key == "UMask":
            self.umask = int(value, 8)
        else:
            raise UnplayedSetting(f"{key}= is not played by devstack/sandbox.py")


def check(unit: str) -> list[tuple[str, str]]:
    """The unit's sandbox settings (``Key``, ``value``), after refusing any setting nobody plays."""
    played = []
    for key, value in service_settings(unit):
        if key in PLAYED:
            played.append((key, value))
        elif key not in SERVICE and key not in NOT_PLAYED and key not in MOUNT_NAMESPACING:
            raise UnplayedSetting(
                f"the unit's {key}= is played neither by the devstack's sandbox (devstack/sandbox.py) nor by "
                "its mount namespacing: play it there, or argue it in NOT_PLAYED"
            )
    Sandbox.of(played)  # its values too
    return played


def sandboxed(unit: str, command: Sequence[str]) -> list[str]:
    """The command, run under the unit's sandbox (as root: the unit's service is root's)."""
    settings = check(unit)
    if os.geteuid() != 0 or not settings:
        return list(command)
    flags = [f"--set={key}={value}" for key, value in settings]
    # Found from any working directory, without a PYTHONPATH that the command would inherit.
    launcher = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
        "from devstack.sandbox import main; main(sys.argv[1:])"
    )
    return [sys.executable, "-c", launcher, *flags, "--", *command]


def as_packaged(command: Sequence[str]) -> list[str]:
    """The agent's command run under the package's unit's sandbox (for agents the tests start by hand)."""
    return sandboxed(PACKAGED_UNIT.read_text(encoding="utf-8"), command)


def confinement(pid: int) -> tuple[int, bool, int]:
    """What the kernel says of a process's sandbox: its capability bounding set, whether no_new_privs is
    set, and its seccomp mode (2: filtered)."""
    status = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line
    )
    return int(status["CapBnd"], 16), status["NoNewPrivs"].strip() == "1", int(status["Seccomp"])


@functools.cache
def syscall_groups() -> dict[str, list[str]]:
    """systemd's system call groups (``@name``: its members, groups among them), from systemd-analyze."""
    listing = subprocess.run(
        ["systemd-analyze", "syscall-filter", "--no-pager"], capture_output=True, text=True, check=True
    ).stdout
    groups: dict[str, list[str]] = {}
    current: list[str] = []
    for line in listing.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif line.startswith(" ") and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def expand(names: Iterable[str]) -> set[str]:
    """System calls named, with each group's members (nested groups included)."""
    found: set[str] = set()
    for name in names:
        if name.startswith("@"):
            if name not in syscall_groups():
                raise ValueError(f"systemd-analyze knows no system call group {name}")
            found |= expand(syscall_groups()[name])
        else:
            found.add(name)
    return found


def _family(name: str) -> int:
    value = getattr(socket, name, None)
    if value is None:
        raise ValueError(f"RestrictAddressFamilies: Python's socket module knows no {name}")
    return int(value)


def filters(box: Sandbox) -> list[SyscallFilter]:
    """The seccomp filters systemd loads for the sandbox, one per setting (the strictest answer wins)."""
    import pyseccomp as sc

    def allow_by_default() -> sc.SyscallFilter:
        return sc.SyscallFilter(sc.ALLOW)

    def here(syscall: str) -> bool:
        """Whether this architecture has the system call (systemd skips those it has not, too)."""
        return sc.resolve_syscall(sc.Arch.NATIVE, syscall) >= 0

    def bit(index: int, mask: int) -> sc.Arg:
        return sc.Arg(index, sc.MASKED_EQ, mask, mask)

    made: list[sc.SyscallFilter] = []
    deny = sc.ERRNO(errno.EPERM)
    if box.namespaces is not None:
        spaces = allow_by_default()
        spaces.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # its flags are out of reach: glibc falls back
        spaces.add_rule(deny, "setns", sc.Arg(1, sc.EQ, 0))  # "any kind"
        for kind, flag in NAMESPACES.items():
            if kind not in box.namespaces:
                spaces.add_rule(deny, "unshare", bit(0, flag))
                spaces.add_rule(deny, "clone", bit(0, flag))
                spaces.add_rule(deny, "setns", bit(1, flag))
        made.append(spaces)
    if box.families is not None:
        inverted, names = box.families
        sockets = allow_by_default()
        no_family = sc.ERRNO(errno.EAFNOSUPPORT)
        values = sorted(_family(name) for name in names)
        if inverted:
            for value in values:
                sockets.add_rule(no_family, "socket", sc.Arg(0, sc.EQ, value))
        else:
            sockets.add_rule(no_family, "socket", sc.Arg(0, sc.LT, values[0]))
            sockets.add_rule(no_family, "socket", sc.Arg(0, sc.GT, values[-1]))
            for value in range(values[0] + 1, values[-1]):
                if value not in values:
                    sockets.add_rule(no_family, "socket", sc.Arg(0, sc.EQ, value))
        made.append(sockets)
    if box.deny_write_execute:
        memory = allow_by_default()
        memory.add_rule(deny, "mmap", bit(2, PROT_WRITE | PROT_EXEC))
        memory.add_rule(deny, "mprotect", bit(2, PROT_EXEC))
        if here("pkey_mprotect"):
            memory.add_rule(deny, "pkey_mprotect", bit(2, PROT_EXEC))
        memory.add_rule(deny, "shmat", bit(2, SHM_EXEC))
        made.append(memory)
    if box.no_realtime:
        realtime = allow_by_default()
        for policy in (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE):
            realtime.add_rule(
                deny, "sched_setscheduler", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF & ~SCHED_RESET_ON_FORK, policy)
            )
        made.append(realtime)
    if box.no_suid:
        suid = allow_by_default()
        for mode in (S_ISUID, S_ISGID):
            suid.add_rule(deny, "chmod", bit(1, mode))
            suid.add_rule(deny, "fchmod", bit(1, mode))
            suid.add_rule(deny, "fchmodat", bit(2, mode))
            suid.add_rule(deny, "creat", bit(1, mode))
            suid.add_rule(deny, "open", bit(1, O_CREAT), bit(2, mode))
            suid.add_rule(deny, "openat", bit(2, O_CREAT), bit(3, mode))
        made.append(suid)
    if box.lock_personality:
        persona = allow_by_default()
        current = _libc().personality(PERSONALITY_QUERY)
        persona.add_rule(deny, "personality", sc.Arg(0, sc.NE, current))  # a query too, as systemd 252
        made.append(persona)
    if box.hostname:
        names = allow_by_default()
        names.add_rule(deny, "sethostname")
        names.add_rule(deny, "setdomainname")
        made.append(names)
    # The system call filter last, as systemd loads it: it may deny seccomp() to the loads after it.
    if box.allowed is not None:
        calls = sc.SyscallFilter(sc.ERRNO(box.error))
        for name in sorted(expand(box.allowed) - expand(box.denied)):
            if here(name):
                calls.add_rule(sc.ALLOW, name)
        made.append(calls)
    elif box.denied:
        calls = allow_by_default()
        for name in sorted(expand(box.denied)):
            if here(name):
                calls.add_rule(sc.ERRNO(box.error), name)
        made.append(calls)
    if box.native_only:  # libseccomp's filters hold the native architecture only; others are killed
        for made_filter in made:
            made_filter.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    return made


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(name: str, *args: int) -> None:
    if getattr(_libc(), name)(*args) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{name}: {os.strerror(number)}")


def apply(box: Sandbox) -> None:
    """Apply the sandbox to this process, but for the capabilities (``setpriv``, at exec: :func:`main`)."""
    import pyseccomp as sc

    if box.umask is not None:
        os.umask(box.umask)
    if box.hostname:  # systemd gives the service a UTS namespace of its own
        _call("unshare", NAMESPACES["uts"])
    if box.private_keyring:
        keyctl = sc.resolve_syscall(sc.Arch.NATIVE, "keyctl")
        if _libc().syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
            raise OSError(ctypes.get_errno(), "keyctl(KEYCTL_JOIN_SESSION_KEYRING)")
    if box.no_new_privileges:
        _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for made in filters(box):
        made.load()


def setpriv(box: Sandbox) -> list[str]:
    """``setpriv`` with the bounding set kept and no inheritable or ambient capabilities."""
    kept = "".join(f",+{name.lower().removeprefix('cap_')}" for name in box.bounding or [])
    bounding = ["--bounding-set", f"-all{kept}"] if box.bounding is not None else []
    return ["setpriv", *bounding, "--inh-caps", "-all", "--ambient-caps", "-all", "--"]


def main(argv: Sequence[str]) -> None:
    if "--" not in argv:
        sys.exit("usage: python -m devstack.sandbox --set=Key=value ... -- command ...")
    split = list(argv).index("--")
    settings = [flag.removeprefix("--set=").partition("=")[::2] for flag in argv[:split]]
    command = list(argv[split + 1 :])
    box = Sandbox.of(settings)
    apply(box)
    wrapped = [*setpriv(box), *command]
    os.execvp(wrapped[0], wrapped)  # noqa: S606 - the unit's command, as systemd runs it


if __name__ == "__main__":
    main(sys.argv[1:])
