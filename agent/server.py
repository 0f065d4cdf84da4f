"""The agent's gRPC server: mutual TLS only, the health service, the proxy, images, snippets, consoles,
edge gateways and GetInfo."""

from __future__ import annotations

import asyncio
import datetime
import logging
import signal
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio  # type: ignore[attr-defined]  # not in grpc-stubs

from agent import __version__
from agent.auth import ClientAllowlist, Context, caller_name
from agent.certs import finish_swap
from agent.config import AgentConfig, split_listen
from agent.console import ConsoleServicer
from agent.gateways import GatewayManager, GatewaysServicer
from agent.images import EnsureRequest, Interrupted, InvalidRequest, TemplateImportError, TemplateManager
from agent.images.download import ChecksumMismatchError, Downloader, DownloadFailed, DownloadRefused
from agent.metrics import RpcMetrics, serve_metrics
from agent.proxmox import (
    ProxmoxBadAnswer,
    ProxmoxClient,
    ProxmoxNoAnswer,
    ProxmoxTimeout,
    ProxmoxUnreachableError,
)
from agent.proxy import ALLOWED, REFUSED, NotAllowed, Policy, Route, authorize
from agent.proxy.pools import (
    RESOURCES_PARAMS,
    RESOURCES_PATH,
    check_clone_source,
    check_same_pool,
    pools_of,
)
from agent.renewal import ServingCertificate, start_renewal
from agent.snippets import SnippetRefused, SnippetStore, SnippetStoreError
from agent.status import AgentStatus
from agent.update import UpdateOff, Updates
from agentclient.errors import (
    CHECKSUM_MISMATCH,
    ERROR_METADATA_KEY,
    IMAGE_DOWNLOAD_FAILED,
    IMAGE_IMPORT_FAILED,
    IMAGE_REFUSED,
    NOT_ALLOWLISTED,
    PROXMOX_NO_ANSWER,
    PROXMOX_UNREACHABLE,
    SNIPPET_FAILED,
    SNIPPET_REFUSED,
)
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc
from agentclient.templates import TemplatePhase, TemplateProgress
from agentclient.urlpolicy import display_url

log = logging.getLogger(__name__)

SERVICES = (
    agent_pb2.DESCRIPTOR.services_by_name["ProxmoxProxy"].full_name,
    agent_pb2.DESCRIPTOR.services_by_name["Agent"].full_name,
    agent_pb2.DESCRIPTOR.services_by_name["Images"].full_name,
    agent_pb2.DESCRIPTOR.services_by_name["Snippets"].full_name,
    agent_pb2.DESCRIPTOR.services_by_name["Console"].full_name,
    agent_pb2.DESCRIPTOR.services_by_name["Gateways"].full_name,
)
SIGNALS = (signal.SIGTERM, signal.SIGINT)
# Finish calls in flight for this long on SIGTERM, then cancel them.
SHUTDOWN_GRACE = 5.0
# gRPC says the server stopped once its calls are complete, not once their last frames have left the
# socket: a process that exits at once can lose an answer just given (a clone Proxmox made, reported to
# the caller as lost). The agent lingers this long before it exits.
SHUTDOWN_LINGER = 0.25
EXPIRY_WARNING = datetime.timedelta(days=7)
# Asking Proxmox its version for GetInfo must not hold the answer up for long.
VERSION_TIMEOUT = 2.0

SERVER_OPTIONS: list[tuple[str, Any]] = [
    # Fail loudly when another process holds the port, instead of sharing it.
    ("grpc.so_reuseport", 0),
    # Answers can be as large as a big cluster's /cluster/resources.
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.max_receive_message_length", 4 * 1024 * 1024),
    # Let callers' keepalive pings through (agentclient pings every 30 s, even when idle).
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 20_000),
    # And find dead callers ourselves.
    ("grpc.keepalive_time_ms", 120_000),
    ("grpc.keepalive_timeout_ms", 20_000),
]


class StartupError(Exception):
    """The agent cannot start; the message says why."""


