"""Self-update: check the platform's release channel, verify, install beside, restart into it, roll back.

The serving agent (:class:`Updater`, a task of ``agent.server.serve``), every update_interval:

1. asks the channel (update_channel_url, over HTTPS) for its release: a signed manifest
   (:mod:`agent.release`) and whether an admin pinned it;
2. verifies the manifest's signature against release_public_key and decides: a newer version,
   or the pinned one even if older. A downgrade without a pin is refused; a version that was
   rolled back is not tried again (until the channel serves other bytes for it);
3. downloads the artifact to a temporary file in install_dir, never more than the manifest's
   size, and checks its size, sha256 and the version stamped inside: a partial, tampered or
   mislabelled file is refused;
4. installs it beside the running version (versions/<version>) and hands over to
   ``flexplane-agent update-apply``: a detached process (in a transient systemd unit on a node,
   update_apply_launcher) that outlives the agent's restart.

The apply step (:func:`apply`) runs the old version's code, known to work. It points ``current``
at the new version (``previous`` at the old), runs service_restart_command, and waits up to
health_deadline for the agent on ``listen`` to answer the health check and GetInfo with the new
version, over mTLS with the node's own certificate (agent.auth lets it ask just those). If it
does not, ``current`` goes back, the service restarts again, and the rollback is recorded.

Every outcome lands in the state file (update_state_file): GetInfo reports it and it survives
restarts. Refusals leave the running agent alone. A lock file keeps one update at a time.

``flexplane-agent bootstrap`` installs a node's first release with the same steps
(:func:`fetch_channel`, ``verify``, :func:`install_release`), so it refuses what an update would.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import random
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from packaging.version import Version

from agent import __version__
from agent.config import AgentConfig, UpdateConfig, split_listen
from agent.release import (
    CURRENT,
    MAX_ENVELOPE_BYTES,
    PREVIOUS,
    Installation,
    Manifest,
    ReleaseError,
    ReleaseRefused,
    check_artifact,
    load_public_key,
    read_envelope,
    verify,
)
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
APPLY_LOG = "update-apply.log"
DOWNLOAD_PREFIX = ".download-"
# The channel document is small; the artifact streams in chunks.
MAX_CHANNEL_BYTES = MAX_ENVELOPE_BYTES + 4096
CHUNK_BYTES = 256 * 1024
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 60.0
CHANNEL_TIMEOUT = 60.0
# The first check comes within this long of the start (or the interval, if shorter): a fleet
# restarted together does not ask the channel all at once.
FIRST_CHECK_SPREAD = 300.0
# update_apply_launcher (systemd-run) returns once the transient unit started.
LAUNCHER_TIMEOUT = 30.0
# The apply step: how long it waits for the lock, for the restart command, between probes.
LOCK_WAIT = 60.0
RESTART_TIMEOUT = 120.0
PROBE_INTERVAL = 0.5
PROBE_TIMEOUT = 3.0
AGENT_SERVICE = agent_pb2.DESCRIPTOR.services_by_name["Agent"].full_name


class UpdateFailed(Exception):
    """The update could not be carried out here and now (channel down, disk full, launcher missing)."""


class NoRelease(UpdateFailed):
    """The channel answers, and publishes no release to run (404): nothing to update to."""


# ------------------------------------------------------------------------------------ the record


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


# ------------------------------------------------------------------------------- the channel


@dataclass(frozen=True)
class ChannelRelease:
    """What the channel offers: a signed manifest, and whether an admin pinned its version."""

    envelope: dict[str, Any]
    envelope_bytes: bytes
    pinned: bool


def _ssl_context(ca: Path | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca) if ca else None)


async def fetch_channel(session: aiohttp.ClientSession, url: str) -> ChannelRelease:
    """Read the channel document; UpdateFailed when the channel does not answer with one."""
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=CHANNEL_TIMEOUT)) as response:
            body = await response.content.read(MAX_CHANNEL_BYTES + 1)
            if response.status == 404:
                raise NoRelease(f"the release channel {url} publishes no release: {_reason(body)}")
            if response.status != 200:
                raise UpdateFailed(f"the release channel {url} answered {response.status}: {_reason(body)}")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise UpdateFailed(f"the release channel {url} did not answer: {_describe(exc)}") from None
    if len(body) > MAX_CHANNEL_BYTES:
        raise UpdateFailed(f"the release channel {url} answered more than {MAX_CHANNEL_BYTES} bytes")
    try:
        document = json.loads(body)
    except ValueError:
        raise UpdateFailed(f"the release channel {url} did not answer JSON") from None
    release = document.get("release") if isinstance(document, dict) else None
    if not isinstance(release, dict):
        raise UpdateFailed(f"the release channel {url} names no release")
    envelope_bytes = json.dumps(release, indent=2).encode() + b"\n"
    return ChannelRelease(read_envelope(envelope_bytes), envelope_bytes, document.get("pinned") is True)


def _reason(body: bytes) -> str:
    """The error a JSON answer carries, else its first bytes."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:300]
    return body[:200].decode("utf-8", "replace") or "(no body)"


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def artifact_url(channel_url: str, manifest: Manifest) -> str:
    """The artifact's address: the manifest's url, relative to the channel's; https only."""
    url = urllib.parse.urljoin(channel_url, manifest.url)
    if urllib.parse.urlsplit(url).scheme != "https":
        raise ReleaseRefused(f"the release's artifact url {url} is not https")
    return url


