"""What the serving agent and the apply step share: the state file, the update lock, the plan."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent.status import AgentStatus, UpdateState
from agentclient.proto.flexplane.agent.v1 import agent_pb2

log = logging.getLogger(__name__)

Result = agent_pb2.UpdateStatus
# The state file's words for the results (those of agentclient.pool.UpdateInfo).
RESULT_NAMES: dict[int, str] = {
    Result.RESULT_NONE: "none",
    Result.RESULT_UPDATED: "updated",
    Result.RESULT_REFUSED: "refused",
    Result.RESULT_ROLLED_BACK: "rolled-back",
    Result.RESULT_FAILED: "failed",
}
RESULTS: dict[str, int] = {name: result for result, name in RESULT_NAMES.items()}

LOCK_FILE = ".update.lock"
PLAN_FILE = "update-plan.json"
# How long the apply step (and the bootstrap) wait for the lock.
LOCK_WAIT = 60.0


class StateFile:
    """The last update result and the versions rolled back, as JSON; written atomically.

    Both the agent and the apply step write it (one at a time, under the update lock); the
    agent re-reads it when it changed, so GetInfo reports what the apply step found.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: int | None = None

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring the unreadable update state file %s: %s", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def last(self) -> UpdateState:
        raw = self.read().get("last")
        if not isinstance(raw, dict):
            return UpdateState()
        return UpdateState(
            result=RESULTS.get(str(raw.get("result")), Result.RESULT_NONE),
            from_version=str(raw.get("from_version", "")),
            to_version=str(raw.get("to_version", "")),
            message=str(raw.get("message", "")),
            at=float(raw.get("at") or 0.0),
        )

    def rolled_back(self) -> dict[str, str]:
        """Versions whose health check failed, with the sha256 of the artifact that failed."""
        raw = self.read().get("rolled_back")
        return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}

    def record(self, state: UpdateState, *, rolled_back: tuple[str, str] | None = None) -> None:
        data = self.read()
        last = asdict(state)
        last["result"] = RESULT_NAMES.get(state.result, "none")
        data["last"] = last
        if rolled_back is not None:
            data["rolled_back"] = {**self.rolled_back(), rolled_back[0]: rolled_back[1]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.write("\n")
        Path(name).replace(self.path)

    def refresh(self, status: AgentStatus) -> None:
        """Load the last result into status if the file changed since it was last read."""
        try:
            seen: int | None = self.path.stat().st_mtime_ns
        except OSError:
            seen = None
        if seen != self._seen:
            self._seen = seen
            status.update = self.last()


def outcome(result: int, from_version: str, to_version: str, message: str) -> UpdateState:
    return UpdateState(result, from_version, to_version, message, time.time())


@contextlib.contextmanager
def update_lock(install_dir: Path, *, wait: float = 0.0) -> Iterator[bool]:
    """Hold install_dir's update lock; yields False when another process holds it past ``wait``."""
    install_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(install_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.1)
        yield True
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Plan:
    """What the apply step needs, written by the agent into install_dir (nothing secret)."""

    from_version: str
    to_version: str
    sha256: str
    install_dir: str
    state_file: str
    restart_command: list[str]
    health_deadline: float
    address: str
    identity: str
    tls_cert: str
    tls_key: str
    ca: str

    def write(self, path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(asdict(self), out, indent=2)

    @classmethod
    def read(cls, path: Path) -> Plan:
        return cls(**json.loads(path.read_text(encoding="utf-8")))
