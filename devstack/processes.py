"""The world's child processes: started with their output in a log file, stopped with a grace period,
and asked to die with the process that started them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it when the devstack process dies, however it dies."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Process:
    """A child process started by the world, with its output in a log file (from ``offset`` on)."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    offset: int = 0

    def stop(self, grace: float = 5.0) -> None:
        stop_all([self], grace)

    def output(self) -> str:
        """What this process wrote (not what earlier runs appended before it)."""
        return self.log.read_bytes()[self.offset :].decode(errors="replace") if self.log.exists() else ""


def spawn(
    name: str, argv: list[str], log: Path, env: dict[str, str] | None = None, *, append: bool = False
) -> Process:
    """Start argv, its output in log: a new log, or appended to (a service's runs, as a journal does)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    offset = log.stat().st_size if append and log.exists() else 0
    with log.open("ab" if append else "wb") as out:
        popen = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            preexec_fn=_die_with_parent,
        )
    return Process(name, popen, log, offset)


def stop_all(processes: Iterable[Process], grace: float = 5.0) -> None:
    """Stop ``processes`` together: each is sent SIGTERM at once, then awaited until ``grace`` seconds
    from then, and killed past it. A world's dozen processes stop in one grace, not one after another."""
    running = [process for process in processes if process.popen.poll() is None]
    for process in running:
        process.popen.terminate()
    deadline = time.monotonic() + grace
    for process in running:
        try:
            process.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.popen.kill()
            process.popen.wait(grace)


def wait_for_line(process: Process, needle: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in process.output():
            return
        if process.popen.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"{process.name} did not start ({needle!r} not seen):\n{process.output()[-4000:]}")
