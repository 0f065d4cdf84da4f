"""The SNI router with real TLS over loopback: two tenant clusters behind one port.

Each cluster has what the control-plane provider makes in the SNI mode: its PKI (its own CA, the API
server's and the Konnectivity server's serving certificates for its host names) and its ``kube-apiserver``
Service with the host names on it, in the management cluster (the devstack's Kubernetes emulator), where
the router follows them by a watch. Behind each Service's ClusterIP (a loopback address of its own) run
the cluster's API server (a Kubernetes emulator over HTTPS with that certificate, as
``devstack.hosted_control_plane`` serves it) and a Konnectivity stand-in (TLS with the Konnectivity
server's certificate; it says whose it is, echoes a stream and answers its digest). The clients verify
their own cluster's CA and the name they dial, as kubectl and the agents do.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import os
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from devstack.kube import KubeServer
from devstack.net import free_port
from providers.controlplane import model, pki, render
from providers.controlplane.kube import Kube
from providers.sni import connect
from providers.sni.router import Router, Timeouts
from providers.sni.routes import ServiceWatch
from tests import addresses
from tests.loops import run_apart

T = TypeVar("T")

ROUTER = addresses.address(addresses.SNI_SUITE, 1)
MANAGEMENT = addresses.address(addresses.SNI_SUITE, 2)
ENTRY = addresses.address(addresses.SNI_SUITE, 3)  # python -m providers.sni
DOMAIN = "k8s.example.test"
SNI_PORT = 443  # what the endpoints name; the test's router listens on a free port instead
HELLO_TIMEOUT = 1.0
WAIT = 10.0  # for the watch to bring a change


class LoopThread:
    """An asyncio loop in a thread of its own, for the servers: the tests' clients run on theirs."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sni-servers", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def stop(self) -> None:
        """Cancel what still runs (connections being spliced), stop and close the loop."""
        self.run(_cancel_the_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


async def _cancel_the_rest() -> None:
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class Cluster:
    """One tenant cluster as the provider makes it in the SNI mode, and its backends' address."""

    vdc: str
    name: str
    backend: str
    files: dict[str, bytes]

    @property
    def cp(self) -> model.ControlPlane:
        host, konnectivity = model.sni_hosts(self.vdc, self.name, DOMAIN)
        return model.ControlPlane(
            self.vdc,
            self.name,
            "v1.34.2",
            service_type=model.SNI,
            endpoint_host=host,
            endpoint_port=SNI_PORT,
            konnectivity_port=SNI_PORT,
            konnectivity_host=konnectivity,
        )

    @property
    def host(self) -> str:
        return self.cp.endpoint_host

    @property
    def konnectivity(self) -> str:
        return self.cp.agents_host

    @property
    def ca(self) -> bytes:
        return self.files["ca.crt"]


def make_cluster(vdc: str, name: str, backend: str) -> Cluster:
    cluster = Cluster(vdc, name, backend, {})
    cluster.files = pki.ensure_pki({}, cluster.cp.names)
    return cluster


def publish(kube: Kube, cluster: Cluster, *, ports: tuple[int, int] = (6443, 8132)) -> None:
    """The provider's Service of ``cluster``, given its ClusterIP as the management cluster would."""
    cp = cluster.cp
    kube.ensure(render.render_namespace(cp))
    service = render.render_service(cp)
    service["spec"]["clusterIP"] = cluster.backend
    for port, number in zip(service["spec"]["ports"], ports, strict=True):
        port["port"] = number
    kube.ensure(service)


async def konnectivity_stand_in(cluster: Cluster) -> asyncio.Server:
    """A TLS server with the cluster's Konnectivity certificate: says whose it is, then echoes a stream
    of a length it is told (8 bytes) and ends with the stream's SHA-256."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="sni-konnectivity-") as directory:
        cert, key = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert.write_bytes(cluster.files["konnectivity-server.crt"])
        key.write_bytes(cluster.files["konnectivity-server.key"])
        context.load_cert_chain(cert, key)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(f"konnectivity of {cluster.vdc}/{cluster.name}\n".encode())
            (length,) = struct.unpack("!Q", await reader.readexactly(8))
            digest = hashlib.sha256()
            while length:
                chunk = await reader.read(min(length, 65536))
                if not chunk:
                    return
                digest.update(chunk)
                length -= len(chunk)
                writer.write(chunk)
                await writer.drain()
            writer.write(digest.digest())
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    return await asyncio.start_server(answer, cluster.backend, 8132, ssl=context)


async def recorder(host: str, port: int) -> asyncio.Server:
    """A plain TCP backend: reads until the client's end, answers what it got (length and SHA-256 of the
    bytes), ends its write side, and then waits for the client to close."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received = await reader.read()
        writer.write(f"{len(received)} {hashlib.sha256(received).hexdigest()}\n".encode())
        await writer.drain()
        writer.write_eof()
        await reader.read()
        writer.close()

    return await asyncio.start_server(answer, host, port)