class ProxmoxProxyServicer(agent_pb2_grpc.ProxmoxProxyServicer):
    """Forwards allowlisted requests to the node's Proxmox API: each route, parameter and value declared
    in agent.proxy.routes; anything else is refused before Proxmox is called, logged at WARNING with the
    REFUSED marker and the parameter it names."""

    def __init__(
        self, proxmox: ProxmoxClient, table: tuple[Route, ...] = ALLOWED, policy: Policy | None = None
    ) -> None:
        self.proxmox = proxmox
        self.table = table
        self.policy = policy or Policy()

    async def Call(self, request: Any, context: Context) -> Any:
        started = time.monotonic()
        caller = caller_name(context)
        method, path, params = request.method, request.path, dict(request.params)
        try:
            route = authorize(method, path, params, self.table, self.policy)
            if route.reads_pools:
                await self._check_pools(route, path, params)
        except NotAllowed as exc:
            log.warning(
                "%s parameter=%s %r %r for %s (%s): %s",
                REFUSED,
                exc.parameter or "-",
                method[:16],
                path[:200],
                caller,
                context.peer(),
                exc,
            )
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                str(exc),
                trailing_metadata=((ERROR_METADATA_KEY, NOT_ALLOWLISTED),),
            )
        # The caller's deadline bounds the call to Proxmox; when it is the tighter limit,
        # running out of it is the caller's DEADLINE_EXCEEDED, not an unreachable Proxmox.
        remaining = context.time_remaining()
        by_deadline = remaining is not None and remaining < self.proxmox.timeout
        limit = max(remaining or 0.0, 0.001) if by_deadline else self.proxmox.timeout
        try:
            answer = await self.proxmox.request(method, path, params, timeout=limit)
        except asyncio.CancelledError:
            # gRPC cancels the call when the caller goes away or its deadline passes.
            log.info("%s %s for %s: cancelled after %.0f ms", method, path, caller, _ms(started))
            raise
        except ProxmoxTimeout as exc:
            if by_deadline:
                log.info("%s %s for %s: deadline passed after %.0f ms", method, path, caller, _ms(started))
                await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the call's deadline passed")
            await self._unreachable(context, method, path, str(exc), PROXMOX_NO_ANSWER)
        except ProxmoxNoAnswer as exc:
            await self._unreachable(context, method, path, str(exc), PROXMOX_NO_ANSWER)
        except ProxmoxUnreachableError as exc:
            await self._unreachable(context, method, path, str(exc), PROXMOX_UNREACHABLE)
        except ProxmoxBadAnswer as exc:
            log.error("%s %s: %s", method, path, exc)
            await context.abort(grpc.StatusCode.INTERNAL, str(exc))
        log.info("%s %s for %s: %d in %.0f ms", method, path, caller, answer.status, _ms(started))
        return agent_pb2.ProxmoxResponse(
            status=answer.status, document_json=answer.document, message=answer.message, errors=answer.errors
        )

    async def _check_pools(self, route: Route, path: str, params: Mapping[str, str]) -> None:
        """``NotAllowed`` unless the VMs the route reaches are where ``agent.proxy.pools`` wants them, as the
        cluster's VMs say now: the VM the ``same_pool`` parameter names in the path VM's flex.plane pool;
        the path VM a template or in the pool ``clone_into`` names. Refused, too, when Proxmox cannot say:
        the check fails closed."""
        found = route.match(path)
        assert found is not None  # authorize matched it
        parameter = route.same_pool or route.clone_into
        try:
            answer = await self.proxmox.request("GET", RESOURCES_PATH, RESOURCES_PARAMS)
        except (ProxmoxUnreachableError, ProxmoxBadAnswer) as exc:
            raise NotAllowed(
                f"cannot read the cluster's VMs to check {parameter}: {exc}", parameter
            ) from None
        if answer.status != 200:
            raise NotAllowed(
                f"cannot read the cluster's VMs to check {parameter} (HTTP {answer.status})", parameter
            )
        vmid = found.group("vmid")
        if route.same_pool is not None:
            check_same_pool(pools_of(answer.data()), vmid, params[route.same_pool], route.same_pool)
        if route.clone_into is not None:
            check_clone_source(answer.data(), vmid, params.get(route.clone_into), route.clone_into)

    @staticmethod
    async def _unreachable(context: Context, method: str, path: str, reason: str, kind: str) -> NoReturn:
        """UNAVAILABLE, saying whether the request never reached Proxmox or its answer was lost."""
        log.warning("%s %s: %s", method, path, reason)
        await context.abort(
            grpc.StatusCode.UNAVAILABLE,
            reason,
            trailing_metadata=((ERROR_METADATA_KEY, kind),),
        )


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000


_PHASES = {
    TemplatePhase.CHECKING: agent_pb2.TemplateProgress.PHASE_CHECKING,
    TemplatePhase.DOWNLOADING: agent_pb2.TemplateProgress.PHASE_DOWNLOADING,
    TemplatePhase.VERIFYING: agent_pb2.TemplateProgress.PHASE_VERIFYING,
    TemplatePhase.IMPORTING: agent_pb2.TemplateProgress.PHASE_IMPORTING,
    TemplatePhase.DONE: agent_pb2.TemplateProgress.PHASE_DONE,
}

