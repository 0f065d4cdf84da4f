"""The release channel: what it offers (its artifact beside it, or in the site's registry), the
artifact downloaded and installed beside the running version, and whether it may replace it."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import ssl
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from packaging.version import Version

from agent.release import (
    MAX_ENVELOPE_BYTES,
    Installation,
    Manifest,
    ReleaseRefused,
    check_artifact,
    read_envelope,
    verify,
)
from agent.status import UpdateState
from agent.update.registry import (
    Access,
    Client,
    RegistryUnavailable,
    Repository,
    Timeouts,
    check_layer,
    read_at_most,
)
from agent.update.state import RESULT_NAMES

DOWNLOAD_PREFIX = ".download-"
# The channel document is small; the artifact streams in chunks.
MAX_CHANNEL_BYTES = MAX_ENVELOPE_BYTES + 4096
CHUNK_BYTES = 256 * 1024
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 60.0
CHANNEL_TIMEOUT = 60.0
# What a report says of the last update's message: enough to tell where it failed.
REPORT_MESSAGE_CHARS = 200


class UpdateFailed(Exception):
    """The update could not be carried out here and now (channel down, disk full, launcher missing)."""


class NoRelease(UpdateFailed):
    """The channel answers, and publishes no release to run (404): nothing to update to."""


@dataclass(frozen=True)
class ChannelRelease:
    """What the channel offers: a signed manifest, whether an admin pinned its version, and where its
    artifact is: beside the channel (the orchestrator serves it), or in the site's registry."""

    envelope: dict[str, Any]
    envelope_bytes: bytes
    pinned: bool
    channel_url: str = ""
    # The version the channel names; the signed manifest must say the same.
    version: str = ""
    registry: RegistryRelease | None = None

    def verify(self, key: Ed25519PublicKey) -> Manifest:
        """The signed manifest, if the release key signed it and the registry's artifact is the one it
        names; ReleaseRefused otherwise. Every release an agent installs passes here."""
        manifest = verify(self.envelope, key)
        if self.version and manifest.version != self.version:
            raise ReleaseRefused(
                f"the channel names version {self.version}, its signed manifest says {manifest.version}"
            )
        if self.registry is not None:
            check_layer(self.registry.oci, manifest, self.registry.where)
        return manifest


@dataclass(frozen=True)
class RegistryRelease:
    """A release the channel resolved to a registry digest, its OCI manifest pulled and checked."""

    client: Client
    digest: str
    oci: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.client.repository}@{self.digest}"


def report_url(channel_url: str, zone: str, node: str, running: str, last: UpdateState) -> str:
    """The channel's address with what this agent says of itself: its host, the version it runs and
    how its last update went. During a staged rollout the channel answers by host, and a report of a
    failed health check halts the rollout (orchestrator.services.rollouts). Nothing secret is sent."""
    report = {"zone": zone, "node": node, "running": running}
    if last.to_version:
        report |= {
            "result": RESULT_NAMES.get(last.result, "none"),
            "to": last.to_version,
            "message": last.message[:REPORT_MESSAGE_CHARS],
        }
    parts = urllib.parse.urlsplit(channel_url)
    query = urllib.parse.urlencode([*urllib.parse.parse_qsl(parts.query), *report.items()])
    return urllib.parse.urlunsplit(parts._replace(query=query))


async def fetch_channel(
    session: aiohttp.ClientSession,
    url: str,
    access: Access | None = None,
    *,
    timeouts: Timeouts | None = None,
    fallback_ssl: ssl.SSLContext | None = None,
) -> ChannelRelease:
    """Read the channel document, and for a registry release its OCI manifest and signed manifest
    (pulled by digest with ``access``); UpdateFailed when either does not answer with one. The
    messages name the channel without the query (the agent's report)."""
    requested, url = url, _without_query(url)
    try:
        async with session.get(requested, timeout=aiohttp.ClientTimeout(total=CHANNEL_TIMEOUT)) as response:
            body = await read_at_most(response.content, MAX_CHANNEL_BYTES)
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
    if not isinstance(document, dict):
        raise UpdateFailed(f"the release channel {url} names no release")
    pinned, version = document.get("pinned") is True, str(document.get("version") or "")
    located = document.get("registry")
    if isinstance(located, dict):
        try:
            repository = Repository.parse(str(located.get("repository")))
        except ValueError as exc:
            raise UpdateFailed(f"the release channel {url}: {exc}") from None
        client = Client(session, repository, access, timeouts=timeouts, fallback_ssl=fallback_ssl)
        digest = str(located.get("digest"))
        try:
            oci, envelope_bytes = await client.pull_envelope(digest)
        except RegistryUnavailable as exc:
            raise UpdateFailed(f"{exc}; the running version stays") from None
        return ChannelRelease(
            read_envelope(envelope_bytes),
            envelope_bytes,
            pinned,
            url,
            version,
            RegistryRelease(client, digest, oci),
        )
    release = document.get("release")
    if not isinstance(release, dict):
        raise UpdateFailed(f"the release channel {url} names no release")
    envelope_bytes = json.dumps(release, indent=2).encode() + b"\n"
    return ChannelRelease(read_envelope(envelope_bytes), envelope_bytes, pinned, url, version)


def _without_query(url: str) -> str:
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(query=""))


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


async def download(
    session: aiohttp.ClientSession,
    url: str,
    manifest: Manifest,
    into: Path,
    *,
    client: Client | None = None,
) -> None:
    """Stream the artifact into ``into``: at most the manifest's size, all of it, or ReleaseRefused.
    With a registry ``client``, as it authenticates and with its TLS and timeouts."""
    received = 0
    digest = hashlib.sha256()
    timeouts = client.timeouts if client is not None else Timeouts(CONNECT_TIMEOUT, READ_TIMEOUT)
    timeout = aiohttp.ClientTimeout(total=None, connect=timeouts.connect, sock_read=timeouts.read)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if client is not None:
                response = await client.request("GET", url)
                stack.push_async_callback(_release, response)
            else:
                response = await stack.enter_async_context(session.get(url, timeout=timeout))
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
    except RegistryUnavailable as exc:
        raise UpdateFailed(f"cannot download {url}: {exc}") from None
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


async def _release(response: aiohttp.ClientResponse) -> None:
    response.release()


async def install_release(
    session: aiohttp.ClientSession,
    offered: ChannelRelease,
    manifest: Manifest,
    installation: Installation,
) -> None:
    """Download a verified manifest's artifact (from the registry, or beside the channel), check it,
    and install it into versions/<version> (``current`` is left alone); ReleaseRefused if it is not
    the manifest's."""
    registry = offered.registry
    if registry is not None:
        url, client = registry.client.blob_url(manifest), registry.client
    else:
        url, client = artifact_url(offered.channel_url, manifest), None
    installation.versions.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=installation.versions, prefix=DOWNLOAD_PREFIX)
    os.close(fd)
    part = Path(name)
    try:
        await download(session, url, manifest, part, client=client)
        await asyncio.to_thread(check_artifact, part, manifest)
        installation.install(manifest, part, offered.envelope_bytes)
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
