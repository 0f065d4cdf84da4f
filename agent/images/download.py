"""Downloading images: the URL policy on every hop and every connection, a size limit, the digest on the way.

The agent fetches an image itself, so the URL policy of :mod:`agentclient.urlpolicy` is
enforced here, twice:

- before each request, the URL (the first one and every redirect target, followed by
  hand, at most :data:`MAX_REDIRECTS`) goes through ``check_url``, DNS included, for a
  clear refusal before anything is sent;
- when connecting, :class:`PolicyResolver` checks the addresses aiohttp is about to
  connect to, so that a name cannot answer a public address to the check and a private
  one to the connection (DNS rebinding).

The body streams to a temporary file in the image cache while it is hashed; a download
that fails in any way removes its file.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver
from yarl import URL

from agent.proxmox import describe_error, os_reason
from agentclient.urlpolicy import (
    UrlRefused,
    UrlUnresolvable,
    check_addresses,
    check_url,
    display_url,
    is_allowlisted,
    literal_address,
)

log = logging.getLogger(__name__)

MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CHUNK_BYTES = 1024 * 1024
# The first bytes of a download, kept to tell its format.
HEAD_BYTES = 512
# Progress is reported at most this often (seconds).
PROGRESS_INTERVAL = 0.25
# A server that accepts no connection for this long, or sends nothing for this long, has failed.
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 60.0
# Temporary files of downloads in progress; any left in the cache at start-up are removed.
PART_PREFIX = "fp-download-"
PART_SUFFIX = ".part"
# Free space kept on the cache's file system beyond the image itself.
FREE_SPACE_MARGIN = 256 * 1024 * 1024


class DownloadRefused(Exception):
    """The image is not fetched: its URL, a redirect, or its size is against the policy."""


class DownloadFailed(Exception):
    """The image could not be downloaded: the message says why."""


class ChecksumMismatchError(Exception):
    """The download's digest is not the checksum given."""


@dataclass(frozen=True)
class Downloaded:
    """A verified download: the file, its size, its digest and its first bytes."""

    path: Path
    size: int
    algorithm: str
    digest: str
    head: bytes


class _AddressRefused(OSError):
    """Raised by the resolver: aiohttp reports OSErrors of resolution as ClientConnectorDNSError."""


class PolicyResolver(AbstractResolver):
    """The system resolver, refusing names with any address that the URL policy refuses.

    Hosts in allow_hosts (host or host:port) are not checked. aiohttp does not call a
    resolver for IP literals: check_url refuses those before any request.
    """

    def __init__(self, allow_hosts: Collection[str]) -> None:
        self._resolver = ThreadedResolver()
        self._allow_hosts = allow_hosts

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._resolver.resolve(host, port, family)
        if is_allowlisted(host, port, self._allow_hosts):
            return results
        addresses = []
        for result in results:
            address = literal_address(str(result["host"]).split("%", 1)[0])
            if address is None:
                raise _AddressRefused(f"{host} resolved to {result['host']!r}, which is not an IP address")
            addresses.append(address)
        try:
            check_addresses(host, addresses)
        except UrlRefused as exc:
            raise _AddressRefused(str(exc)) from None
        return results

    async def close(self) -> None:
        await self._resolver.close()


ProgressCallback = Callable[[int, int], None]