GREETING = b"hello, and nothing more\n"


async def speaker(host: str, received: list[bytes]) -> asyncio.Server:
    """A plain TCP backend that speaks first and ends its write side at once, then takes what the client
    sends until the client's end (appended to ``received``)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(GREETING)
        await writer.drain()
        writer.write_eof()
        received.append(await reader.read())
        writer.close()

    return await asyncio.start_server(answer, host, 0)


@pytest.fixture(scope="module")
def management() -> Iterator[KubeServer]:
    with KubeServer.start(MANAGEMENT, 0) as server:
        yield server


@pytest.fixture(scope="module")
def kube(management: KubeServer) -> Iterator[Kube]:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = management.url
    api = client.ApiClient(configuration)
    yield Kube(api)
    api.close()


@pytest.fixture(scope="module")
def clusters(kube: Kube) -> Iterator[dict[str, Cluster]]:
    """Two clusters of two VDCs, their Services published and their API servers and Konnectivity up."""
    made = {
        "alpha": make_cluster("demo", "alpha", addresses.address(addresses.SNI_SUITE, 11)),
        "beta": make_cluster("shop", "beta", addresses.address(addresses.SNI_SUITE, 12)),
    }
    servers = LoopThread()
    with contextlib.ExitStack() as stack:
        for cluster in made.values():
            publish(kube, cluster)
            tls = (cluster.files["apiserver.crt"], cluster.files["apiserver.key"])
            apiserver = stack.enter_context(KubeServer.start(cluster.backend, 6443, tls=tls))
            tenant = Kube.from_kubeconfig_dict(
                _kubeconfig(cluster, apiserver.url, tls_server_name=cluster.host)
            )
            tenant.ensure(identity(cluster))
            tenant.close()
            stack.callback(servers.run(konnectivity_stand_in(cluster)).close)
        yield made
    servers.stop()


def identity(cluster: Cluster) -> dict[str, Any]:
    """What only this cluster's API server holds: it tells the clusters apart."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "identity", "namespace": "default"},
        "data": {"cluster": f"{cluster.vdc}/{cluster.name}"},
    }


@pytest.fixture(scope="module")
def routes(management: KubeServer) -> Iterator[ServiceWatch]:
    """The router's routes, following the management cluster's Services."""
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = management.url
    watch = ServiceWatch(client.ApiClient(configuration), timeout=5).start()
    assert watch.listed.wait(WAIT), "the routes were never listed"
    yield watch
    watch.stop()


@pytest.fixture(scope="module")
def router(routes: ServiceWatch, clusters: dict[str, Cluster]) -> Iterator[tuple[str, int]]:
    """The router on one port: (address, port)."""
    wait_for(lambda: all(routes.lookup(c.host) and routes.lookup(c.konnectivity) for c in clusters.values()))
    loop = LoopThread()
    server = loop.run(Router(routes.lookup, Timeouts(hello=HELLO_TIMEOUT, connect=2)).serve(ROUTER, 0))
    yield ROUTER, server.sockets[0].getsockname()[1]
    loop.run(_close(server))
    loop.stop()


