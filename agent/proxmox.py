"""The agent's client of its node's own Proxmox API, with the node's API token.

One aiohttp session for the agent's lifetime. The token secret is sent in the
Authorization header only: it is never logged, nor put in an error message.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import os
import re
import secrets
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from yarl import URL

from agent.metrics import observe_proxmox

log = logging.getLogger(__name__)

API_PREFIX = "/api2/json"
# Proxmox's largest answers (/cluster/resources of a big cluster) stay far below this.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_CHUNK = 256 * 1024
_UPLOAD_CHUNK = 1024 * 1024
# What upload() puts in a multipart body: the field names and values and file names flex.plane makes.
_SAFE_MULTIPART_VALUE = re.compile(r"[A-Za-z0-9._:-]+")


class ProxmoxUnreachableError(Exception):
    """Proxmox could not be reached or did not answer in time; the message names its URL."""


class ProxmoxNoAnswer(ProxmoxUnreachableError):
    """The request went out (or may have), but Proxmox's answer never came: Proxmox may have carried it
    out, so the caller must not send it again blindly."""


class ProxmoxTimeout(ProxmoxNoAnswer):
    """Proxmox did not answer within the time allowed."""


class ProxmoxBadAnswer(Exception):
    """Proxmox answered something that is not its API's JSON (or too much of it)."""


@dataclass(frozen=True)
class ProxmoxAnswer:
    """What Proxmox answered: its status, its JSON document as it came, its error text and field errors."""

    status: int
    document: bytes = b'{"data":null}'
    message: str = ""
    errors: dict[str, str] = field(default_factory=dict)

    def data(self) -> Any:
        """The document's ``data`` member, decoded."""
        decoded = orjson.loads(self.document)
        return decoded.get("data") if isinstance(decoded, dict) else None


