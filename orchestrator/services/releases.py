"""Agent releases: the channel the agents update from, and the admin's pin.

The releases are the files ``flexplane-agent release build`` writes (``flexplane-agent-<version>.pyz``
and its signed manifest ``flexplane-agent-<version>.release.json``), in FLEXPLANE_AGENT_RELEASES_DIR:
a read-only volume, read again on every request (the stateless rule). The channel serves the
version an admin pinned, else the highest one published.

The orchestrator never verifies a signature (it does not hold the release key, and need not be
trusted with it): each agent verifies the manifest against its release public key, and the
artifact against the manifest. The orchestrator reads the manifests only to know the versions.
What it does vouch for is the pin, which lets agents accept an older version: it is a ConfigMap
of the platform namespace (kind ``agent-release``, id ``pin``), which only an ADMIN writes.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from packaging.version import InvalidVersion, Version

from orchestrator.errors import NotFound, Unavailable, ValidationFailed
from orchestrator.services import access
from orchestrator.services.context import Context
from orchestrator.sources.kube import kube

logger = logging.getLogger(__name__)

PIN_KIND = "agent-release"
PIN_ID = "pin"
WHERE = "release channel"
MANIFEST_SUFFIX = ".release.json"
# The files the channel serves: what the release build writes, nothing else of the folder.
RELEASE_FILE = re.compile(r"flexplane-agent-[0-9A-Za-z.+-]{1,64}\.(?:pyz|release\.json)")
# A signed manifest is a few hundred bytes.
MAX_MANIFEST_BYTES = 64 * 1024


@dataclass(frozen=True)
class PublishedRelease:
    """A release in the folder: its version, its signed manifest as stored, its artifact's file name."""

    version: str
    envelope: dict[str, Any]
    artifact: str

    @property
    def sort_key(self) -> Version:
        return Version(self.version)


@dataclass(frozen=True)
class Pin:
    """The version an admin told every agent to run, even if older."""

    version: str
    pinned_by: str
    pinned_at: datetime.datetime


@dataclass(frozen=True)
class Channel:
    """What the channel serves now: every published version, the pin, and the release served."""

    versions: list[str]
    pin: Pin | None
    served: PublishedRelease | None


# --------------------------------------------------------------------------------------- reading


def _folder() -> Path:
    configured = settings.FLEXPLANE_AGENT_RELEASES_DIR
    if not configured:
        raise Unavailable(WHERE, "no release channel is configured (FLEXPLANE_AGENT_RELEASES_DIR)")
    folder = Path(configured)
    if not folder.is_dir():
        raise Unavailable(WHERE, f"the release folder {folder} is missing")
    return folder


def _read_release(path: Path) -> PublishedRelease:
    """A signed manifest's version and artifact (unverified: agents verify); ValueError if unreadable."""
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ValueError("larger than a signed manifest")
    envelope = json.loads(path.read_bytes())
    if not isinstance(envelope, dict) or not isinstance(envelope.get("manifest"), str):
        raise ValueError("not a signed manifest")
    try:
        manifest = json.loads(base64.b64decode(envelope["manifest"], validate=True))
    except binascii.Error:
        raise ValueError("its manifest is not base64") from None
    version, artifact = manifest.get("version"), manifest.get("url")
    if not isinstance(version, str) or not isinstance(artifact, str):
        raise ValueError("its manifest names no version or url")
    Version(version)
    if path.name != f"flexplane-agent-{version}{MANIFEST_SUFFIX}":
        raise ValueError(f"it is the manifest of version {version}")
    return PublishedRelease(version, envelope, artifact)


def published() -> list[PublishedRelease]:
    """Every readable release in the folder, oldest first; unreadable manifests are skipped and logged."""
    releases = []
    for path in sorted(_folder().glob(f"*{MANIFEST_SUFFIX}")):
        try:
            releases.append(_read_release(path))
        except (OSError, ValueError, InvalidVersion) as exc:
            logger.warning("release channel: skipping %s: %s", path.name, exc)
    return sorted(releases, key=lambda release: release.sort_key)


def current_pin() -> Pin | None:
    entry = kube().get_catalog(PIN_KIND, PIN_ID)
    if entry is None:
        return None
    try:
        return Pin(
            version=str(entry.spec["version"]),
            pinned_by=str(entry.spec.get("pinnedBy", "")),
            pinned_at=datetime.datetime.fromisoformat(str(entry.spec["pinnedAt"])),
        )
    except (KeyError, ValueError) as exc:
        logger.warning("release channel: ignoring the unreadable pin: %r", exc)
        return None


def _channel() -> Channel:
    releases = published()
    pin = current_pin()
    if pin is not None:
        served = next((r for r in releases if r.version == pin.version), None)
    else:
        served = releases[-1] if releases else None
    return Channel([r.version for r in releases], pin, served)


def serve_channel() -> tuple[PublishedRelease, bool]:
    """The release the agents are to run and whether it is pinned (no authorization: agents ask).

    ``NotFound`` when there is none to serve: nothing published, or the pinned version gone.
    """
    channel = _channel()
    if channel.served is None:
        if channel.pin is not None:
            raise NotFound("pinned agent release", channel.pin.version)
        raise NotFound("agent release", "latest")
    return channel.served, channel.pin is not None


def release_file(name: str) -> Path:
    """A file of the release folder the channel serves (an artifact or a signed manifest)."""
    path = _folder() / name
    if not RELEASE_FILE.fullmatch(name) or not path.is_file():
        raise NotFound("release file", name)
    return path


# ------------------------------------------------------------------------------------------ admin


def channel(ctx: Context) -> Channel:
    """What the channel serves, and why. ADMIN only."""
    access.require_admin(ctx)
    return _channel()


def pin_version(ctx: Context, version: str) -> Pin:
    """Make the channel serve ``version`` to every agent, even those running a newer one. ADMIN only."""
    access.require_admin(ctx)
    version = version.strip()
    try:
        if str(Version(version)) != version:
            raise InvalidVersion
    except InvalidVersion:
        raise ValidationFailed("version", f"{version!r} is not a release version (e.g. 1.4.0)") from None
    versions = [release.version for release in published()]
    if version not in versions:
        raise ValidationFailed(
            "version",
            f"version {version} is not published in the release channel "
            f"(published: {', '.join(versions) or 'none'})",
        )
    pin = Pin(version, ctx.principal.subject, datetime.datetime.now(datetime.UTC).replace(microsecond=0))
    spec = {"version": pin.version, "pinnedBy": pin.pinned_by, "pinnedAt": pin.pinned_at.isoformat()}
    source = kube()
    stored = source.get_catalog(PIN_KIND, PIN_ID)
    if stored is None:
        source.create_catalog(PIN_KIND, PIN_ID, spec)
    else:
        source.replace_catalog(PIN_KIND, PIN_ID, spec, stored.resource_version)
    logger.info("agent releases: %s pinned version %s", pin.pinned_by, version)
    return pin


def unpin_version(ctx: Context) -> Pin | None:
    """Let the channel serve the highest version again; the pin removed, None if there was none. ADMIN."""
    access.require_admin(ctx)
    pin = current_pin()
    if kube().delete_catalog(PIN_KIND, PIN_ID):
        logger.info("agent releases: %s removed the pin", ctx.principal.subject)
    return pin
