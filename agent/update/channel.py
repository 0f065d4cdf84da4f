"""The release channel: what it offers, the artifact downloaded and installed beside, and whether
a release may replace the running version."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from packaging.version import Version

from agent.release import (
    MAX_ENVELOPE_BYTES,
    Installation,
    Manifest,
    ReleaseRefused,
    check_artifact,
    read_envelope,
)

DOWNLOAD_PREFIX = ".download-"
# The channel document is small; the artifact streams in chunks.
MAX_CHANNEL_BYTES = MAX_ENVELOPE_BYTES + 4096
CHUNK_BYTES = 256 * 1024
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 60.0
CHANNEL_TIMEOUT = 60.0


class UpdateFailed(Exception):
    """The update could not be carried out here and now (channel down, disk full, launcher missing)."""


class NoRelease(UpdateFailed):
    """The channel answers, and publishes no release to run (404): nothing to update to."""


@dataclass(frozen=True)
class ChannelRelease:
    """What the channel offers: a signed manifest, and whether an admin pinned its version."""

    envelope: dict[str, Any]
    envelope_bytes: bytes
    pinned: bool


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


def refuses(running: str, manifest: Manifest, pinned: bool) -> str | None:
    """Why the release must not replace the running version, or None."""
    if Version(manifest.version) < Version(running) and not pinned:
        return (
            f"downgrade from {running} to {manifest.version} refused: the channel serves an older "
            "version and no admin pinned it"
        )
    return None