def _kubeconfig(cluster: Cluster, server: str, *, tls_server_name: str = "", ca: bytes | None = None) -> dict:
    """The admin kubeconfig the provider writes (Cluster API's ``<cluster>-kubeconfig``), at ``server``;
    ``tls_server_name`` stands in for the DNS record of the name (the router's address under its name)."""
    config = yaml.safe_load(pki.admin_kubeconfig(cluster.files, cluster=cluster.name, server=server))
    if tls_server_name:
        config["clusters"][0]["cluster"]["tls-server-name"] = tls_server_name
    if ca is not None:
        config["clusters"][0]["cluster"]["certificate-authority-data"] = pki._b64(ca)
    return config


def through_router(router: tuple[str, int], cluster: Cluster, *, ca: bytes | None = None) -> Kube:
    """A client of ``cluster``'s API server as its kubeconfig names it, reaching it through the router."""
    address, port = router
    return Kube.from_kubeconfig_dict(
        _kubeconfig(cluster, f"https://{address}:{port}", tls_server_name=cluster.host, ca=ca)
    )


def assert_its_own(tenant: Kube, cluster: Cluster) -> None:
    """That ``tenant``, a client of ``cluster``'s API server, reached that one (it holds ``identity``), then
    closed."""
    try:
        found = tenant.get("v1", "ConfigMap", "identity", "default")
    finally:
        tenant.close()
    assert found is not None
    assert found["data"]["cluster"] == f"{cluster.vdc}/{cluster.name}"


def tls_client(cluster: Cluster) -> ssl.SSLContext:
    """What a Konnectivity agent trusts: its cluster's CA, and the name it dials checked."""
    return ssl.create_default_context(cadata=cluster.ca.decode())


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return run_apart(asyncio.wait_for(coroutine, 30))


async def konnectivity_exchange(
    router: tuple[str, int], cluster: Cluster, payload: bytes
) -> tuple[bytes, bytes, bytes]:
    """Through the router to ``cluster``'s Konnectivity name: (its greeting, the echo, its digest), the
    payload sent while the echo is read."""
    reader, writer = await asyncio.open_connection(
        *router, ssl=tls_client(cluster), server_hostname=cluster.konnectivity
    )
    greeting = await reader.readline()

    async def send() -> None:
        writer.write(struct.pack("!Q", len(payload)))
        for offset in range(0, len(payload), 1 << 20):
            writer.write(payload[offset : offset + (1 << 20)])
            await writer.drain()

    sending = asyncio.ensure_future(send())
    echo = await reader.readexactly(len(payload))
    digest = await reader.readexactly(32)
    await sending
    writer.close()
    with contextlib.suppress(ConnectionError, ssl.SSLError):
        await writer.wait_closed()
    return greeting, echo, digest


