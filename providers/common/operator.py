"""Running a provider: a kopf operator of its own (its registry, its settings, its finalizer).

Both providers run in one process, each as its own kopf operator in one event loop: kopf keeps one
finalizer per operator, and each provider's objects carry the finalizer its contract names
(``infrastructure.flexplane.io/finalizer``, ``controlplane.flexplane.io/finalizer``). A provider's
handlers module registers on its ``Provider.registry`` and exposes ``PROVIDER``.

Settings for both: standalone (leadership is our Lease, :mod:`providers.leader`, not kopf's peering),
no scanning of CRDs and namespaces (the chart installs the CRDs before the providers start; the
operator watches its kinds cluster-wide), kopf's own state in annotations (a real API server prunes
unknown status fields such as ``status.kopf``), and Kubernetes Events only for warnings.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import kopf
from kubernetes import client

logger = logging.getLogger(__name__)


@dataclass
class Provider:
    """One provider's operator: ``name`` (for logs), its finalizer, and the registry its handlers use."""

    name: str
    finalizer: str
    annotations_prefix: str
    registry: kopf.OperatorRegistry = field(default_factory=kopf.OperatorRegistry)
    # The credentials its operator logs in with (set by ``run``).
    connection: kopf.ConnectionInfo | None = None

    def __post_init__(self) -> None:
        kopf.on.login(registry=self.registry, id="login")(self._login)

    def _login(self, **_: Any) -> kopf.ConnectionInfo:
        if self.connection is None:
            raise kopf.LoginError(f"the {self.name} provider was given no credentials")
        return self.connection

    def settings(self) -> kopf.OperatorSettings:
        settings = kopf.OperatorSettings()
        settings.peering.standalone = True
        settings.scanning.disabled = True
        settings.persistence.finalizer = self.finalizer
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
            prefix=self.annotations_prefix
        )
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix=self.annotations_prefix, key="last-handled-configuration"
        )
        settings.posting.level = logging.WARNING
        # A watch ends (and is opened again) at least every few minutes, as client-go's informers do.
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        return settings


def connection_info(configuration: client.Configuration) -> kopf.ConnectionInfo:
    """kopf's credentials from the Kubernetes client's configuration (kubeconfig or in-cluster)."""
    header = configuration.get_api_key_with_prefix("BearerToken") or configuration.get_api_key_with_prefix(
        "authorization"
    )
    scheme, _sep, token = (header or "").partition(" ")
    if header and not token:
        scheme, token = "", header
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        scheme=scheme or None,
        token=token or None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


async def run(
    providers: Sequence[Provider],
    configuration: client.Configuration,
    stop: threading.Event,
    ready: threading.Event | None = None,
    memo: Any = None,
) -> None:
    """Run every provider's operator until ``stop`` is set (or one of them fails)."""
    readies: list[asyncio.Event] = []
    operators = []
    for provider in providers:
        provider.connection = connection_info(configuration)
        flag = asyncio.Event()
        readies.append(flag)
        operators.append(
            kopf.operator(
                registry=provider.registry,
                settings=provider.settings(),
                clusterwide=True,
                standalone=True,
                stop_flag=stop,
                ready_flag=flag,
                memo=kopf.Memo(memo or {}),
            )
        )
    tasks = [
        asyncio.create_task(op, name=f"operator-{p.name}") for op, p in zip(operators, providers, strict=True)
    ]

    async def announce() -> None:
        await asyncio.gather(*(flag.wait() for flag in readies))
        logger.info("providers ready: %s", ", ".join(p.name for p in providers))
        if ready is not None:
            ready.set()

    announcer = asyncio.create_task(announce())
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        stop.set()  # one ended: end them all
        await asyncio.gather(*tasks, return_exceptions=True)
        for task in done:
            task.result()
    finally:
        announcer.cancel()