# How each failure of EnsureTemplate ends the call: its status code and "flexplane-error" value.
_IMAGE_FAILURES: tuple[tuple[type[BaseException], grpc.StatusCode, str | None], ...] = (
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT, None),
    (DownloadRefused, grpc.StatusCode.INVALID_ARGUMENT, IMAGE_REFUSED),
    (ChecksumMismatchError, grpc.StatusCode.FAILED_PRECONDITION, CHECKSUM_MISMATCH),
    (DownloadFailed, grpc.StatusCode.UNAVAILABLE, IMAGE_DOWNLOAD_FAILED),
    (TemplateImportError, grpc.StatusCode.FAILED_PRECONDITION, IMAGE_IMPORT_FAILED),
    (ProxmoxNoAnswer, grpc.StatusCode.UNAVAILABLE, PROXMOX_NO_ANSWER),
    (ProxmoxUnreachableError, grpc.StatusCode.UNAVAILABLE, PROXMOX_UNREACHABLE),
    (Interrupted, grpc.StatusCode.UNAVAILABLE, None),
    (ProxmoxBadAnswer, grpc.StatusCode.INTERNAL, None),
)


class ImagesServicer(agent_pb2_grpc.ImagesServicer):
    """Makes images available as templates on this node (see agent.images)."""

    def __init__(self, templates: TemplateManager) -> None:
        self.templates = templates

    async def EnsureTemplate(self, request: Any, context: Context) -> AsyncIterator[Any]:
        caller = caller_name(context)
        try:
            wanted = EnsureRequest.parse(request.image, request.url, request.checksum, request.storage)
        except InvalidRequest as exc:
            await self._fail(
                context, _requested_image(request), caller, exc, grpc.StatusCode.INVALID_ARGUMENT, None
            )
        log.info(
            "EnsureTemplate %s on %s from %s for %s",
            wanted.image,
            wanted.storage,
            display_url(wanted.url),
            caller,
        )
        try:
            async for progress in self.templates.ensure(wanted):
                yield progress_message(progress)
        except asyncio.CancelledError:
            log.info(
                "EnsureTemplate %s on %s for %s: the caller went away", wanted.image, wanted.storage, caller
            )
            raise
        except Exception as exc:
            for kind, code, metadata in _IMAGE_FAILURES:
                if isinstance(exc, kind):
                    await self._fail(context, wanted.image, caller, exc, code, metadata)
            log.exception("EnsureTemplate %s on %s failed unexpectedly", wanted.image, wanted.storage)
            await context.abort(
                grpc.StatusCode.INTERNAL, f"the agent failed unexpectedly: {type(exc).__name__}"
            )

    @staticmethod
    async def _fail(
        context: Context,
        image: str,
        caller: str,
        exc: BaseException,
        code: grpc.StatusCode,
        metadata: str | None,
    ) -> NoReturn:
        log.warning("EnsureTemplate %s for %s: %s: %s", image, caller, code.name, exc)
        await context.abort(
            code, str(exc), trailing_metadata=((ERROR_METADATA_KEY, metadata),) if metadata else ()
        )


def _requested_image(request: Any) -> str:
    """The image a request names, cut short for a log line."""
    return str(request.image)[:64] or "(no image)"


def progress_message(progress: TemplateProgress) -> Any:
    return agent_pb2.TemplateProgress(
        phase=_PHASES[progress.phase],
        bytes_done=progress.bytes_done,
        bytes_total=progress.bytes_total,
        message=progress.message,
        template_vmid=progress.template_vmid,
        node=progress.node,
    )


class SnippetsServicer(agent_pb2_grpc.SnippetsServicer):
    """Writes and removes cloud-init snippets in this node's snippets folder (see agent.snippets)."""

    def __init__(self, store: SnippetStore) -> None:
        self.store = store

    async def WriteSnippet(self, request: Any, context: Context) -> Any:
        name = str(request.name)
        try:
            volume_id = await asyncio.to_thread(self.store.write, name, bytes(request.content))
        except (SnippetRefused, SnippetStoreError) as exc:
            await self._fail(context, "WriteSnippet", name, exc)
        log.info("WriteSnippet %s for %s: %s", name, caller_name(context), volume_id)
        return agent_pb2.WriteSnippetResponse(volume_id=volume_id)

    async def DeleteSnippet(self, request: Any, context: Context) -> Any:
        name = str(request.name)
        try:
            deleted = await asyncio.to_thread(self.store.delete, name)
        except (SnippetRefused, SnippetStoreError) as exc:
            await self._fail(context, "DeleteSnippet", name, exc)
        log.info("DeleteSnippet %s for %s: %s", name, caller_name(context), "removed" if deleted else "none")
        return agent_pb2.DeleteSnippetResponse(deleted=deleted)

    @staticmethod
    async def _fail(context: Context, method: str, name: str, exc: Exception) -> NoReturn:
        refused = isinstance(exc, SnippetRefused)
        code = grpc.StatusCode.INVALID_ARGUMENT if refused else grpc.StatusCode.FAILED_PRECONDITION
        log.warning("%s %r for %s: %s: %s", method, name[:140], caller_name(context), code.name, exc)
        await context.abort(
            code,
            str(exc),
            trailing_metadata=((ERROR_METADATA_KEY, SNIPPET_REFUSED if refused else SNIPPET_FAILED),),
        )


