"""A pool of mutual-TLS gRPC channels to agents, and the calls the control plane makes.

One :class:`AgentPool` per process (per client certificate) holds one lazily created,
reused channel per agent. Given :class:`ClientTLSFiles`, it looks for a renewed certificate as calls
are made: new calls then go on new channels presenting it, while calls already running on the old ones
finish there (each old channel is closed when its last call ends). Every call has a deadline; every
failure is raised as one of the typed errors of :mod:`agentclient.errors`. At most ``max_in_flight``
calls that reach an agent's Proxmox run at once per agent: a node's API serves few requests at a time,
and a burst beyond it would only queue there, past the callers' deadlines.

    pool = AgentPool(ClientTLSFiles("ca.crt", "orchestrator.crt", "orchestrator.key"))
    target = AgentTarget(host_identity("zone1", "pve1"), "10.0.0.11:7443")
    vms = pool.proxmox(target, "GET", "/cluster/resources", {"type": "vm"})
    ref = pool.ensure_template(target, "debian-12", url, "sha256:...", "local-lvm", timeout=1800)
    volid = pool.write_snippet(target, "fp-demo-101-vendor.yaml", b"#cloud-config\n", timeout=10)
"""

from __future__ import annotations

import http
import ipaddress
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import grpc
import orjson
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentclient import metrics
from agentclient.credentials import ClientTLS, ClientTLSFiles
from agentclient.errors import AgentBusy, AgentError, ProxmoxError, translate_error
from agentclient.gateways import (
    GatewaySpec,
    GatewayState,
    check_gateway_id,
    spec_to_proto,
    state_from_proto,
    translate_gateway_error,
)
from agentclient.identity import AgentTarget
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc
from agentclient.snippets import check_snippet_content, check_snippet_name
from agentclient.templates import (
    TemplatePhase,
    TemplateProgress,
    TemplateRef,
    check_image_name,
    check_storage_id,
)
from agentclient.urlpolicy import parse_checksum

T = TypeVar("T")

DEFAULT_TIMEOUT = 5.0
# Calls that reach an agent's Proxmox at once, per agent (pveproxy itself runs three workers).
DEFAULT_MAX_IN_FLIGHT = 6
MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024

# Keepalive: find a dead agent (or a dropped NAT entry) on an idle channel within ~40 s.
# The agent's server permits pings this often (agent.server.SERVER_OPTIONS).
KEEPALIVE_TIME_MS = 30_000
KEEPALIVE_TIMEOUT_MS = 10_000
# Reconnect soon after an agent comes back instead of gRPC's default of up to 2 minutes.
RECONNECT_BACKOFF_MS = (500, 10_000)


@dataclass(frozen=True)
class RenewalInfo:
    """How the agent's certificate renewal went (times in Unix seconds; 0: never)."""

    last_success: int = 0
    last_error: str = ""
    failures: int = 0
    next_attempt: int = 0


@dataclass(frozen=True)
class UpdateInfo:
    """How the agent's last self-update went.

    ``result`` is one of ``none``, ``updated``, ``refused``, ``rolled-back``, ``failed``.
    """

    result: str = "none"
    from_version: str = ""
    to_version: str = ""
    message: str = ""
    at: int = 0


_UPDATE_RESULTS = {
    agent_pb2.UpdateStatus.RESULT_NONE: "none",
    agent_pb2.UpdateStatus.RESULT_UPDATED: "updated",
    agent_pb2.UpdateStatus.RESULT_REFUSED: "refused",
    agent_pb2.UpdateStatus.RESULT_ROLLED_BACK: "rolled-back",
    agent_pb2.UpdateStatus.RESULT_FAILED: "failed",
}


@dataclass(frozen=True)
class UpdateNowResult:
    """What an agent's check of its release channel did, asked now (:meth:`AgentPool.update_now`)."""

    outcome: str
    # The version the channel offers ("": the check did not get that far).
    offered_version: str
    # Whether that release was installed and handed to the apply step (which restarts the agent).
    applying: bool
    running_version: str


