"""A systemd stand-in for one service: run it, restart it when asked and whenever it dies.

On a Proxmox node the agent is the systemd unit ``flexplane-agent``: self-update restarts it
with ``systemctl restart flexplane-agent`` (the agent's service_restart_command) and systemd
starts it again if it dies (``Restart=always``). Here::

    python devstack/supervisor.py run --state-dir D [--log F] -- python .../current/flexplane-agent.pyz serve
    python devstack/supervisor.py restart --state-dir D     # what service_restart_command points at
    python devstack/supervisor.py stop --state-dir D

``run`` starts the command in a process group of its own and writes its pid to ``D/main.pid``
(systemd's MainPID) and its own to ``D/supervisor.pid``. On SIGHUP it stops the group
(SIGTERM, then SIGKILL after a grace period, as systemd's control-group kill does) and starts
the command again; when the command exits by itself it is started again after a short delay;
SIGTERM stops both. ``restart`` sends the SIGHUP and returns once a new main process runs, as
``systemctl restart`` returns once the unit started. Only the standard library: the agent's
apply step runs it by path, from a process that has nothing of the devstack on sys.path.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import BinaryIO

SUPERVISOR_PID = "supervisor.pid"
MAIN_PID = "main.pid"
STOP_GRACE = 10.0
RESTART_DELAY = 1.0
POLL = 0.05
RESTART_TIMEOUT = 30.0


def _write_atomically(path: Path, text: str) -> None:
    staged = path.with_name(f".{path.name}.new")
    staged.write_text(text)
    staged.replace(path)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Supervisor:
    """Keeps one command running (``Restart=always``); restarts it on SIGHUP; stops on SIGTERM."""

    def __init__(self, command: Sequence[str], state_dir: Path, log: BinaryIO, delay: float) -> None:
        self.command = list(command)
        self.state_dir = state_dir
        self.log = log
        self.delay = delay
        self.child: subprocess.Popen[bytes] | None = None
        self.restart_requested = False
        self.stop_requested = False

    def say(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self.log.write(f"{stamp} supervisor: {message}\n".encode())
        self.log.flush()

    def _on_hup(self, signum: int, frame: FrameType | None) -> None:
        self.restart_requested = True

    def _on_term(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True

    def start_child(self) -> None:
        self.child = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
        )
        _write_atomically(self.state_dir / MAIN_PID, f"{self.child.pid}\n")
        self.say(f"started {self.child.pid}: {' '.join(self.command)}")

    def stop_child(self) -> None:
        """Stop the child's whole process group: SIGTERM, then SIGKILL after the grace period."""
        child, self.child = self.child, None
        if child is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # whatever else of the group is left
        self.say(f"stopped {child.pid} (exit {child.returncode})")

    def run(self) -> int:
        signal.signal(signal.SIGHUP, self._on_hup)
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.state_dir / SUPERVISOR_PID, f"{os.getpid()}\n")
        self.start_child()
        died_at: float | None = None
        while not self.stop_requested:
            time.sleep(POLL)
            if self.restart_requested:
                self.restart_requested = False
                self.say("restart requested")
                self.stop_child()
                self.start_child()
                died_at = None
            elif self.child is not None and self.child.poll() is not None:
                self.say(
                    f"{self.child.pid} exited with {self.child.returncode}; restarting in {self.delay:g} s"
                )
                self.child = None
                died_at = time.monotonic()
            elif self.child is None and died_at is not None and time.monotonic() - died_at >= self.delay:
                self.start_child()
                died_at = None
        self.stop_child()
        for name in (MAIN_PID, SUPERVISOR_PID):
            (self.state_dir / name).unlink(missing_ok=True)
        return 0


def request_restart(state_dir: Path, timeout: float = RESTART_TIMEOUT) -> int:
    """SIGHUP the supervisor and wait until a new main process runs; 0 when it does."""
    supervisor = read_pid(state_dir / SUPERVISOR_PID)
    if supervisor is None or not alive(supervisor):
        print(f"supervisor: no supervisor runs for {state_dir}", file=sys.stderr)
        return 1
    before = read_pid(state_dir / MAIN_PID)
    os.kill(supervisor, signal.SIGHUP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = read_pid(state_dir / MAIN_PID)
        if now is not None and now != before and alive(now):
            return 0
        time.sleep(POLL)
    print(f"supervisor: the service did not start again within {timeout:g} s", file=sys.stderr)
    return 1


def request_stop(state_dir: Path, timeout: float = STOP_GRACE + 5) -> int:
    """SIGTERM the supervisor and wait until it is gone; 0 when it is."""
    supervisor = read_pid(state_dir / SUPERVISOR_PID)
    if supervisor is None or not alive(supervisor):
        return 0
    os.kill(supervisor, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(supervisor):
            return 0
        time.sleep(POLL)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="supervisor", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="action", required=True)
    run = commands.add_parser("run", help="run COMMAND and keep it running")
    run.add_argument("--state-dir", type=Path, required=True)
    run.add_argument("--log", type=Path, help="append the command's output here (default: stderr)")
    run.add_argument("--restart-delay", type=float, default=RESTART_DELAY)
    run.add_argument("command", nargs=argparse.REMAINDER)
    for name in ("restart", "stop"):
        sub = commands.add_parser(name)
        sub.add_argument("--state-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.action == "restart":
        return request_restart(args.state_dir)
    if args.action == "stop":
        return request_stop(args.state_dir)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("run needs a command after --")
    with contextlib.ExitStack() as stack:
        log: BinaryIO = stack.enter_context(args.log.open("ab")) if args.log else sys.stderr.buffer
        return Supervisor(command, args.state_dir, log, args.restart_delay).run()


if __name__ == "__main__":
    sys.exit(main())
