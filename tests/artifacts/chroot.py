"""A throwaway copy of a cached Debian root (packaging/debian_root.py), and commands run in it.

Each command runs in a mount namespace of its own (``unshare --mount``): /dev, /proc and the shared
apt download cache are mounted into the root there and vanish with the command, so nothing stays
mounted on the host whatever a test does, and the copy is removed with ``rm -rf``. The network is the
host's (apt reaches Debian's archive, a started agent listens on loopback). Root only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / ".build"
DEBIAN_ROOT = ROOT / "packaging" / "debian_root.py"
COMMAND_TIMEOUT = 600
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# In the namespace: mount what a Debian system expects, then run $1 in the root with a clean environment.
ENTER = """set -e
root=$1; cache=$2; shift 2
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mkdir -p "$cache/partial"
mount --bind "$cache" "$root/var/cache/apt/archives"
exec chroot "$root" /usr/bin/env -i PATH="$PATH_INSIDE" HOME=/root LANG=C.UTF-8 \\
    DEBIAN_FRONTEND=noninteractive /bin/sh -c "$1"
"""


def in_namespace(script: str, name: str, *args: str) -> list[str]:
    """The command that runs ``script`` (sh, as ``name`` with ``args``) in a mount namespace of its own."""
    return ["unshare", "--mount", "--propagation", "private", "--fork", "sh", "-c", script, name, *args]


def cached_root(suite: str) -> Path:
    """The cached minimal root of suite, made by debootstrap the first time."""
    done = subprocess.run(
        [sys.executable, str(DEBIAN_ROOT), "--suite", suite, "--build", str(BUILD)],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"debootstrap of {suite} failed:\n{done.stderr}"
    return Path(done.stdout.strip())


@dataclass
class Chroot:
    path: Path
    suite: str

    @classmethod
    def copy_of(cls, suite: str, dest: Path) -> Chroot:
        source = cached_root(suite)
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(source), str(dest)], check=True)
        shutil.copyfile("/etc/resolv.conf", dest / "etc" / "resolv.conf")
        return cls(dest, suite)

    def _entered(self, command: str) -> list[str]:
        cache = BUILD / "apt-archives" / self.suite
        cache.mkdir(parents=True, exist_ok=True)
        return in_namespace(ENTER, "enter", str(self.path), str(cache), command)

    def run(self, command: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """command (sh) in the root; stdout and stderr together, the failure's output in the assertion."""
        done = subprocess.run(
            self._entered(command),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
            env={**os.environ, "PATH_INSIDE": PATH},
        )
        if check:
            assert done.returncode == 0, f"in the {self.suite} root, {command!r} failed:\n{done.stdout}"
        return done

    @contextlib.contextmanager
    def started(self, command: str) -> Iterator[subprocess.Popen[str]]:
        """command (sh) running in the root for the block, in a process group of its own that is killed
        after it (what it printed: the process's stdout, stderr with it)."""
        process = subprocess.Popen(
            self._entered(command),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PATH_INSIDE": PATH},
            start_new_session=True,
        )
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def put(self, path: str, content: str, mode: int = 0o644) -> Path:
        target = self.path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        target.chmod(mode)
        return target

    def install(self, deb: Path) -> str:
        """apt installs the package and what it depends on from Debian's archive; its output."""
        inside = f"/tmp/{deb.name}"
        shutil.copyfile(deb, self.path / inside.lstrip("/"))
        return self.run(
            f"apt-get update -qq && apt-get install -y -q --no-install-recommends {inside}"
        ).stdout

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