async def download(session: aiohttp.ClientSession, url: str, manifest: Manifest, into: Path) -> None:
    """Stream the artifact into ``into``: at most the manifest's size, all of it, or ReleaseRefused."""
    received = 0
    digest = hashlib.sha256()
    timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT)
    try:
        async with session.get(url, timeout=timeout) as response:
            if response.status != 200:
                raise UpdateFailed(f"{url} answered {response.status}")
            with into.open("wb") as out:
                async for chunk in response.content.iter_chunked(CHUNK_BYTES):
                    received += len(chunk)
                    if received > manifest.size:
                        raise ReleaseRefused(
                            f"{url} sent more than the signed manifest's {manifest.size} bytes"
                        )
                    digest.update(chunk)
                    await asyncio.to_thread(out.write, chunk)
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
        raise ReleaseRefused(
            f"partial download of {url}: the transfer broke off after {received} of {manifest.size} bytes "
            f"({_describe(exc)})"
        ) from None
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        if received:
            raise ReleaseRefused(
                f"partial download of {url}: {received} of {manifest.size} bytes, then {_describe(exc)}"
            ) from None
        raise UpdateFailed(f"cannot download {url}: {_describe(exc)}") from None
    if received < manifest.size:
        raise ReleaseRefused(f"partial download of {url}: got {received} of {manifest.size} bytes")


async def install_release(
    session: aiohttp.ClientSession,
    channel_url: str,
    manifest: Manifest,
    envelope: bytes,
    installation: Installation,
) -> None:
    """Download a verified manifest's artifact beside the channel, check it, and install it into
    versions/<version> (``current`` is left alone); ReleaseRefused if it is not the manifest's."""
    url = artifact_url(channel_url, manifest)
    installation.versions.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=installation.versions, prefix=DOWNLOAD_PREFIX)
    os.close(fd)
    part = Path(name)
    try:
        await download(session, url, manifest, part)
        await asyncio.to_thread(check_artifact, part, manifest)
        installation.install(manifest, part, envelope)
    finally:
        part.unlink(missing_ok=True)


# ------------------------------------------------------------------------------- the decision


def refuses(running: str, manifest: Manifest, pinned: bool) -> str | None:
    """Why the release must not replace the running version, or None."""
    if Version(manifest.version) < Version(running) and not pinned:
        return (
            f"downgrade from {running} to {manifest.version} refused: the channel serves an older "
            "version and no admin pinned it"
        )
    return None


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