class ProxmoxClient:
    """Calls ``<url>/api2/json<path>`` with an API token; use as an async context manager."""

    def __init__(
        self,
        url: str,
        token_id: str,
        token_secret: str,
        *,
        ca_file: Path | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._ca_file = ca_file
        self._authorization = f"PVEAPIToken={token_id}={token_secret}"
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> ProxmoxClient:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._ssl_context(), limit=32),
            headers={"Accept": "application/json"},
            # No proxy from the environment, no cookies: every request carries the token itself.
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            raise_for_status=False,
        )
        # aiohttp sends a GET, PUT or DELETE again, once, when its connection breaks (RFC 9112 allows
        # it). Not here: a Proxmox PUT or DELETE is not idempotent ("+5G", a destroy), and reads are
        # already retried, once per node, by the orchestrator. Private, because aiohttp (3.14) has no
        # public switch: no ClientSession, connector or per-request option, and a client middleware
        # could only stop it by changing the exception raised (aio-libs/aiohttp#10790). aiohttp's
        # own test client turns it off with this same attribute.
        self._session._retry_connection = False
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _ssl_context(self) -> ssl.SSLContext:
        """Verify Proxmox's certificate and host name against proxmox_ca, or the system store."""
        if self._ca_file is None:
            return ssl.create_default_context()
        return ssl.create_default_context(cafile=str(self._ca_file))

    async def request(
        self, method: str, path: str, params: Mapping[str, str], *, timeout: float | None = None
    ) -> ProxmoxAnswer:
        """Send one request; path must already be checked against the allowlist.

        GET and DELETE send params in the query string, POST and PUT as a form.
        Raises ProxmoxUnreachableError (ProxmoxTimeout after ``timeout`` seconds) or
        ProxmoxBadAnswer. Counted and timed in agent.metrics.
        """
        started = time.monotonic()
        try:
            answer = await self._request(method, path, params, timeout=timeout)
        except Exception as exc:
            observe_proxmox(method, started, None, exc)
            raise
        observe_proxmox(method, started, answer.status, None)
        return answer

    async def _request(
        self, method: str, path: str, params: Mapping[str, str], *, timeout: float | None = None
    ) -> ProxmoxAnswer:
        if self._session is None:
            raise RuntimeError("ProxmoxClient is not open: use it as an async context manager")
        limit = self.timeout if timeout is None else timeout
        # The path is plain ASCII with no % (see agent.proxy): send it exactly as checked.
        url = URL(self.url + API_PREFIX + path, encoded=True)
        in_query = method in ("GET", "DELETE")
        started = time.monotonic()
        with self._failures(
            f"the connection to Proxmox at {self.url} failed before its answer",
            f"Proxmox at {self.url} did not answer within {limit:g} s",
        ):
            async with self._session.request(
                method,
                url,
                params=dict(params) if in_query and params else None,
                data=dict(params) if not in_query else None,
                headers={"Authorization": self._authorization},
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=limit),
            ) as response:
                body = await _read_limited(response)
                status, reason = response.status, response.reason or ""
        log.debug("proxmox %s %s -> %d in %.0f ms", method, path, status, (time.monotonic() - started) * 1000)
        return self._answer(status, reason, body)

    async def websocket(
        self, path: str, params: Mapping[str, str], *, timeout: float | None = None
    ) -> aiohttp.ClientWebSocketResponse:
        """Open a websocket to ``<url>/api2/json<path>`` (e.g. a VM's vncwebsocket) with the API token.

        Raises ProxmoxUnreachableError when Proxmox cannot be reached, and ProxmoxBadAnswer when it
        refuses the upgrade (the message carries its status and reason)."""
        if self._session is None:
            raise RuntimeError("ProxmoxClient is not open: use it as an async context manager")
        url = URL(self.url + API_PREFIX + path, encoded=True)
        limit = self.timeout if timeout is None else timeout
        with self._failures(
            f"the websocket to Proxmox at {self.url} failed",
            f"Proxmox at {self.url} did not answer within {limit:g} s",
        ):
            try:
                return await self._session.ws_connect(
                    url,
                    params=dict(params),
                    headers={"Authorization": self._authorization},
                    protocols=("binary",),
                    timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=limit),
                    autoping=True,
                    max_msg_size=MAX_RESPONSE_BYTES,
                )
            except aiohttp.WSServerHandshakeError as exc:
                raise ProxmoxBadAnswer(f"Proxmox refused the websocket: {exc.status} {exc.message}") from None

    async def upload(
        self,
        path: str,
        fields: Mapping[str, str],
        source: Path,
        filename: str,
        *,
        timeout: float,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> ProxmoxAnswer:
        """POST a file as ``multipart/form-data`` (the storage upload API), streamed from source.

        fields come first and the file last, in a part named ``filename`` as Proxmox's upload
        API expects; on_progress(sent, total) follows the file's bytes. timeout bounds the
        whole request. Raises as :meth:`request` does.
        """
        if self._session is None:
            raise RuntimeError("ProxmoxClient is not open: use it as an async context manager")
        for value in (filename, *fields.keys(), *fields.values()):
            if not _SAFE_MULTIPART_VALUE.fullmatch(value):
                raise ValueError(f"{value!r} cannot go in a multipart body")
        boundary = "flexplane-" + secrets.token_hex(16)
        head = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            for name, value in fields.items()
        )
        head += (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="filename"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        size = source.stat().st_size

        async def body() -> AsyncIterator[bytes]:
            yield head
            sent = 0
            with source.open("rb") as handle:
                while chunk := await asyncio.to_thread(handle.read, _UPLOAD_CHUNK):
                    yield chunk
                    sent += len(chunk)
                    if on_progress is not None:
                        on_progress(sent, size)
            yield tail

        url = URL(self.url + API_PREFIX + path, encoded=True)
        headers = {
            "Authorization": self._authorization,
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            # A length, not chunks: Proxmox's upload handler reads exactly this many bytes.
            "Content-Length": str(len(head) + size + len(tail)),
        }
        with self._failures(
            f"the upload to Proxmox at {self.url} failed",
            f"Proxmox at {self.url} did not take the upload within {timeout:g} s",
        ):
            async with self._session.post(
                url,
                data=body(),
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as response:
                answer = await _read_limited(response)
                status, reason = response.status, response.reason or ""
        log.debug("proxmox POST %s (%d bytes) -> %d", path, size, status)
        return self._answer(status, reason, answer)

    @contextlib.contextmanager
    def _failures(self, failed: str, too_slow: str) -> Iterator[None]:
        """aiohttp's errors, and a timeout, as Proxmox's: ``failed`` says what failed (the cause follows),
        ``too_slow`` what did not happen in time."""
        try:
            yield
        except TimeoutError:
            raise ProxmoxTimeout(too_slow) from None
        except aiohttp.ClientConnectorCertificateError as exc:
            reason = (
                getattr(exc.certificate_error, "verify_message", "") or type(exc.certificate_error).__name__
            )
            raise ProxmoxUnreachableError(
                f"the certificate of Proxmox at {self.url} did not verify: {reason}"
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise ProxmoxUnreachableError(
                f"cannot connect to Proxmox at {self.url}: {os_reason(exc.os_error)}"
            ) from None
        except aiohttp.ClientError as exc:
            raise ProxmoxNoAnswer(f"{failed}: {describe_error(exc)}") from None

    def _answer(self, status: int, reason: str, body: bytes) -> ProxmoxAnswer:
        if 200 <= status < 300 and body[:1] == b"{":
            # Forwarded as it came: decoding and re-encoding a listing of thousands of guests on
            # every call would cost the node more than the call itself. The caller decodes it.
            return ProxmoxAnswer(status=status, document=body)
        try:
            decoded: Any = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            decoded = None
        if status >= 400:
            document = decoded if isinstance(decoded, dict) else {}
            message = str(document.get("message") or reason or _phrase(status)).strip()
            errors = document.get("errors")
            return ProxmoxAnswer(
                status=status,
                message=message,
                errors={str(k): str(v).strip() for k, v in errors.items()}
                if isinstance(errors, dict)
                else {},
            )
        if not 200 <= status < 300 or not isinstance(decoded, dict):
            raise ProxmoxBadAnswer(f"Proxmox at {self.url} answered {status} without its API's JSON")
        return ProxmoxAnswer(status=status, document=body)


async def _read_limited(response: aiohttp.ClientResponse) -> bytes:
    """The whole body, or ProxmoxBadAnswer beyond MAX_RESPONSE_BYTES."""
    if (response.content_length or 0) > MAX_RESPONSE_BYTES:
        raise ProxmoxBadAnswer(f"Proxmox's answer is larger than {MAX_RESPONSE_BYTES} bytes")
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > MAX_RESPONSE_BYTES:
            raise ProxmoxBadAnswer(f"Proxmox's answer is larger than {MAX_RESPONSE_BYTES} bytes")
    return bytes(body)


def os_reason(error: OSError) -> str:
    """ "Connection refused" rather than asyncio's "Connect call failed ('1.2.3.4', 8006)"."""
    if error.errno:
        return os.strerror(error.errno)
    return str(error.strerror or error or type(error).__name__)


def describe_error(exc: BaseException) -> str:
    """A short description of a client error, without any request details."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"