class AgentServicer(agent_pb2_grpc.AgentServicer):
    """Answers what this agent is."""

    def __init__(
        self,
        config: AgentConfig,
        status: AgentStatus,
        proxmox: ProxmoxClient | None = None,
        updates: Updates | None = None,
    ) -> None:
        self.config = config
        self.status = status
        self.proxmox = proxmox
        self.updates = updates

    async def GetInfo(self, request: Any, context: Context) -> Any:
        config = self.config
        if self.updates is not None:
            self.updates.refresh()
        if not self.status.proxmox_version and self.proxmox is not None:
            self.status.proxmox_version = await proxmox_version(self.proxmox)
        return self.status.to_proto(
            version=__version__, node=config.node, zone=config.zone, identity=config.identity
        )

    async def UpdateNow(self, request: Any, context: Context) -> Any:
        """The release channel checked now, by the same updater as every update_interval."""
        if self.updates is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "self-update is off")
        assert self.updates is not None
        try:
            said, updater = await self.updates.update_now()
        except UpdateOff as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        return agent_pb2.UpdateNowReply(
            outcome=said,
            offered_version=updater.offered,
            applying=bool(updater.handed_over),
            running_version=updater.running,
        )


async def proxmox_version(proxmox: ProxmoxClient) -> str:
    """The node's Proxmox VE version, or "" when Proxmox does not answer in time."""
    try:
        answer = await proxmox.request("GET", "/version", {}, timeout=VERSION_TIMEOUT)
        data = answer.data() if answer.status < 400 else None
    except (ProxmoxUnreachableError, ProxmoxBadAnswer, ValueError):
        return ""
    return str(data.get("version") or "") if isinstance(data, dict) else ""


@dataclass(frozen=True)
class ServerTLS:
    """The agent's certificate chain and key, and the CA its callers must be signed by (PEM)."""

    cert: bytes
    key: bytes
    ca: bytes

    @classmethod
    def load(cls, config: AgentConfig) -> ServerTLS:
        """Read and check the files: the certificate must name this agent and match its key.

        A renewal a crash interrupted is finished (or discarded) first: see agent.certs.
        """
        try:
            if done := finish_swap(config.tls_cert, config.tls_key):
                log.warning("%s", done)
        except OSError as exc:
            raise StartupError(f"cannot finish the interrupted certificate swap: {exc}") from None
        tls = cls(config.tls_cert.read_bytes(), config.tls_key.read_bytes(), config.ca.read_bytes())
        tls.check(config)
        return tls

    def check(self, config: AgentConfig) -> None:
        try:
            certificate = x509.load_pem_x509_certificate(self.cert)
        except ValueError as exc:
            raise StartupError(f"tls_cert {config.tls_cert} is not a PEM certificate ({exc})") from None
        try:
            key = serialization.load_pem_private_key(self.key, password=None)
        except (ValueError, TypeError) as exc:
            raise StartupError(
                f"tls_key {config.tls_key} is not an unencrypted PEM private key ({exc})"
            ) from None
        if key.public_key() != certificate.public_key():
            raise StartupError(f"tls_key {config.tls_key} is not the key of tls_cert {config.tls_cert}")
        try:
            names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns_names = [name.lower() for name in names.get_values_for_type(x509.DNSName)]
        except x509.ExtensionNotFound:
            dns_names = []
        if config.identity.lower() not in dns_names:
            raise StartupError(
                f"tls_cert {config.tls_cert} does not name {config.identity} (it names "
                f"{', '.join(dns_names) or 'no DNS name'}): callers would refuse it"
            )
        now = datetime.datetime.now(datetime.UTC)
        if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
            raise StartupError(
                f"tls_cert {config.tls_cert} is valid from {certificate.not_valid_before_utc:%Y-%m-%d %H:%M} "
                f"to {certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC, not now"
            )
        if certificate.not_valid_after_utc - now < EXPIRY_WARNING:
            log.warning("tls_cert %s expires on %s", config.tls_cert, certificate.not_valid_after_utc)
        try:
            x509.load_pem_x509_certificates(self.ca)
        except ValueError as exc:
            raise StartupError(f"ca {config.ca} is not a PEM certificate bundle ({exc})") from None

    def not_after(self) -> float:
        """When the certificate expires, in Unix seconds."""
        return x509.load_pem_x509_certificate(self.cert).not_valid_after_utc.timestamp()

    def serving(self) -> ServingCertificate:
        """What the server presents: requires every caller's certificate of the CA; renewal swaps it."""
        return ServingCertificate(self.cert, self.key, self.ca)


