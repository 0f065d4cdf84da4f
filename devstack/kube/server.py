"""The emulator served over HTTP or HTTPS on loopback, for synchronous code: tests and devstack."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import ssl
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp.web
import yaml

from devstack.kube.emulator import ClusterEmulator

# A PEM document: its bytes, or the path of a file holding it.
Pem = bytes | str | Path


class KubeServer:
    """A :class:`ClusterEmulator` served on loopback, from its own thread and event loop.

    Synchronous code (tests, the devstack launcher) starts it, points the official client at
    :meth:`write_kubeconfig`, and stops it; ``with KubeServer.start() as kube: ...`` does both.

    It serves plain HTTP, or HTTPS with a given certificate and key (``tls=(cert, key)``, each PEM
    bytes or a path), e.g. a tenant cluster's API server with the serving certificate that its
    control plane provider generated. Either way there is no authentication: client certificates
    are neither asked for nor checked, and any bearer token is accepted, which is why it serves on
    loopback only.

    It serves with aiohttp's low-level server rather than ``kmock.Server``: that one also swaps
    aiohttp's resolver process-wide and must be stopped in reverse order of starting, which
    several servers in one process (one per test, one for the world) cannot promise.
    """

    STARTUP_TIMEOUT = 10.0
    SHUTDOWN_TIMEOUT = 10.0

    def __init__(
        self,
        emulator: ClusterEmulator | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: tuple[Pem, Pem] | None = None,
    ) -> None:
        if not is_loopback(host):
            raise ValueError(
                f"the Kubernetes emulator has no authentication: serve it on loopback, not {host!r}"
            )
        self._emulator = emulator if emulator is not None else ClusterEmulator()
        self._host = host
        self._port = port
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._ssl_context = None if tls is None else server_ssl_context(*tls)

    @classmethod
    def start(
        cls,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        emulator: ClusterEmulator | None = None,
        tls: tuple[Pem, Pem] | None = None,
    ) -> Self:
        """Serve ``emulator`` (a new one by default) on ``host:port``; port 0 picks a free port.

        With ``tls=(certificate, key)`` (PEM bytes or paths; the certificate file may carry its chain)
        it serves HTTPS with them.
        """
        server = cls(emulator, host=host, port=port, tls=tls)
        server._start()
        return server

    @property
    def url(self) -> str:
        """The API server's URL, e.g. ``http://127.0.0.1:40123`` (``https://`` when serving TLS)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        scheme = "http" if self._ssl_context is None else "https"
        return f"{scheme}://{host}:{self._port}"

    @property
    def emulator(self) -> ClusterEmulator:
        """The served emulator: read its objects in tests (``emulator.objects[resource, ns, name]``)."""
        return self._emulator

    def install_crds(self, definitions: Iterable[Mapping[str, Any]]) -> None:
        """Create (or update) these CustomResourceDefinitions now, from any thread: as ``kubectl apply``."""
        definitions = list(definitions)
        if self._thread is None or self._loop is None:
            self._emulator.install_crds(definitions)
            return

        async def install() -> None:
            self._emulator.install_crds(definitions)

        asyncio.run_coroutine_threadsafe(install(), self._loop).result(self.STARTUP_TIMEOUT)

    def write_kubeconfig(
        self, path: str | Path, *, namespace: str = "default", certificate_authority: Pem | None = None
    ) -> Path:
        """Write a kubeconfig for this server (no credentials) and return its path.

        An HTTPS server's kubeconfig names the CA that its certificate chains to
        (``certificate_authority``, PEM bytes or a path), which clients then verify it with.
        """
        path = Path(path)
        name = "flexplane-devstack"
        cluster: dict[str, str] = {"server": self.url}
        if self._ssl_context is not None:
            if certificate_authority is None:
                raise ValueError("an HTTPS server's kubeconfig needs the CA that signed its certificate")
            cluster["certificate-authority-data"] = base64.b64encode(
                pem_bytes(certificate_authority)
            ).decode()
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": cluster}],
            "users": [{"name": name, "user": {}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
            "current-context": name,
            "preferences": {},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(kubeconfig, sort_keys=False))
        path.chmod(0o600)
        return path

    def stop(self) -> None:
        """End the open watches, stop serving, and join the thread. Stopping twice does nothing."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                self._loop.call_soon_threadsafe(self._stopping.set)
        thread.join(self.SHUTDOWN_TIMEOUT)
        if thread.is_alive():
            raise RuntimeError(
                f"the Kubernetes emulator at {self.url} did not stop in {self.SHUTDOWN_TIMEOUT}s"
            )
        if self._failure is not None:
            raise RuntimeError(f"the Kubernetes emulator at {self.url} failed") from self._failure

    def __enter__(self) -> Self:
        if self._thread is None:
            self._start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<KubeServer {self.url}>"

    def _start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the Kubernetes emulator is already running")
        self._ready.clear()
        self._failure = None
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve(),), name="kube-emulator", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(self.STARTUP_TIMEOUT):
            self.stop()
            raise RuntimeError(f"the Kubernetes emulator did not start in {self.STARTUP_TIMEOUT}s")
        if self._failure is not None:
            failure, self._failure = self._failure, None
            self.stop()
            raise RuntimeError(
                f"the Kubernetes emulator could not serve on {self._host}:{self._port}"
            ) from failure

    async def _serve(self) -> None:
        """The thread's whole life: serve until stop() sets the event, then shut down cleanly."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            async with self._emulator:
                # handler_cancellation: a watch whose client went away ends at once. No access log:
                # the emulator keeps the requests, for tests to assert on.
                server = aiohttp.web.Server(self._emulator, handler_cancellation=True, access_log=None)
                runner = aiohttp.web.ServerRunner(server, shutdown_timeout=1.0)
                await runner.setup()
                try:
                    site = aiohttp.web.TCPSite(runner, self._host, self._port, ssl_context=self._ssl_context)
                    await site.start()
                    self._port = runner.addresses[0][1]
                    self._ready.set()
                    await self._stopping.wait()
                    self._emulator.close_watches()
                finally:
                    await runner.cleanup()
        except Exception as error:  # reported by start() or stop(), in the caller's thread
            self._failure = error
        finally:
            self._ready.set()


def pem_bytes(pem: Pem) -> bytes:
    """PEM given as bytes, or read from a path."""
    return pem if isinstance(pem, bytes) else Path(pem).read_bytes()


def server_ssl_context(certificate: Pem, key: Pem) -> ssl.SSLContext:
    """A TLS server context with this certificate (and chain) and key; no client certificates asked."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if isinstance(certificate, bytes) or isinstance(key, bytes):
        # The ssl module loads certificates and keys from files only: hand it owner-only copies.
        with tempfile.TemporaryDirectory(prefix="kube-tls-") as directory:
            cert_file, key_file = Path(directory, "tls.crt"), Path(directory, "tls.key")
            cert_file.write_bytes(pem_bytes(certificate))
            key_file.touch(mode=0o600)
            key_file.write_bytes(pem_bytes(key))
            context.load_cert_chain(cert_file, key_file)
    else:
        context.load_cert_chain(certificate, key)
    return context


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