@dataclass(frozen=True)
class AgentInfo:
    """What an agent says about itself."""

    version: str
    node: str
    zone: str
    identity: str
    proxmox_version: str = ""
    # The flexplane-agent Debian package's version ("": the agent does not run from the package).
    package_version: str = ""
    # When the agent's certificate expires, Unix seconds (0: not reported).
    certificate_not_after: int = 0
    renewal: RenewalInfo = field(default_factory=RenewalInfo)
    update: UpdateInfo = field(default_factory=UpdateInfo)

    @classmethod
    def from_proto(cls, reply: agent_pb2.AgentInfo) -> AgentInfo:
        renewal, update = reply.renewal, reply.update
        return cls(
            version=reply.version,
            node=reply.node,
            zone=reply.zone,
            identity=reply.identity,
            proxmox_version=reply.proxmox_version,
            package_version=reply.package_version,
            certificate_not_after=reply.certificate_not_after,
            renewal=RenewalInfo(
                last_success=renewal.last_success,
                last_error=renewal.last_error,
                failures=renewal.failures,
                next_attempt=renewal.next_attempt,
            ),
            update=UpdateInfo(
                result=_UPDATE_RESULTS.get(update.result, "none"),
                from_version=update.from_version,
                to_version=update.to_version,
                message=update.message,
                at=update.at,
            ),
        )


@dataclass(eq=False)
class _Connection:
    channel: grpc.Channel
    proxy: agent_pb2_grpc.ProxmoxProxyStub
    agent: agent_pb2_grpc.AgentStub
    images: agent_pb2_grpc.ImagesStub
    snippets: agent_pb2_grpc.SnippetsStub
    health: health_pb2_grpc.HealthStub
    # The pool's calls running on the channel (under the pool's lock): once a renewed certificate
    # retired the channel, the last of them closes it.
    calls: int = 0
    retired: bool = False


