"""The emulator served over HTTP on loopback, for synchronous code: tests and the devstack launcher."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import threading
from pathlib import Path
from types import TracebackType
from typing import Self

import aiohttp.web
import yaml

from devstack.kube.emulator import ClusterEmulator


class KubeServer:
    """A :class:`ClusterEmulator` served over plain HTTP on loopback, from its own thread and event loop.

    Synchronous code (tests, the devstack launcher) starts it, points the official client at
    :meth:`write_kubeconfig`, and stops it; ``with KubeServer.start() as kube: ...`` does both.

    It serves with aiohttp's low-level server rather than ``kmock.Server``: that one also swaps
    aiohttp's resolver process-wide and must be stopped in reverse order of starting, which
    several servers in one process (one per test, one for the world) cannot promise.
    """

    STARTUP_TIMEOUT = 10.0
    SHUTDOWN_TIMEOUT = 10.0

    def __init__(
        self, emulator: ClusterEmulator | None = None, *, host: str = "127.0.0.1", port: int = 0
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

    @classmethod
    def start(
        cls, host: str = "127.0.0.1", port: int = 0, *, emulator: ClusterEmulator | None = None
    ) -> Self:
        """Serve ``emulator`` (a new one by default) on ``host:port``; port 0 picks a free port."""
        server = cls(emulator, host=host, port=port)
        server._start()
        return server

    @property
    def url(self) -> str:
        """The API server's URL, e.g. ``http://127.0.0.1:40123``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def emulator(self) -> ClusterEmulator:
        """The served emulator: read its objects in tests (``emulator.objects[resource, ns, name]``)."""
        return self._emulator

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig for this server (plain HTTP, no credentials) and return its path."""
        path = Path(path)
        name = "flexplane-devstack"
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
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
                    site = aiohttp.web.TCPSite(runner, self._host, self._port)
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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