def connection(router: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(router, timeout=5)
    sock.settimeout(5)
    return sock


def closed_after(sock: socket.socket, started: float) -> float:
    """Seconds from ``started`` until the router closes ``sock`` (reads and drops what it sends first)."""
    with sock:
        while True:
            try:
                if not sock.recv(4096):
                    break
            except ConnectionResetError:
                break
    return time.monotonic() - started


# ------------------------------------------------------------------------------------ the API servers


def test_each_cluster_reaches_its_own_api_server_through_the_one_port(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    for cluster in clusters.values():
        assert_its_own(through_router(router, cluster), cluster)


def test_a_client_trusting_another_clusters_ca_does_not_accept_the_api_server(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    tenant = through_router(router, clusters["alpha"], ca=clusters["beta"].ca)
    try:
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
            tenant.version()
    finally:
        tenant.close()


def test_the_api_servers_certificate_is_the_backends_own_the_router_holds_none(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    alpha = clusters["alpha"]
    with (
        connection(router) as raw,
        tls_client(alpha).wrap_socket(raw, server_hostname=alpha.host) as tls,
    ):
        served = tls.getpeercert(binary_form=True)
    expected = ssl.PEM_cert_to_DER_cert(alpha.files["apiserver.crt"].decode())
    assert served == expected


# ------------------------------------------------------------------------------------ Konnectivity


def test_each_clusters_agents_reach_their_own_konnectivity_server_on_the_same_port(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    for cluster in clusters.values():
        greeting, echo, digest = run(konnectivity_exchange(router, cluster, b"tunnel"))
        assert greeting == f"konnectivity of {cluster.vdc}/{cluster.name}\n".encode()
        assert (echo, digest) == (b"tunnel", hashlib.sha256(b"tunnel").digest())


def test_a_large_transfer_both_ways_arrives_intact(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    payload = os.urandom(24 << 20)
    _, echo, digest = run(konnectivity_exchange(router, clusters["beta"], payload))
    assert len(echo) == len(payload)
    assert echo == payload
    assert digest == hashlib.sha256(payload).digest()


def test_the_api_servers_name_does_not_lead_to_konnectivity_nor_the_reverse(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    alpha = clusters["alpha"]
    with (
        connection(router) as raw,
        tls_client(alpha).wrap_socket(raw, server_hostname=alpha.konnectivity) as tls,
    ):
        served = tls.getpeercert(binary_form=True)
    assert served == ssl.PEM_cert_to_DER_cert(alpha.files["konnectivity-server.crt"].decode())


# ------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize(
    "name", [f"nobody.demo.{DOMAIN}", f"alpha.demo.{DOMAIN}.elsewhere.test", "kubernetes"]
)
def test_an_unknown_name_is_refused_with_unrecognized_name(
    router: tuple[str, int], clusters: dict[str, Cluster], name: str
) -> None:
    with connection(router) as raw, pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):
        tls_client(clusters["alpha"]).wrap_socket(raw, server_hostname=name)


def test_a_client_hello_without_a_name_is_refused(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    context = tls_client(clusters["alpha"])
    context.check_hostname = False
    with connection(router) as raw, pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):
        context.wrap_socket(raw, server_hostname=None)


def test_a_client_that_sends_nothing_is_cut_off_at_the_deadline(router: tuple[str, int]) -> None:
    started = time.monotonic()  # before the router accepts, so never after its deadline starts
    elapsed = closed_after(connection(router), started)
    assert HELLO_TIMEOUT * 0.95 <= elapsed < HELLO_TIMEOUT + 2


def test_a_client_that_stops_half_way_through_its_client_hello_is_cut_off_at_the_deadline(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    started = time.monotonic()
    sock = connection(router)
    sock.sendall(hello_bytes(clusters["alpha"].host)[:60])
    elapsed = closed_after(sock, started)
    assert HELLO_TIMEOUT * 0.95 <= elapsed < HELLO_TIMEOUT + 2


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\nHost: alpha\r\n\r\n",
        b"\x16\x03\x01\xff\xff" + bytes(100),
        b"\x16\x03\x01\x00\x04\x02\0\0\0",
    ],
)
def test_a_client_that_sends_garbage_is_cut_off_at_once(router: tuple[str, int], garbage: bytes) -> None:
    started = time.monotonic()
    sock = connection(router)
    sock.sendall(garbage)
    assert closed_after(sock, started) < HELLO_TIMEOUT * 0.8


def hello_bytes(name: str) -> bytes:
    """A real ClientHello for ``name`` (Python's OpenSSL), as bytes to send by hand."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    connection = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        connection.do_handshake()
    return outgoing.read()


# ------------------------------------------------------------------------------------ the stream, and routes


def test_the_client_hello_arrives_unchanged_and_half_closes_pass_both_ways(
    router: tuple[str, int], kube: Kube
) -> None:
    """A plain TCP backend behind a name: it gets the bytes as sent (the router rewrites nothing), reads
    to the client's end while the client still reads, and ends its side while the client still sends."""
    plain = make_cluster("demo", "plain", addresses.address(addresses.SNI_SUITE, 13))
    servers = LoopThread()
    backend = servers.run(recorder(plain.backend, 0))
    try:
        publish(kube, plain, ports=(backend.sockets[0].getsockname()[1], 1))
        sent = hello_bytes(plain.host) + os.urandom(300_000)
        wait_for(lambda: answered(router, plain.host))
        with connection(router) as sock:
            sock.sendall(sent)
            sock.shutdown(socket.SHUT_WR)  # the client's half-close: the backend reads to its end
            answer = sock.makefile("rb").readline()
        assert answer == f"{len(sent)} {hashlib.sha256(sent).hexdigest()}\n".encode()
    finally:
        servers.run(_close(backend))
        servers.stop()
        kube.delete("v1", "Namespace", plain.cp.namespace)


def test_the_backends_half_close_reaches_the_client_which_may_still_send(
    router: tuple[str, int], kube: Kube
) -> None:
    plain = make_cluster("demo", "later", addresses.address(addresses.SNI_SUITE, 14))
    received: list[bytes] = []
    servers = LoopThread()
    backend = servers.run(speaker(plain.backend, received))
    try:
        publish(kube, plain, ports=(backend.sockets[0].getsockname()[1], 1))
        wait_for(lambda: answered(router, plain.host))
        hello = hello_bytes(plain.host)
        with connection(router) as sock:
            sock.sendall(hello)
            stream = sock.makefile("rb")
            assert stream.readline() == GREETING
            assert stream.read() == b""  # the backend's end of stream, while the client's side is open
            sock.sendall(b"still sending")
            sock.shutdown(socket.SHUT_WR)
            wait_for(lambda: hello + b"still sending" in received)
    finally:
        servers.run(_close(backend))
        servers.stop()
        kube.delete("v1", "Namespace", plain.cp.namespace)


def test_a_half_closed_connection_survives_the_garbage_collector(
    router: tuple[str, int], routes: ServiceWatch, kube: Kube
) -> None:
    """Once the client half-closed, only the backend's side is in the router's event loop, and asyncio
    holds a stream's reader weakly: the router must hold the connection itself."""
    plain = make_cluster("demo", "held", addresses.address(addresses.SNI_SUITE, 18))
    eof, release = threading.Event(), threading.Event()
    servers = LoopThread()
    backend = servers.run(gated(plain.backend, eof, release))
    try:
        publish(kube, plain, ports=(backend.sockets[0].getsockname()[1], 1))
        wait_for(lambda: routes.lookup(plain.host) is not None)
        with connection(router) as sock:
            sock.sendall(hello_bytes(plain.host))
            sock.shutdown(socket.SHUT_WR)
            assert eof.wait(5), "the backend never saw the client's end"
            gc.collect()
            release.set()
            assert sock.makefile("rb").read() == b"answered after the end\n"
    finally:
        release.set()
        servers.run(_close(backend))
        servers.stop()
        kube.delete("v1", "Namespace", plain.cp.namespace)


async def gated(host: str, eof: threading.Event, release: threading.Event) -> asyncio.Server:
    """A plain TCP backend that reads to the client's end, says so (``eof``), and answers only once the
    test lets it (``release``)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        eof.set()
        while not release.is_set():
            await asyncio.sleep(0.01)
        writer.write(b"answered after the end\n")
        await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, host, 0)


def test_a_control_plane_published_later_is_routed_and_one_deleted_is_refused_again(
    router: tuple[str, int], kube: Kube
) -> None:
    later = make_cluster("shop", "gamma", addresses.address(addresses.SNI_SUITE, 15))
    servers = LoopThread()
    backend = servers.run(recorder(later.backend, 0))
    try:
        assert not answered(router, later.host)
        publish(kube, later, ports=(backend.sockets[0].getsockname()[1], 1))
        wait_for(lambda: answered(router, later.host))
        kube.delete("v1", "Namespace", later.cp.namespace)
        wait_for(lambda: not answered(router, later.host))
    finally:
        servers.run(_close(backend))
        servers.stop()


def test_a_name_two_services_claim_goes_nowhere(
    router: tuple[str, int], kube: Kube, clusters: dict[str, Cluster]
) -> None:
    """An impostor Service in another control plane's namespace naming alpha's host: neither is chosen."""
    alpha = clusters["alpha"]
    impostor = make_cluster("shop", "impostor", addresses.address(addresses.SNI_SUITE, 16))
    publish(kube, impostor)
    kube.patch(
        "v1",
        "Service",
        model.SERVICE,
        impostor.cp.namespace,
        {"metadata": {"annotations": {model.APISERVER_HOST_ANNOTATION: alpha.host}}},
    )
    try:
        wait_for(lambda: not answered(router, alpha.host))
    finally:
        kube.delete("v1", "Namespace", impostor.cp.namespace)
    wait_for(lambda: answered(router, alpha.host))


def test_a_name_whose_backend_does_not_answer_is_closed_not_left_hanging(
    router: tuple[str, int], routes: ServiceWatch, kube: Kube
) -> None:
    gone = make_cluster("shop", "gone", addresses.address(addresses.SNI_SUITE, 17))  # nothing listens there
    publish(kube, gone)
    try:
        wait_for(lambda: routes.lookup(gone.host) is not None)
        context = ssl.create_default_context(cadata=gone.ca.decode())
        started = time.monotonic()
        with connection(router) as raw, pytest.raises((ssl.SSLError, ConnectionError)):
            context.wrap_socket(raw, server_hostname=gone.host)
        assert time.monotonic() - started < 3
    finally:
        kube.delete("v1", "Namespace", gone.cp.namespace)


def answered(router: tuple[str, int], name: str) -> bool:
    """Whether the router hands a connection for ``name`` on (rather than refusing the name)."""
    with connection(router) as sock:
        try:
            sock.sendall(hello_bytes(name))
            sock.shutdown(socket.SHUT_WR)
            first = sock.recv(7)
        except OSError:  # reset: refused (a routed name's backend answers)
            return False
    return first[:1] != b"\x15"  # not TLS's alert record


def wait_for(condition: Any) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "the router did not follow the change"
        time.sleep(0.05)


async def _close(server: asyncio.Server) -> None:
    server.close()
    await server.wait_closed()


# ------------------------------------------------------------------------------------ CONNECT: pods' path


def connect_answer(router: tuple[str, int], opening: bytes, *, shut: bool = True) -> bytes:
    """What the router answers a connection that sends ``opening`` (and, with ``shut``, ends its write
    side), to its close."""
    with connection(router) as sock:
        sock.sendall(opening)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    return answer


def test_a_connect_request_for_a_name_no_control_plane_has_is_answered_404(router: tuple[str, int]) -> None:
    answer = connect_answer(router, connect.request(f"nobody.demo.{DOMAIN}", SNI_PORT))
    assert answer.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert answer.endswith(f"no control plane is named nobody.demo.{DOMAIN}\n".encode())


@pytest.mark.parametrize(
    ("opening", "says"),
    [
        (b"CONNECT alpha HTTP/1.1\r\n\r\n", b"the target is not host:port"),
        (b"CONNECT a:443 HTTP/2\r\n\r\n", b"not HTTP/1.x"),
        (b"CONNECT bad_name!.x:443 HTTP/1.1\r\n\r\n", b"the target's host is not a DNS name"),
        (b"CONNECT a:443 HTTP/1.1\r\nX: " + b"y" * 5000 + b"\r\n\r\n", b"longer than 4096 bytes"),
        (b"CONNECT a:443 HTTP/1.1\r\n", b"the connection ended inside its CONNECT request"),
    ],
    ids=["no port", "not HTTP/1.x", "not a DNS name", "too long", "ended half-way"],
)
def test_a_malformed_connect_request_is_answered_400_saying_what_was_wrong(
    router: tuple[str, int], opening: bytes, says: bytes
) -> None:
    answer = connect_answer(router, opening)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert says in answer


def test_a_connect_request_that_never_ends_is_cut_off_at_the_deadline(router: tuple[str, int]) -> None:
    started = time.monotonic()
    with connection(router) as sock:
        sock.sendall(b"CONNECT alpha.demo.k8s.example.test:443 HTTP/1.1\r\n")
        took = closed_after(sock, started)
    assert HELLO_TIMEOUT <= took < HELLO_TIMEOUT + 3


@contextlib.contextmanager
def node_local_proxy(router: tuple[str, int], name: str, address: str) -> Iterator[tuple[str, int]]:
    """``python -m providers.sni.nodelocal`` as a tenant node runs it, at ``address`` on the API server's
    port, naming ``name`` to the router (dialled by its address, the test's stand-in for DNS)."""
    env = {
        **os.environ,
        "FLEXPLANE_NODE_LOCAL_LISTEN": f"{address}:6443",
        "FLEXPLANE_NODE_LOCAL_UPSTREAM": f"{router[0]}:{router[1]}",
        "FLEXPLANE_NODE_LOCAL_NAME": name,
    }
    with python_m(
        "providers.sni.nodelocal", env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as process:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.communicate()[1].decode()
            with contextlib.suppress(OSError), socket.create_connection((address, 6443), timeout=1):
                break
            assert time.monotonic() < deadline, "python -m providers.sni.nodelocal never listened"
            time.sleep(0.05)
        yield address, 6443
        stops_on_sigterm(process)


@contextlib.contextmanager
def python_m(module: str, env: dict[str, str], **streams: Any) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m module`` with ``env``: killed afterwards if it still runs, its pipes closed."""
    process = subprocess.Popen([sys.executable, "-m", module], env=env, **streams)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def stops_on_sigterm(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0


def as_a_pod(cluster: Cluster, proxy: tuple[str, int]) -> Kube:
    """A client of ``cluster``'s API server as a pod's is: at the ``kubernetes`` Service's address (here the
    node-local proxy's, where kube-proxy sends it), its TLS naming no host (a client sends no server name
    for an address) and the server's certificate verified with the cluster's CA for the Service's IP."""
    service_ip = pki.first_service_ip(cluster.cp.service_cidr)
    return Kube.from_kubeconfig_dict(
        _kubeconfig(cluster, f"https://{proxy[0]}:{proxy[1]}", tls_server_name=service_ip)
    )


def test_pods_reach_their_own_api_server_through_the_node_local_proxy_and_the_router(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    for number, cluster in enumerate(clusters.values(), start=21):
        address = addresses.address(addresses.SNI_SUITE, number)
        with node_local_proxy(router, cluster.host, address) as proxy:
            assert_its_own(as_a_pod(cluster, proxy), cluster)


def test_without_the_proxy_a_pods_tls_naming_no_host_is_refused_by_the_router(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    tenant = as_a_pod(clusters["alpha"], router)
    try:
        with pytest.raises(Exception, match=r"UNRECOGNIZED_NAME|unrecognized name"):
            tenant.get("v1", "ConfigMap", "identity", "default")
    finally:
        tenant.close()


def test_the_node_local_proxy_holds_no_key_a_pod_trusting_another_ca_refuses_the_server(
    router: tuple[str, int], clusters: dict[str, Cluster]
) -> None:
    alpha, beta = clusters["alpha"], clusters["beta"]
    with node_local_proxy(router, alpha.host, addresses.address(addresses.SNI_SUITE, 23)) as proxy:
        service_ip = pki.first_service_ip(alpha.cp.service_cidr)
        config = _kubeconfig(alpha, f"https://{proxy[0]}:{proxy[1]}", tls_server_name=service_ip, ca=beta.ca)
        tenant = Kube.from_kubeconfig_dict(config)
        try:
            with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
                tenant.get("v1", "ConfigMap", "identity", "default")
        finally:
            tenant.close()


def test_a_node_local_proxy_naming_an_unknown_cluster_closes_each_connection_at_once(
    router: tuple[str, int],
) -> None:
    address = addresses.address(addresses.SNI_SUITE, 24)
    with node_local_proxy(router, f"nobody.demo.{DOMAIN}", address) as proxy:
        started = time.monotonic()
        with socket.create_connection(proxy, timeout=10) as sock:
            assert sock.recv(1) == b""  # closed, not left hanging
        assert time.monotonic() - started < 5


# ------------------------------------------------------------------------------------ the process


def test_python_m_providers_sni_routes_reports_ready_and_stops_on_sigterm(
    management: KubeServer, clusters: dict[str, Cluster], tmp_path: Path
) -> None:
    listen, probes = free_port(ENTRY), free_port(ENTRY)
    env = {
        **os.environ,
        "FLEXPLANE_KUBECONFIG": str(management.write_kubeconfig(tmp_path / "kubeconfig")),
        "FLEXPLANE_SNI_LISTEN": f"{ENTRY}:{listen}",
        "FLEXPLANE_PROBES_LISTEN": f"{ENTRY}:{probes}",
        "FLEXPLANE_SNI_HELLO_TIMEOUT": "2",
    }
    with python_m("providers.sni", env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as process:
        wait_ready(f"http://{ENTRY}:{probes}/readyz", process)
        alpha = clusters["alpha"]
        assert_its_own(through_router((ENTRY, listen), alpha), alpha)
        stops_on_sigterm(process)


def wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, "python -m providers.sni exited"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, "python -m providers.sni never got ready"
        time.sleep(0.1)