class AgentPool:
    """Thread-safe pool of one secure channel per agent.

    ``timeout`` is the default deadline of a call in seconds; each method takes its own.
    ``max_in_flight`` bounds the calls to one agent that reach its Proxmox (the proxy, GetInfo,
    EnsureTemplate): one more waits for a free slot within its own deadline, and raises
    AgentBusy, unsent, if none frees up in time. Snippets and health checks stay on the node
    and are not counted. Close the pool (or use it as a context manager) to close its channels.
    """

    def __init__(
        self,
        tls: ClientTLS | ClientTLSFiles,
        timeout: float = DEFAULT_TIMEOUT,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        *,
        proxy: str = "",
        proxy_networks: Sequence[str] = (),
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self._source = tls
        self._tls = tls.current()
        self.timeout = timeout
        self.max_in_flight = max_in_flight
        # The mesh hub's CONNECT proxy (http://host:port), for agents at addresses in proxy_networks
        # (all of them when none are given): TLS runs through the tunnel, end to end.
        self.proxy = proxy.strip()
        self.proxy_networks = tuple(
            ipaddress.ip_network(n.strip(), strict=False) for n in proxy_networks if n.strip()
        )
        self._credentials = self._tls.credentials()
        self._connections: dict[AgentTarget, _Connection] = {}
        self._retired: list[_Connection] = []
        self._slots: dict[AgentTarget, threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> AgentPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def tls(self) -> ClientTLS:
        """The client TLS material new channels present (renewed files read again, as for a call)."""
        with self._lock:
            self._renew_locked()
            return self._tls

    # ------------------------------------------------------------------ calls

    def proxmox(
        self,
        target: AgentTarget,
        method: str,
        path: str,
        params: Mapping[str, object] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """Call the Proxmox API of the target's node through its agent; returns the decoded ``data``.

        ``path`` is below ``/api2/json`` (e.g. ``/cluster/resources``). ``params`` go in the
        query string (GET, DELETE) or the form (POST, PUT): strings, integers, and booleans
        (sent as 1 or 0, as Proxmox expects); ``None`` values are left out.

        Raises ProxmoxError when Proxmox answers 400 or more, ProxyRefused when the agent does
        not forward this method and path, ProxmoxUnreachable, and the other AgentErrors.
        """
        request = agent_pb2.ProxmoxRequest(method=method, path=path, params=encode_params(params))
        with metrics.upstream_call(target.identity, method):
            response = self._call(
                target, timeout, lambda conn, t: conn.proxy.Call(request, timeout=t), bounded=True
            )
            if response.status >= 400:
                message = response.message or _status_phrase(response.status)
                raise ProxmoxError(target, response.status, message, dict(response.errors))
        try:
            document = orjson.loads(response.document_json)
        except ValueError as exc:
            raise AgentError(target, f"the agent sent data that is not JSON ({exc})") from exc
        if not isinstance(document, dict):
            raise AgentError(target, "the agent sent JSON that is not Proxmox's answer (an object with data)")
        return document.get("data")

    def info(self, target: AgentTarget, *, timeout: float | None = None) -> AgentInfo:
        """What the agent says it is: its version, node, zone and identity."""
        reply = self._call(
            target,
            timeout,
            lambda conn, t: conn.agent.GetInfo(agent_pb2.GetInfoRequest(), timeout=t),
            bounded=True,  # it asks Proxmox its version
        )
        return AgentInfo.from_proto(reply)

    def update_now(self, target: AgentTarget, *, timeout: float | None = None) -> UpdateNowResult:
        """Have the agent check its release channel now, as its own check every update_interval does
        (a download may take a while: give it a timeout). FAILED_PRECONDITION (an AgentError) when
        the agent does not update itself."""
        reply = self._call(
            target, timeout, lambda conn, t: conn.agent.UpdateNow(agent_pb2.UpdateNowRequest(), timeout=t)
        )
        return UpdateNowResult(reply.outcome, reply.offered_version, reply.applying, reply.running_version)

    def ensure_template(
        self,
        target: AgentTarget,
        image: str,
        url: str,
        checksum: str,
        storage: str,
        *,
        timeout: float,
        on_progress: Callable[[TemplateProgress], None] | None = None,
    ) -> TemplateRef:
        """Make sure the target's node has a template of image on storage; returns it.

        The agent reuses the template when it exists; otherwise it downloads url, verifies
        checksum (``sha256:<hex>`` or ``sha512:<hex>``), imports the disk onto storage and
        converts the VM to a template. on_progress gets every report (in this thread); if it
        raises, the call is cancelled and its exception propagates. timeout bounds the whole
        call: a download can take long, so give it room. When the deadline passes the agent
        carries on, and calling again follows the same work.

        Raises ValueError for a malformed image name, storage or checksum (before any call),
        ImageRefused, ChecksumMismatch, ImageDownloadFailed, ImageImportFailed, and the other
        AgentErrors.
        """
        check_image_name(image)
        check_storage_id(storage)
        parse_checksum(checksum)
        if not isinstance(url, str) or not url:
            raise ValueError("the image URL is empty")
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        request = agent_pb2.EnsureTemplateRequest(image=image, url=url, checksum=checksum, storage=storage)
        ready: TemplateRef | None = None
        with self._using(target) as connection, self._slot(target, timeout) as remaining:
            call = connection.images.EnsureTemplate(request, timeout=remaining)
            try:
                for message in call:
                    progress = template_progress(message)
                    if progress is None:
                        continue  # a phase this client does not know yet
                    if on_progress is not None:
                        on_progress(progress)
                    if progress.phase is TemplatePhase.DONE:
                        ready = TemplateRef(vmid=progress.template_vmid, node=progress.node)
            except grpc.RpcError as exc:
                raise translate_error(cast(grpc.Call, exc), target, timeout, image=image) from None
            except BaseException:
                call.cancel()
                raise
        if ready is None or ready.vmid <= 0:
            raise AgentError(target, f"the agent ended EnsureTemplate of image {image} without a template")
        return ready

    def write_snippet(self, target: AgentTarget, name: str, content: bytes, *, timeout: float) -> str:
        """Write (or replace) the cloud-init snippet name on the target's node; returns its volume id.

        The agent writes it atomically into its snippets folder; the answer is what a VM's
        ``cicustom`` names, e.g. ``local:snippets/fp-demo-101-vendor.yaml``.

        Raises ValueError for a malformed name or content over 64 KiB (before any call),
        SnippetRefused, SnippetFailed, and the other AgentErrors.
        """
        check_snippet_name(name)
        check_snippet_content(content)
        request = agent_pb2.WriteSnippetRequest(name=name, content=content)
        reply = self._call(
            target, timeout, lambda conn, t: conn.snippets.WriteSnippet(request, timeout=t), snippet=name
        )
        if not reply.volume_id:
            raise AgentError(target, f"the agent wrote snippet {name} but named no volume")
        return str(reply.volume_id)

    def delete_snippet(self, target: AgentTarget, name: str, *, timeout: float) -> None:
        """Remove the cloud-init snippet name from the target's node; a missing one is no error.

        Raises ValueError for a malformed name (before any call), SnippetRefused, SnippetFailed,
        and the other AgentErrors.
        """
        check_snippet_name(name)
        request = agent_pb2.DeleteSnippetRequest(name=name)
        self._call(
            target, timeout, lambda conn, t: conn.snippets.DeleteSnippet(request, timeout=t), snippet=name
        )

    def apply_gateway(self, target: AgentTarget, spec: GatewaySpec, *, timeout: float) -> GatewayState:
        """Make the target's node run the edge gateway exactly as spec says; returns its state there.

        Idempotent (the same spec again changes nothing) and all or nothing on the node. Raises
        GatewayRefused (its ``field`` names the refused field; nothing changed), GatewayFailed (the
        node could not apply it; the previous state runs), and the other AgentErrors.
        """
        request = spec_to_proto(spec)
        reply = self._gateway_call(target, timeout, spec.id, lambda stub, t: stub.Apply(request, timeout=t))
        return state_from_proto(reply)

    def gateway_state(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> GatewayState | None:
        """The state of the gateway on the target's node; None when the node has no such gateway."""
        check_gateway_id(gateway_id)
        request = agent_pb2.GatewayRef(id=gateway_id)
        try:
            reply = self._gateway_call(
                target, timeout, gateway_id, lambda stub, t: stub.Get(request, timeout=t)
            )
        except _GatewayNotFound:
            return None
        return state_from_proto(reply)

    def remove_gateway(self, target: AgentTarget, gateway_id: str, *, timeout: float) -> None:
        """Remove the gateway from the target's node; a gateway it does not have is no error."""
        check_gateway_id(gateway_id)
        request = agent_pb2.GatewayRef(id=gateway_id)
        self._gateway_call(target, timeout, gateway_id, lambda stub, t: stub.Remove(request, timeout=t))

    def _gateway_call(
        self, target: AgentTarget, timeout: float, gateway: str, call: Callable[[Any, float], T]
    ) -> T:
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        with self._using(target) as connection:
            stub = agent_pb2_grpc.GatewaysStub(connection.channel)
            try:
                return call(stub, timeout)
            except grpc.RpcError as exc:
                rpc = cast(grpc.Call, exc)
                if rpc.code() == grpc.StatusCode.NOT_FOUND:
                    raise _GatewayNotFound from None
                raise translate_gateway_error(rpc, target, timeout, gateway) from None

    def check_health(self, target: AgentTarget, *, service: str = "", timeout: float | None = None) -> bool:
        """Whether the agent's standard gRPC health service reports SERVING.

        Returns False when the agent answers with any other status; raises an AgentError
        when it does not answer at all, so the caller learns why.
        """
        request = health_pb2.HealthCheckRequest(service=service)
        reply = self._call(target, timeout, lambda conn, t: conn.health.Check(request, timeout=t))
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    def close(self) -> None:
        """Close every channel; the pool cannot be used afterwards."""
        with self._lock:
            self._closed = True
            connections = [*self._connections.values(), *self._retired]
            self._connections, self._retired = {}, []
        for connection in connections:
            connection.channel.close()

    # --------------------------------------------------------------- plumbing

    def proxy_for(self, target: AgentTarget) -> str:
        """The proxy a channel to target goes through ("": dialled directly)."""
        if not self.proxy or not self.proxy_networks:
            return self.proxy
        host = target.address.rpartition(":")[0].strip("[]")
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return ""
        return self.proxy if any(address in network for network in self.proxy_networks) else ""

    def channel(self, target: AgentTarget) -> grpc.Channel:
        """The pooled channel to target, created on first use (for stubs of other services).

        Calls made on it directly are not counted: a renewed certificate closes it once the pool's own
        calls on it are done. Ask again for each call rather than keep it.
        """
        return self._connection(target).channel

    @contextmanager
    def _using(self, target: AgentTarget) -> Iterator[_Connection]:
        """The current channel to target, counted as in use until the block ends."""
        while True:
            connection = self._connection(target)
            with self._lock:
                # Retired in between by a renewal (and perhaps closed already): take the new one.
                if not connection.retired:
                    connection.calls += 1
                    break
        try:
            yield connection
        finally:
            with self._lock:
                connection.calls -= 1
                done = connection.retired and connection.calls == 0
                if done:
                    self._retired.remove(connection)
            if done:
                connection.channel.close()

    def _connection(self, target: AgentTarget) -> _Connection:
        """The current channel to target, made on first use: the one place an agent is dialled."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the AgentPool is closed")
            self._renew_locked()
            connection = self._connections.get(target)
            if connection is None:
                channel = grpc.secure_channel(
                    target.address, self._credentials, options=channel_options(target, self.proxy_for(target))
                )
                connection = _Connection(
                    channel=channel,
                    proxy=agent_pb2_grpc.ProxmoxProxyStub(channel),
                    agent=agent_pb2_grpc.AgentStub(channel),
                    images=agent_pb2_grpc.ImagesStub(channel),
                    snippets=agent_pb2_grpc.SnippetsStub(channel),
                    health=health_pb2_grpc.HealthStub(channel),
                )
                self._connections[target] = connection
            return connection

    def _renew_locked(self) -> None:
        """Take renewed TLS material: new credentials for new channels, every current channel retired.

        Asked under the pool's lock (the files are looked at every few seconds at most, and read only
        when they changed) so that two threads cannot install material out of order. A retired channel
        is closed now when no call runs on it, else by its last call (:meth:`_using`): a call running
        on it finishes there, its TLS session made with the old certificate.
        """
        tls = self._source.current()
        if tls is self._tls:
            return
        self._tls, self._credentials = tls, tls.credentials()
        retired, self._connections = list(self._connections.values()), {}
        for connection in retired:
            connection.retired = True
            if connection.calls:
                self._retired.append(connection)
            else:
                connection.channel.close()

    @contextmanager
    def _slot(self, target: AgentTarget, deadline: float) -> Iterator[float]:
        """Hold one of the target's in-flight slots; yields what is left of the deadline once it is held."""
        with self._lock:
            slots = self._slots.get(target)
            if slots is None:
                slots = self._slots[target] = threading.BoundedSemaphore(self.max_in_flight)
        started = time.monotonic()
        acquired = slots.acquire(timeout=deadline)
        metrics.slot_waited(target.identity, time.monotonic() - started, acquired=acquired)
        if not acquired:
            raise AgentBusy(target, self.max_in_flight, deadline)
        gauge = metrics.in_flight(target.identity)
        gauge.inc()
        try:
            remaining = deadline - (time.monotonic() - started)
            if remaining <= 0:
                raise AgentBusy(target, self.max_in_flight, deadline)
            yield remaining
        finally:
            gauge.dec()
            slots.release()

    def _call(
        self,
        target: AgentTarget,
        timeout: float | None,
        call: Callable[[_Connection, float], T],
        *,
        snippet: str = "",
        bounded: bool = False,
    ) -> T:
        """``call(connection, deadline)`` with its failure typed; ``bounded``: holding one of the slots."""
        deadline = self.timeout if timeout is None else timeout
        if deadline <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        with self._using(target) as connection:
            if not bounded:
                return self._send(target, connection, call, deadline, deadline, snippet)
            with self._slot(target, deadline) as remaining:
                return self._send(target, connection, call, remaining, deadline, snippet)

    @staticmethod
    def _send(
        target: AgentTarget,
        connection: _Connection,
        call: Callable[[_Connection, float], T],
        timeout: float,
        deadline: float,
        snippet: str,
    ) -> T:
        """``call(connection, timeout)``; a failure typed, a missed deadline named as the caller gave it."""
        try:
            return call(connection, timeout)
        except grpc.RpcError as exc:
            raise translate_error(cast(grpc.Call, exc), target, deadline, snippet=snippet) from None


class _GatewayNotFound(Exception):
    """Gateways.Get answered NOT_FOUND: the node has no such gateway."""


_PHASES: Mapping[int, TemplatePhase] = {
    agent_pb2.TemplateProgress.PHASE_CHECKING: TemplatePhase.CHECKING,
    agent_pb2.TemplateProgress.PHASE_DOWNLOADING: TemplatePhase.DOWNLOADING,
    agent_pb2.TemplateProgress.PHASE_VERIFYING: TemplatePhase.VERIFYING,
    agent_pb2.TemplateProgress.PHASE_IMPORTING: TemplatePhase.IMPORTING,
    agent_pb2.TemplateProgress.PHASE_DONE: TemplatePhase.DONE,
}


def template_progress(message: Any) -> TemplateProgress | None:
    """A TemplateProgress message as the dataclass, or None for a phase this client does not know."""
    phase = _PHASES.get(message.phase)
    if phase is None:
        return None
    return TemplateProgress(
        phase=phase,
        bytes_done=message.bytes_done,
        bytes_total=message.bytes_total,
        message=message.message,
        template_vmid=message.template_vmid,
        node=message.node,
    )


def channel_options(target: AgentTarget, proxy: str = "") -> list[tuple[str, Any]]:
    """Channel arguments for one agent.

    The TLS target name is the agent's identity, whatever address is dialled: the
    handshake fails unless the agent's certificate names the host we meant. With ``proxy``
    (the mesh hub's, ``http://host:port``) the channel is an HTTP CONNECT tunnel through it.
    """
    return [
        *([("grpc.http_proxy", proxy)] if proxy else []),
        ("grpc.ssl_target_name_override", target.identity),
        ("grpc.max_receive_message_length", MAX_RECEIVE_MESSAGE_BYTES),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[0]),
        ("grpc.min_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[0]),
        ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[1]),
    ]


def encode_params(params: Mapping[str, object] | None) -> dict[str, str]:
    """Parameters as the strings Proxmox reads: booleans as 1/0, numbers in decimal, None left out."""
    encoded: dict[str, str] = {}
    for name, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, bool):
            encoded[name] = "1" if value else "0"
        elif isinstance(value, int | float | str):
            encoded[name] = str(value)
        else:
            raise TypeError(f"parameter {name!r}: {type(value).__name__} cannot be sent to Proxmox")
    return encoded


def _status_phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"