def dial_address(listen: str) -> str:
    """Where the node reaches its own agent: the listen address, loopback for a wildcard."""
    host, port = split_listen(listen)
    if host in ("0.0.0.0", ""):  # noqa: S104 - reading the wildcard, not binding it
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class Updater:
    """The serving agent's side: check, verify, install, hand over."""

    config: AgentConfig
    settings: UpdateConfig
    state: StateFile
    running: str = __version__
    installation: Installation = field(init=False)
    # The version the channel offers, once its signature verified ("" before).
    offered: str = ""

    def __post_init__(self) -> None:
        self.installation = Installation(self.settings.install_dir)

    def why_off(self) -> str | None:
        """Why this agent cannot update itself, or None."""
        if self.settings.interval <= 0:
            return "update_interval is 0"
        current = self.installation.pointed(CURRENT)
        if current != self.running:
            return (
                f"this agent runs version {self.running} but {self.installation.root / CURRENT} points at "
                f"{current or 'no installed release'}: install one with `flexplane-agent release install`"
            )
        return None

    async def run(self) -> None:
        """Check now and then until cancelled."""
        self._remove_stale_downloads()
        # Jitter, not a secret: spreads a fleet's checks.
        await asyncio.sleep(random.uniform(0, min(self.settings.interval, FIRST_CHECK_SPREAD)))  # noqa: S311
        while True:
            await self.check()
            await asyncio.sleep(self.settings.interval * random.uniform(0.9, 1.1))  # noqa: S311

    async def check(self) -> None:
        """One check; every outcome but "nothing to do" is logged and recorded, nothing is raised."""
        with update_lock(self.installation.root) as locked:
            if not locked or self._applying():
                log.info("self-update: an update is being applied; not checking now")
                return
            self.offered = ""
            try:
                await self._check()
            except ReleaseRefused as exc:
                log.warning("self-update refused: %s; %s keeps serving", exc, self.running)
                self.state.record(outcome(Result.RESULT_REFUSED, self.running, self.offered, str(exc)))
            except (UpdateFailed, ReleaseError, OSError) as exc:
                log.warning("self-update failed: %s", exc)
                self.state.record(outcome(Result.RESULT_FAILED, self.running, self.offered, str(exc)))

    async def _check(self) -> None:
        settings = self.settings
        connector = aiohttp.TCPConnector(ssl=_ssl_context(settings.channel_ca))
        async with aiohttp.ClientSession(connector=connector) as session:
            offered = await fetch_channel(session, settings.channel_url)
            manifest = verify(offered.envelope, load_public_key(settings.public_key))
            self.offered = manifest.version
            if manifest.version == self.running:
                log.debug("self-update: %s is the channel's version", self.running)
                return
            if self.state.rolled_back().get(manifest.version) == manifest.sha256:
                log.info("self-update: not trying %s again: it failed its health check", manifest.version)
                return
            if reason := refuses(self.running, manifest, offered.pinned):
                raise ReleaseRefused(reason)
            log.info("self-update: %s -> %s%s", self.running, manifest.version, " (pinned)" * offered.pinned)
            await install_release(
                session, settings.channel_url, manifest, offered.envelope_bytes, self.installation
            )
        self._hand_over(manifest)

    def _hand_over(self, manifest: Manifest) -> None:
        """Start the apply step, detached: it must outlive this process's restart."""
        root = self.installation.root
        plan = Plan(
            from_version=self.running,
            to_version=manifest.version,
            sha256=manifest.sha256,
            install_dir=str(root),
            state_file=str(self.state.path),
            restart_command=list(self.settings.restart_command),
            health_deadline=self.settings.health_deadline,
            address=dial_address(self.config.listen),
            identity=self.config.identity,
            tls_cert=str(self.config.tls_cert),
            tls_key=str(self.config.tls_key),
            ca=str(self.config.ca),
        )
        plan_path = root / PLAN_FILE
        plan.write(plan_path)
        argv = [
            *self.settings.apply_launcher,
            sys.executable,
            str(self.installation.artifact(self.running)),
            "update-apply",
            "--plan",
            str(root / PLAN_FILE),
        ]
        log.info("self-update: %s installed; handing over to %s", manifest.version, " ".join(argv))
        try:
            self._launch(argv)
        except UpdateFailed:
            plan_path.unlink(missing_ok=True)
            raise

    def _launch(self, argv: list[str]) -> None:
        root = self.installation.root
        with (root / APPLY_LOG).open("ab") as output:
            try:
                process = subprocess.Popen(  # noqa: S603 - our own command line, no shell
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=output,
                    cwd=root,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise UpdateFailed(
                    f"cannot start the apply step ({argv[0]}): {exc.strerror or exc}"
                ) from None
        if not self.settings.apply_launcher:
            # Reaped when it ends, should this agent outlive it (the restart usually comes first).
            threading.Thread(target=process.wait, daemon=True).start()
            return
        try:
            code = process.wait(LAUNCHER_TIMEOUT)
        except subprocess.TimeoutExpired:
            code = None
        if code != 0:
            raise UpdateFailed(
                f"{argv[0]} did not start the apply step (exit {code}); see {root / APPLY_LOG}"
            )

    def _applying(self) -> bool:
        """Whether an apply step has a plan to carry out (written before it starts, removed when done).

        A plan older than any apply step can take was left by one that died: it is removed.
        """
        plan = self.installation.root / PLAN_FILE
        try:
            age = time.time() - plan.stat().st_mtime
        except FileNotFoundError:
            return False
        if age < 2 * (self.settings.health_deadline + RESTART_TIMEOUT) + LOCK_WAIT + LAUNCHER_TIMEOUT:
            return True
        log.warning("self-update: removing %s, left by an apply step that did not finish", plan)
        plan.unlink(missing_ok=True)
        return False

    def _remove_stale_downloads(self) -> None:
        """Temporary files of downloads a crash or a restart interrupted."""
        if self.installation.versions.is_dir():
            for stale in self.installation.versions.glob(f"{DOWNLOAD_PREFIX}*"):
                stale.unlink(missing_ok=True)


class Updates:
    """Self-update as ``serve`` sees it: the recorded result for GetInfo, and the check loop."""

    def __init__(self, config: AgentConfig, status: AgentStatus) -> None:
        self.status = status
        self.state: StateFile | None = None
        self.updater: Updater | None = None
        if config.update is not None:
            self.state = StateFile(config.update.state_file)
            self.updater = Updater(config, config.update, self.state)
        self._task: asyncio.Task[None] | None = None
        self.refresh()

    def refresh(self) -> None:
        """Bring status.update up to date with the state file (the apply step writes it too)."""
        if self.state is not None:
            self.state.refresh(self.status)

    def start(self) -> None:
        if self.updater is None:
            log.info("self-update is off: no update_channel_url")
            return
        if reason := self.updater.why_off():
            log.warning("self-update is off: %s", reason)
            return
        self._task = asyncio.create_task(self.updater.run(), name="self-update")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


# --------------------------------------------------------------------------- the apply step


def restart(plan: Plan) -> str | None:
    """Run service_restart_command; why it failed, or None."""
    command = plan.restart_command
    try:
        done = subprocess.run(  # noqa: S603 - the operator's configured command, no shell
            command, capture_output=True, text=True, timeout=RESTART_TIMEOUT, check=False
        )
    except FileNotFoundError:
        return f"{command[0]} not found"
    except subprocess.TimeoutExpired:
        return f"{' '.join(command)} did not finish within {RESTART_TIMEOUT:g} s"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        return f"{' '.join(command)} exited with {done.returncode}: {said or '(no output)'}"
    return None


def probe(plan: Plan, version: str) -> str | None:
    """None when the agent answers its health check and GetInfo as ``version``; else what it did."""
    # Imported here: only the apply step calls agents.
    from agentclient import AgentPool, AgentTarget, ClientTLS
    from agentclient.errors import AgentError

    target = AgentTarget(plan.identity, plan.address)
    try:
        tls = ClientTLS.from_files(plan.ca, plan.tls_cert, plan.tls_key)
    except OSError as exc:
        return f"cannot read the node's certificate: {exc}"
    with AgentPool(tls, timeout=PROBE_TIMEOUT) as pool:
        try:
            if not pool.check_health(target, service=AGENT_SERVICE):
                return "its health service does not report SERVING"
            info = pool.info(target)
        except AgentError as exc:
            return str(exc)
    if info.version != version:
        return f"version {info.version} answers, not {version}"
    return None


def wait_until_answering(plan: Plan, version: str) -> str | None:
    """Probe until ``version`` answers or health_deadline passes; why it did not, or None."""
    deadline = time.monotonic() + plan.health_deadline
    while True:
        problem = probe(plan, version)
        if problem is None:
            return None
        if time.monotonic() >= deadline:
            return f"{version} did not answer within {plan.health_deadline:g} s: {problem}"
        time.sleep(PROBE_INTERVAL)


def apply(plan: Plan) -> UpdateState:
    """Switch to the plan's version, restart, check; roll back if it does not answer. The outcome."""
    installation = Installation(Path(plan.install_dir))
    state = StateFile(Path(plan.state_file))
    old, new = plan.from_version, plan.to_version
    earlier_previous = installation.pointed(PREVIOUS)
    installation.point(PREVIOUS, old)
    installation.point(CURRENT, new)
    started = time.monotonic()
    log.info("update-apply: current -> %s; restarting the agent", new)
    problem = restart(plan) or wait_until_answering(plan, new)
    if problem is None:
        message = f"{new} answered after {time.monotonic() - started:.0f} s; {old} kept as previous"
        result = outcome(Result.RESULT_UPDATED, old, new, message)
        state.record(result)
        removed = installation.prune({new, old})
        log.info("update-apply: %s%s", message, f"; removed {', '.join(removed)}" if removed else "")
        return result
    log.error("update-apply: %s failed: %s; rolling back to %s", new, problem, old)
    installation.point(CURRENT, old)
    installation.point(PREVIOUS, earlier_previous)
    message = f"{new} failed its health check ({problem}); rolled back to {old}"
    # Recorded before the restart: the old version must not try this release again.
    result = outcome(Result.RESULT_ROLLED_BACK, old, new, message)
    state.record(result, rolled_back=(new, plan.sha256))
    again = restart(plan) or wait_until_answering(plan, old)
    if again is not None:
        message = f"{message}, which does not answer either ({again})"
        result = outcome(Result.RESULT_FAILED, old, new, message)
        state.record(result)
        log.error("update-apply: %s", message)
        return result
    log.warning("update-apply: %s", message)
    return result


def apply_plan(path: Path) -> int:
    """``flexplane-agent update-apply --plan PATH``: 0 updated, 1 rolled back or failed, 2 no plan."""
    try:
        plan = Plan.read(path)
    except (OSError, ValueError, TypeError) as exc:
        log.error("update-apply: cannot read the plan %s: %s", path, exc)
        return 2
    with update_lock(Path(plan.install_dir), wait=LOCK_WAIT) as locked:
        if not locked:
            log.error("update-apply: another update holds %s", Path(plan.install_dir) / LOCK_FILE)
            return 2
        try:
            result = apply(plan)
        finally:
            path.unlink(missing_ok=True)
    return 0 if result.result == Result.RESULT_UPDATED else 1
