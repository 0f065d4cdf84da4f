"""Step 3 of the bootstrap: the release channel's agent release, fetched and verified as the agent's
own update does (:mod:`agent.update`), installed under install_dir with ``current`` pointing at it."""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any

import aiohttp
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agent import __version__
from agent.bootstrap.options import BootstrapError, Options, say
from agent.config import UPDATE_STATE_FILE
from agent.pveadmin import Change
from agent.release import (
    ARTIFACT,
    CURRENT,
    Installation,
    Manifest,
    ReleaseError,
    ReleaseRefused,
    file_sha256,
    public_key_from_pem,
)
from agent.update.channel import NoRelease, UpdateFailed, fetch_channel, install_release, refuses
from agent.update.registry import REGISTRY_SETTING, Access
from agent.update.state import LOCK_WAIT, StateFile, update_lock


@dataclass(frozen=True)
class Updates:
    """Self-update as the orchestrator offers it: the release channel, and the key releases verify with."""

    channel_url: str
    public_key_pem: bytes
    # Read-only access to the site's registry, when the channel's releases are there.
    registry: Access | None = None

    @property
    def public_key(self) -> Ed25519PublicKey:
        return public_key_from_pem(self.public_key_pem, "the orchestrator's release_public_key")


@dataclass(frozen=True)
class Installed:
    """The release the service runs from install_dir/current, and what the bootstrap did to it."""

    version: str
    change: Change | str


def offered_updates(settings: dict[str, Any]) -> Updates | None:
    """Self-update's settings in the orchestrator's answer, checked; None when it offers none."""
    url, pem = settings.get("update_channel_url"), settings.get("release_public_key")
    if url is None and pem is None:
        return None
    if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme != "https" or not isinstance(pem, str):
        raise BootstrapError(
            "the orchestrator's answer offers self-update without an https:// channel URL and a release key"
        )
    registry = None
    if settings.get(REGISTRY_SETTING) is not None:
        try:
            registry = Access.from_settings(settings[REGISTRY_SETTING])
        except ValueError as exc:
            raise BootstrapError(f"the orchestrator's answer: {exc}") from None
    updates = Updates(url, pem.encode("ascii", "replace"), registry)
    try:
        _ = updates.public_key
    except ReleaseError as exc:
        raise BootstrapError(str(exc)) from None
    return updates


def install_channel_release(opts: Options, updates: Updates) -> Installed | None:
    """The channel's release, verified and installed under install_dir with ``current`` pointing at
    it; None when the channel publishes none. BootstrapError when it is refused or unreachable."""
    plan = (
        "No file was written, but the join token is used: fix the release channel (or ask its admin), "
        "then run this again with a new join token (createHostJoinToken)."
    )
    try:
        with update_lock(opts.install_dir, wait=LOCK_WAIT) as locked:
            if not locked:
                raise BootstrapError(
                    f"an agent update is being applied in {opts.shown(opts.install_dir)}", plan
                )
            return asyncio.run(_install_channel_release(opts, updates))
    except NoRelease as exc:
        say("agent release", f"none published ({exc})")
        return None
    except ReleaseRefused as exc:
        raise BootstrapError(f"the release channel's agent release was refused: {exc}", plan) from None
    except (UpdateFailed, ReleaseError, OSError) as exc:
        raise BootstrapError(f"cannot install the release channel's agent release: {exc}", plan) from None


async def _install_channel_release(opts: Options, updates: Updates) -> Installed:
    """Fetch and verify as the agent's own update does (agent.update), then install and point current."""
    installation = Installation(opts.install_dir)
    cafile = str(opts.ca_file) if opts.ca_file else None
    connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=cafile))
    async with aiohttp.ClientSession(connector=connector) as session:
        offered = await fetch_channel(session, updates.channel_url, updates.registry)
        manifest = offered.verify(updates.public_key)
        running = installation.pointed(CURRENT)
        if running and (kept := _keeps(opts, running, manifest, offered.pinned)):
            return Installed(running, kept)
        artifact = installation.artifact(manifest.version)
        fetched = not artifact.is_file() or file_sha256(artifact) != manifest.sha256
        if fetched:
            await install_release(session, offered, manifest, installation)
    if running != manifest.version:
        installation.make_current(manifest.version)
        return Installed(manifest.version, Change.WRITTEN)
    return Installed(manifest.version, Change.RENEWED if fetched else Change.UNCHANGED)


def _keeps(opts: Options, running: str, manifest: Manifest, pinned: bool) -> str | None:
    """Why the node keeps the release it runs rather than the channel's (as its update would), or None."""
    if running == manifest.version:
        return None
    if reason := refuses(running, manifest, pinned):
        return f"kept: {reason}"
    if StateFile(opts.install_dir / UPDATE_STATE_FILE).rolled_back().get(manifest.version) == manifest.sha256:
        return f"kept: {manifest.version} failed its health check on this node and was rolled back"
    return None


def report_release(opts: Options, updates: Updates | None, installed: Installed | None) -> Updates | None:
    """Say what runs and whether it updates itself; self-update's settings when it does.

    Self-update needs the service to run an installed release (agent.update), so without one the
    service runs this agent's own code, as before releases existed, and does not update.
    """
    if installed is not None:
        say(f"agent release {installed.version} {opts.shown(opts.install_dir / CURRENT)}", installed.change)
    runs_release = (opts.install_dir / CURRENT / ARTIFACT).is_file()
    if updates is None:
        say(
            "self-update",
            "off: the orchestrator offers no release channel (its FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY or "
            "FLEXPLANE_AGENT_RELEASES_DIR is not set); run this again once it does",
        )
        return None
    if not runs_release:
        say(
            "self-update",
            f"off: no release is installed, so the service runs this agent's own code ({__version__}); "
            "run this again once the channel publishes one",
        )
        return None
    say("self-update", f"on, from {updates.channel_url}")
    return updates
