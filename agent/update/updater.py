"""The serving agent's side of self-update: check the channel now and then, install beside, hand over."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from agent import __version__
from agent.config import AgentConfig, UpdateConfig, split_listen
from agent.release import (
    CURRENT,
    Installation,
    Manifest,
    ReleaseError,
    ReleaseRefused,
    load_public_key,
)
from agent.status import AgentStatus
from agent.update.apply import RESTART_TIMEOUT
from agent.update.channel import (
    DOWNLOAD_PREFIX,
    UpdateFailed,
    fetch_channel,
    install_release,
    refuses,
    report_url,
)
from agent.update.registry import Access, Timeouts
from agent.update.state import LOCK_WAIT, PLAN_FILE, Plan, Result, StateFile, outcome, update_lock

log = logging.getLogger(__name__)

APPLY_LOG = "update-apply.log"
# The first check comes within this long of the start (or the interval, if shorter): a fleet
# restarted together does not ask the channel all at once.
FIRST_CHECK_SPREAD = 300.0
# update_apply_launcher (systemd-run) returns once the transient unit started.
LAUNCHER_TIMEOUT = 30.0


def _ssl_context(ca: Path | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca) if ca else None)


def dial_address(listen: str) -> str:
    """Where the node reaches its own agent: the listen address, loopback for a wildcard."""
    host, port = split_listen(listen)
    if host in ("0.0.0.0", ""):  # noqa: S104 - reading the wildcard, not binding it
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class UpdateOff(Exception):
    """This agent does not update itself: the message says why."""


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
    # The registry's connect and read timeouts (a test shortens them).
    timeouts: Timeouts = field(default_factory=Timeouts)
    # The version the last check handed over to the apply step ("" if none).
    handed_over: str = ""

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

    async def check(self) -> str:
        """One check; every outcome but "nothing to do" is logged and recorded, nothing is raised.

        What happened, in words (``flexplane-agent update now`` prints it).
        """
        with update_lock(self.installation.root) as locked:
            if not locked or self._applying():
                log.info("self-update: an update is being applied; not checking now")
                return "an update is being applied; not checking now"
            self.offered, self.handed_over = "", ""
            try:
                return await self._check()
            except ReleaseRefused as exc:
                log.warning("self-update refused: %s; %s keeps serving", exc, self.running)
                self.state.record(outcome(Result.RESULT_REFUSED, self.running, self.offered, str(exc)))
                return f"refused: {exc}; {self.running} keeps serving"
            except (UpdateFailed, ReleaseError, OSError) as exc:
                log.warning("self-update failed: %s", exc)
                self.state.record(outcome(Result.RESULT_FAILED, self.running, self.offered, str(exc)))
                return f"failed: {exc}"

    async def _check(self) -> str:
        settings = self.settings
        connector = aiohttp.TCPConnector(ssl=_ssl_context(settings.channel_ca))
        access = Access.read(settings.registry_credentials) if settings.registry_credentials else None
        config, last = self.config, self.state.last()
        url = report_url(settings.channel_url, config.zone, config.node, self.running, last)
        async with aiohttp.ClientSession(connector=connector) as session:
            offered = await fetch_channel(session, url, access, timeouts=self.timeouts)
            manifest = offered.verify(load_public_key(settings.public_key))
            self.offered = manifest.version
            if manifest.version == self.running:
                log.debug("self-update: %s is the channel's version", self.running)
                return f"{self.running} is the channel's version: nothing to do"
            if self.state.rolled_back().get(manifest.version) == manifest.sha256:
                log.info("self-update: not trying %s again: it failed its health check", manifest.version)
                return f"not trying {manifest.version} again: it failed its health check on this node"
            if reason := refuses(self.running, manifest, offered.pinned):
                raise ReleaseRefused(reason)
            log.info("self-update: %s -> %s%s", self.running, manifest.version, " (pinned)" * offered.pinned)
            await install_release(session, offered, manifest, self.installation)
        self._hand_over(manifest)
        self.handed_over = manifest.version
        return f"{manifest.version} installed beside {self.running}; the apply step restarts the agent"

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

    async def update_now(self) -> tuple[str, Updater]:
        """Check the channel now (an admin's or the node's request): what happened, and the updater
        (its offered and handed_over say more). UpdateOff when this agent does not update itself."""
        updater = self.updater
        if updater is None:
            raise UpdateOff("self-update is off: this agent's configuration has no update_channel_url")
        current = updater.installation.pointed(CURRENT)
        if current != updater.running:
            raise UpdateOff(
                f"self-update is off: this agent runs {updater.running}, not the installed release "
                f"{current or '(none)'}: install one with `flexplane-agent release install`"
            )
        said = await updater.check()
        self.refresh()
        return said, updater

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
