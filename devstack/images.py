"""A small HTTP server of disk images on loopback, for the devstack and the tests.

It serves generated, deterministic image files (a qcow2 header and a few hundred KiB of
pseudo-random bytes, the same on every run) and a few routes that make faults easy:

    /images/<name>          the file
    /slow/<name>            the file in small pieces, with a pause between them
    /held/<name>            half the file, then the rest once ``release(name)`` is called (or after
                            HOLD_LIMIT seconds): a download that stays under way as long as a test needs
    /truncated/<name>       half the file, then the connection closes (Content-Length says all of it)
    /redirect?to=<url>      302 to url

    with ImageServer("127.0.0.1") as images:
        images.url("debian-12.qcow2"), images.checksum("debian-12.qcow2")
        images.hits("debian-12.qcow2")   # how many times any route sent (part of) the file

Agents refuse loopback image URLs unless their ``image_allow_hosts`` lists the server
(``images.netloc``).
"""

from __future__ import annotations

import hashlib
import http.server
import sys
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from types import TracebackType
from typing import Any

DEFAULT_IMAGE_BYTES = 384 * 1024
DEFAULT_IMAGES = ("debian-12.qcow2", "ubuntu-24.04.qcow2")
# qcow2's header starts with its magic and version (3): enough for an importer to tell the format.
QCOW2_MAGIC = b"QFI\xfb\x00\x00\x00\x03"
SLOW_PIECES = 16
# A held download goes on by itself after this long: below an agent's 60 s read timeout, so that it never
# fails for being held, and a test that forgot to release it does not hold the server's thread for good.
HOLD_LIMIT = 45.0


def fake_image(name: str, size: int = DEFAULT_IMAGE_BYTES) -> bytes:
    """size bytes for name: a qcow2 magic, then bytes drawn from name (the same on every run)."""
    body = hashlib.shake_256(f"flexplane fake image {name}".encode()).digest(size - len(QCOW2_MAGIC))
    return QCOW2_MAGIC + body


class ImageServer:
    """Serves images over HTTP on host:port (port 0: a free one) from a daemon thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        images: Mapping[str, bytes] | None = None,
        *,
        slow_pause: float = 0.05,
    ) -> None:
        self.host = host
        self.port = port
        self.slow_pause = slow_pause
        self._images: dict[str, bytes] = (
            dict(images) if images is not None else {name: fake_image(name) for name in DEFAULT_IMAGES}
        )
        self._hits: Counter[str] = Counter()
        self._gates: dict[str, threading.Event] = {}
        self._requests: list[str] = []
        self._lock = threading.Lock()
        self._server: _QuietServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> ImageServer:
        if self._server is not None:
            return self
        server = _QuietServer((self.host, self.port), _handler(self))
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"images-{self.netloc}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> ImageServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ content

    @property
    def netloc(self) -> str:
        """host:port, as an agent's image_allow_hosts lists the server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://{self.netloc}"

    def add(self, name: str, data: bytes) -> None:
        """Serve data as name too."""
        with self._lock:
            self._images[name] = data

    def data(self, name: str) -> bytes:
        return self._images[name]

    def names(self) -> list[str]:
        return sorted(self._images)

    def url(self, name: str) -> str:
        return f"{self.base_url}/images/{urllib.parse.quote(name)}"

    def slow_url(self, name: str) -> str:
        return f"{self.base_url}/slow/{urllib.parse.quote(name)}"

    def held_url(self, name: str) -> str:
        """Where name is served half, then held until ``release(name)``: each download of it waits."""
        with self._lock:
            self._gates.setdefault(name, threading.Event())
        return f"{self.base_url}/held/{urllib.parse.quote(name)}"

    def release(self, name: str) -> None:
        """Let the held downloads of name (those waiting, and any later one) send the rest."""
        with self._lock:
            gate = self._gates.setdefault(name, threading.Event())
        gate.set()

    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def truncated_url(self, name: str) -> str:
        return f"{self.base_url}/truncated/{urllib.parse.quote(name)}"

    def redirect_url(self, to: str) -> str:
        return f"{self.base_url}/redirect?{urllib.parse.urlencode({'to': to})}"

    def checksum(self, name: str, algorithm: str = "sha256") -> str:
        """``<algorithm>:<hex>`` of the image (sha256 or sha512)."""
        return f"{algorithm}:{hashlib.new(algorithm, self._images[name]).hexdigest()}"

    # ------------------------------------------------------------------ counting

    def hits(self, name: str | None = None) -> int:
        """How many responses sent (part of) image name, or of any image."""
        with self._lock:
            return self._hits[name] if name is not None else sum(self._hits.values())

    @property
    def requests(self) -> list[str]:
        """Every request path seen, in order (redirects included)."""
        with self._lock:
            return list(self._requests)

    def reset(self) -> None:
        with self._lock:
            self._hits.clear()
            self._requests.clear()

    def _record(self, path: str, image: str | None) -> None:
        with self._lock:
            self._requests.append(path)
            if image is not None:
                self._hits[image] += 1


class _QuietServer(http.server.ThreadingHTTPServer):
    """A threading server that does not print a traceback when a client hangs up (as tests make them)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _handler(owner: ImageServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "flexplane-images/1"
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet: tests and the devstack count requests instead

        def do_GET(self) -> None:
            parts = urllib.parse.urlsplit(self.path)
            route, _, rest = parts.path.lstrip("/").partition("/")
            name = urllib.parse.unquote(rest)
            if route == "redirect":
                owner._record(self.path, None)
                target = urllib.parse.parse_qs(parts.query).get("to", [""])[0]
                self._answer(302, b"", {"Location": target} if target else {})
                return
            data = owner._images.get(name) if route in ("images", "slow", "held", "truncated") else None
            owner._record(self.path, name if data is not None else None)
            if data is None:
                self._answer(404, b"not found\n", {"Content-Type": "text/plain"})
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if route == "images":
                self.wfile.write(data)
            elif route == "slow":
                piece = max(1, len(data) // SLOW_PIECES)
                for start in range(0, len(data), piece):
                    self.wfile.write(data[start : start + piece])
                    self.wfile.flush()
                    time.sleep(owner.slow_pause)
            elif route == "held":
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                owner._gate(name).wait(HOLD_LIMIT)
                self.wfile.write(data[len(data) // 2 :])
            else:  # truncated: half of what Content-Length promised, then close
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True

        def _answer(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