class Downloader:
    """Fetches images under the URL policy; use as an async context manager (one per agent)."""

    def __init__(self, allow_hosts: Collection[str], max_bytes: int, *, ca_file: Path | None = None) -> None:
        self.allow_hosts = frozenset(allow_hosts)
        self.max_bytes = max_bytes
        self._ca_file = ca_file
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Downloader:
        context = ssl.create_default_context()
        if self._ca_file is not None:
            context.load_verify_locations(cafile=str(self._ca_file))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                ssl=context, resolver=PolicyResolver(self.allow_hosts), use_dns_cache=False, limit=16
            ),
            # No proxy from the environment, no cookies, the bytes exactly as served.
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            raise_for_status=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT),
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def check(self, url: str) -> None:
        """DownloadRefused (or DownloadFailed for a name that does not resolve) unless url may be fetched."""
        try:
            await asyncio.to_thread(check_url, url, self.allow_hosts, True)
        except UrlUnresolvable as exc:
            raise DownloadFailed(str(exc)) from None
        except UrlRefused as exc:
            raise DownloadRefused(str(exc)) from None

    async def fetch(
        self,
        url: str,
        *,
        algorithm: str,
        digest: str,
        directory: Path,
        on_progress: ProgressCallback | None = None,
        on_verify: Callable[[int], None] | None = None,
    ) -> Downloaded:
        """Download url into a new file of directory and verify its digest; returns the file.

        Redirects are followed by hand, each target checked against the policy. Raises
        DownloadRefused, DownloadFailed or ChecksumMismatchError, having removed the file.
        """
        if self._session is None:
            raise RuntimeError("Downloader is not open: use it as an async context manager")
        current = url
        for hop in range(MAX_REDIRECTS + 1):
            try:
                await self.check(current)
            except DownloadRefused as exc:
                if hop:
                    raise DownloadRefused(
                        f"the redirect to {display_url(current)} is refused: {exc}"
                    ) from None
                raise
            async with _get(self._session, current) as response:
                if response.status in REDIRECT_STATUSES:
                    current = _redirect_target(current, response)
                    log.info("image download %s redirected to %s", display_url(url), display_url(current))
                    continue
                if response.status != 200:
                    raise DownloadFailed(
                        f"{display_url(current)} answered {response.status} {response.reason or ''}".rstrip()
                    )
                return await self._save(
                    response, current, algorithm, digest, directory, on_progress, on_verify
                )
        raise DownloadFailed(f"{display_url(url)} redirected more than {MAX_REDIRECTS} times")

    async def _save(
        self,
        response: aiohttp.ClientResponse,
        url: str,
        algorithm: str,
        expected: str,
        directory: Path,
        on_progress: ProgressCallback | None,
        on_verify: Callable[[int], None] | None,
    ) -> Downloaded:
        """Stream the body to a new file of directory, hashing it; verify; remove the file on any failure."""
        total = response.content_length or 0
        if total > self.max_bytes:
            raise DownloadRefused(f"{display_url(url)} is {total} bytes, more than {self._limit}")
        _prepare(directory, total)
        descriptor, name = tempfile.mkstemp(dir=directory, prefix=PART_PREFIX, suffix=PART_SUFFIX)
        path = Path(name)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                done, head, actual = await self._stream(response, url, handle, algorithm, total, on_progress)
            if total and done != total:
                raise DownloadFailed(
                    f"the download of {display_url(url)} ended after {done} of {total} bytes"
                )
            if on_verify is not None:
                on_verify(done)
            if actual != expected:
                raise ChecksumMismatchError(
                    f"the {algorithm} of {display_url(url)} is {actual}, not the {expected} given"
                )
            return Downloaded(path=path, size=done, algorithm=algorithm, digest=actual, head=head)
        except BaseException:
            path.unlink(missing_ok=True)
            raise

    async def _stream(
        self,
        response: aiohttp.ClientResponse,
        url: str,
        handle: BinaryIO,
        algorithm: str,
        total: int,
        on_progress: ProgressCallback | None,
    ) -> tuple[int, bytes, str]:
        """Write the body to handle: (bytes written, the first HEAD_BYTES of them, their hex digest)."""
        hasher = hashlib.new(algorithm)
        done, head, reported = 0, b"", 0.0
        try:
            async for chunk in response.content.iter_chunked(CHUNK_BYTES):
                done += len(chunk)
                if done > self.max_bytes:
                    raise DownloadRefused(f"{display_url(url)} sent more than {self._limit}")
                if len(head) < HEAD_BYTES:
                    head += chunk[: HEAD_BYTES - len(head)]
                await asyncio.to_thread(_write, handle, hasher, chunk)
                if on_progress is not None and time.monotonic() - reported >= PROGRESS_INTERVAL:
                    reported = time.monotonic()
                    on_progress(done, total)
        except TimeoutError:
            raise DownloadFailed(f"{display_url(url)} sent nothing for {READ_TIMEOUT:g} s") from None
        except aiohttp.ClientPayloadError:
            of = f" of {total}" if total else ""
            raise DownloadFailed(
                f"the download of {display_url(url)} was cut short after {done}{of} bytes"
            ) from None
        except aiohttp.ClientError as exc:
            raise DownloadFailed(
                f"the download of {display_url(url)} failed after {done} bytes: {describe_error(exc)}"
            ) from None
        except OSError as exc:
            raise DownloadFailed(f"cannot write the image to the cache: {exc.strerror or exc}") from None
        if on_progress is not None:
            on_progress(done, total or done)
        return done, head, hasher.hexdigest()

    @property
    def _limit(self) -> str:
        return f"this agent's image_max_bytes ({self.max_bytes})"


