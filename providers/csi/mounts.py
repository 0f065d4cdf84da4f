"""What the node plugin does to a worker's disks and mounts, with the node's own tools (``blkid``, ``mkfs``,
``mount``, ``umount``, ``e2fsck``, ``dumpe2fs``, ``resize2fs`` and ``xfs_growfs``), and what it reads of
them, from ``/proc/self/mountinfo`` and ``/sys``.

Every function says what went wrong in a :class:`ToolFailed` naming the command and its output.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TOOL_TIMEOUT = 120.0  # a mkfs of a large disk, a resize2fs
# The file systems the driver makes and grows (a StorageClass's csi.storage.k8s.io/fstype).
FILE_SYSTEMS = ("ext4", "xfs")


class ToolFailed(Exception):
    """A command failed; the message names it and what it printed."""


def run(*argv: str) -> str:
    """Run a tool; its output, or :class:`ToolFailed`."""
    try:
        # The node's tools, given the paths the CO named; no shell.
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolFailed(f"{' '.join(argv)}: {exc}") from exc
    if done.returncode != 0:
        raise ToolFailed(
            f"{' '.join(argv)} exited with {done.returncode}: {(done.stderr or done.stdout).strip()}"
        )
    return done.stdout


@dataclass(frozen=True)
class Mount:
    """One line of mountinfo: what is mounted (``source``, the ``root`` within it) at ``point``."""

    point: str
    root: str
    source: str
    fs_type: str
    options: frozenset[str]
    device: str  # major:minor

    @property
    def read_only(self) -> bool:
        return "ro" in self.options


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (``\\040`` for a space) decoded."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def mounts(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[Mount]:
    found = []
    for line in mountinfo.read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 6 or len(tail) < 2:
            continue
        found.append(
            Mount(
                point=_unescape(fields[4]),
                root=_unescape(fields[3]),
                source=_unescape(tail[1]),
                fs_type=tail[0],
                options=frozenset(fields[5].split(",")),
                device=fields[2],
            )
        )
    return found


def mount_at(path: str) -> Mount | None:
    """What is mounted at ``path`` (the last mount there: the one seen), or None."""
    point = os.path.realpath(path)
    found = [m for m in mounts() if m.point == point]
    return found[-1] if found else None


def size_bytes(device: str) -> int:
    """A block device's size, as the kernel sees it now."""
    number = block_device(device)
    if number is None:
        raise ToolFailed(f"{device} is not a block device")
    return size_of_number(number)


def fs_type_of(device: str) -> str | None:
    """The file system on a device (None: none, a blank disk), as blkid probes it."""
    done = subprocess.run(  # noqa: S603
        ["blkid", "-p", "-o", "value", "-s", "TYPE", device],  # noqa: S607 - the node's blkid
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT,
        check=False,
    )
    if done.returncode == 2:  # nothing found: a blank disk
        return None
    if done.returncode != 0:
        raise ToolFailed(f"blkid -p {device} exited with {done.returncode}: {done.stderr.strip()}")
    return done.stdout.strip() or None


def make_fs(device: str, fs_type: str) -> None:
    run(f"mkfs.{fs_type}", "-q", device)


def mount(source: str, target: str, fs_type: str | None = None, options: Sequence[str] = ()) -> None:
    argv = ["mount"]
    if fs_type:
        argv += ["-t", fs_type]
    if options:
        argv += ["-o", ",".join(options)]
    run(*argv, source, target)


def bind(source: str, target: str, *, read_only: bool) -> None:
    run("mount", "--bind", source, target)
    if read_only:
        run("mount", "-o", "remount,bind,ro", target)


def unmount_all(target: str) -> None:
    """Unmount whatever is mounted at ``target``, a mount stacked twice by an earlier retry too."""
    while mount_at(target) is not None:
        run("umount", target)


def ext4_bytes(device: str) -> int:
    """The size of the ext4 file system on a device, as its superblock says (``dumpe2fs -h``)."""
    fields = dict(line.split(":", 1) for line in run("dumpe2fs", "-h", device).splitlines() if ":" in line)
    return int(fields["Block count"]) * int(fields["Block size"])


def grow_mounted(device: str, point: str, fs_type: str) -> None:
    """Grow the file system mounted at ``point`` to its device's size (online: ext4 needs
    CAP_SYS_RESOURCE, xfs CAP_SYS_ADMIN, as the node plugin's privileged container has)."""
    if fs_type == "xfs":
        run("xfs_growfs", point)
    elif ext4_bytes(device) < size_bytes(device):
        run("resize2fs", device)


def grow_unmounted(device: str, fs_type: str) -> None:
    """Grow an ext4 file system not mounted to its device's size (checked first, as resize2fs asks); xfs
    grows only mounted (:func:`grow_mounted`)."""
    if fs_type == "ext4" and ext4_bytes(device) < size_bytes(device):
        run("e2fsck", "-f", "-p", device)
        run("resize2fs", device)


def block_device(path: str) -> str | None:
    """The major:minor of the block device at ``path`` (a raw block volume's bind mount), or None."""
    st = Path(path).stat()
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" if stat.S_ISBLK(st.st_mode) else None


def size_of_number(number: str) -> int:
    """A block device's size by its major:minor."""
    return int((Path("/sys/dev/block") / number / "size").read_text()) * 512
