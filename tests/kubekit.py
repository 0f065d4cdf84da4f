"""The management cluster as the tests read it: the devstack world's through the orchestrator's own
Kubernetes source (on the world's kubeconfig, in the platform namespace), or any ``KubeApi`` (the light
world's); the audit records its Events hold."""

from __future__ import annotations

import json

from kubernetes import config

from devstack import seed
from devstack.world import World
from orchestrator.services import audit
from orchestrator.sources.kube import KubeSource
from orchestrator.sources.protocols import KubeApi


def world_kube(world: World, timeout: float = 5.0) -> KubeSource:
    """A source on the world's management cluster (close ``source.core.api_client`` when done with it)."""
    assert world.kubeconfig is not None
    return KubeSource(
        config.new_client_from_config(config_file=str(world.kubeconfig)), seed.NAMESPACE, timeout
    )


def audit_records(kube: KubeApi, request_id: str) -> list[audit.AuditRecord]:
    """The audit records the management cluster's Events hold for one request, as written."""
    found = []
    for entry in kube.list_events(f"{audit.AUDIT_LABEL}=true", audit.MAX_READ * 10):
        record = audit.AuditRecord.from_json(json.loads(entry.annotations[audit.RECORD_ANNOTATION]))
        if record is not None and record.request_id == request_id:
            found.append(record)
    return found