@contextlib.asynccontextmanager
async def _get(session: aiohttp.ClientSession, url: str) -> AsyncIterator[aiohttp.ClientResponse]:
    """A GET of an image URL, with aiohttp's failures as DownloadRefused or DownloadFailed."""
    try:
        response = await session.get(url, allow_redirects=False, headers={"Accept-Encoding": "identity"})
    except aiohttp.ClientConnectorDNSError as exc:
        if isinstance(exc.os_error, _AddressRefused):
            raise DownloadRefused(str(exc.os_error)) from None
        raise DownloadFailed(f"cannot resolve the host of {display_url(url)}: {exc.os_error}") from None
    except aiohttp.ClientConnectorCertificateError as exc:
        reason = getattr(exc.certificate_error, "verify_message", "") or str(exc.certificate_error)
        raise DownloadFailed(f"the certificate of {display_url(url)} did not verify: {reason}") from None
    except aiohttp.ClientConnectorError as exc:
        raise DownloadFailed(f"cannot connect to {display_url(url)}: {os_reason(exc.os_error)}") from None
    except TimeoutError:
        raise DownloadFailed(f"{display_url(url)} did not answer in time") from None
    except aiohttp.ClientError as exc:
        raise DownloadFailed(f"the request for {display_url(url)} failed: {describe_error(exc)}") from None
    try:
        yield response
    finally:
        response.release()


def remove_stale_parts(directory: Path) -> int:
    """Remove the temporary files that downloads interrupted by a crash left in directory; how many."""
    removed = 0
    try:
        leftovers = list(directory.glob(f"{PART_PREFIX}*{PART_SUFFIX}"))
    except OSError:
        return 0
    for path in leftovers:
        try:
            path.unlink()
            removed += 1
        except OSError as exc:
            log.warning("cannot remove the stale download %s: %s", path, exc.strerror or exc)
    return removed


def _prepare(directory: Path, size: int) -> None:
    """Create the cache if needed and check that a download of size bytes fits in it."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        free = shutil.disk_usage(directory).free
    except OSError as exc:
        raise DownloadFailed(f"cannot use the image cache {directory}: {exc.strerror or exc}") from None
    if size and size + FREE_SPACE_MARGIN > free:
        raise DownloadFailed(f"the image cache {directory} has {free} bytes free, too few for {size} bytes")


def _write(handle: BinaryIO, hasher: Any, chunk: bytes) -> None:
    """Hash and write one chunk (in a worker thread: both release the GIL on large buffers)."""
    hasher.update(chunk)
    handle.write(chunk)


def _redirect_target(current: str, response: aiohttp.ClientResponse) -> str:
    location = response.headers.get("Location", "")
    if not location:
        raise DownloadFailed(f"{display_url(current)} answered {response.status} without a Location")
    try:
        return str(URL(current).join(URL(location)))
    except (ValueError, TypeError) as exc:
        raise DownloadRefused(f"{display_url(current)} redirected to an invalid URL ({exc})") from None