async def serve(config: AgentConfig, *, stop: asyncio.Event | None = None) -> None:
    """Serve until SIGTERM or SIGINT (or until stop is set), then shut down gracefully."""
    tls = ServerTLS.load(config)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    async with (
        ProxmoxClient(
            config.proxmox_url,
            config.proxmox_token_id,
            config.proxmox_token_secret,
            ca_file=config.proxmox_ca,
            timeout=config.proxmox_timeout,
        ) as proxmox,
        Downloader(config.image_allow_hosts, config.image_max_bytes, ca_file=config.image_ca) as downloader,
    ):
        templates = TemplateManager(
            proxmox,
            downloader,
            node=config.node,
            cache=config.image_cache,
            staging_storage=config.image_staging_storage,
        )
        templates.prepare()
        server = grpc.aio.server(
            interceptors=[RpcMetrics(), ClientAllowlist(config.allowed_clients, own=config.identity)],
            options=SERVER_OPTIONS,
        )
        health = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        agent_pb2_grpc.add_ProxmoxProxyServicer_to_server(
            ProxmoxProxyServicer(proxmox, policy=Policy(snippets_storage=config.snippets_storage or None)),
            server,
        )
        status = AgentStatus(certificate_not_after=tls.not_after())
        serving = tls.serving()
        updates = Updates(config, status)
        agent_pb2_grpc.add_AgentServicer_to_server(AgentServicer(config, status, proxmox, updates), server)
        agent_pb2_grpc.add_ImagesServicer_to_server(ImagesServicer(templates), server)
        agent_pb2_grpc.add_SnippetsServicer_to_server(
            SnippetsServicer(SnippetStore(config.snippets_dir, config.snippets_storage)), server
        )
        agent_pb2_grpc.add_ConsoleServicer_to_server(
            ConsoleServicer(proxmox, config.node, config.console_clients), server
        )
        gateways = GatewayManager(config.node, config.gateway_dir)
        agent_pb2_grpc.add_GatewaysServicer_to_server(
            GatewaysServicer(gateways, config.gateway_clients), server
        )
        try:
            port = server.add_secure_port(config.listen, serving.credentials())
        except RuntimeError as exc:
            raise StartupError(f"cannot listen on {config.listen}: {exc}") from None
        if not port:
            raise StartupError(f"cannot listen on {config.listen}")
        for service in SERVICES:
            await health.set(service, health_pb2.HealthCheckResponse.SERVING)
        await server.start()
        # The gateways the orchestrator last sent run again (a reboot emptied the namespaces).
        restoring = asyncio.create_task(asyncio.to_thread(gateways.restore))
        renewal = start_renewal(config, status, serving)
        metrics = None
        try:
            if config.metrics_listen:
                try:
                    metrics = await serve_metrics(config.metrics_listen, status, config.image_cache)
                except OSError as exc:  # the metrics are not worth refusing the node's calls for
                    log.warning("no metrics: cannot listen on %s: %s", config.metrics_listen, exc)
            for signum in SIGNALS:
                loop.add_signal_handler(signum, stop.set)
            host, configured_port = split_listen(config.listen)
            address = config.listen if configured_port else f"{f'[{host}]' if ':' in host else host}:{port}"
            log.info(
                "agent %s %s serving %s for %s; Proxmox at %s",
                config.identity,
                __version__,
                address,
                ", ".join(sorted(config.allowed_clients)),
                config.proxmox_url,
            )
            print(f"flexplane-agent listening on {address}", flush=True)
            updates.start()
            await stop.wait()
        finally:
            log.info("shutting down")
            if metrics is not None:
                await metrics.cleanup()
            await updates.aclose()
            for signum in SIGNALS:
                loop.remove_signal_handler(signum)
            if renewal is not None:
                renewal.cancel()
            await health.enter_graceful_shutdown()
            await server.stop(SHUTDOWN_GRACE)
            await asyncio.sleep(SHUTDOWN_LINGER)
            await templates.aclose()
            await restoring
