"""The management cluster the process's settings name, for the commands that work on it whole
(``backup``, ``restore``): the services take it as an argument, never reach it themselves."""

from __future__ import annotations

from orchestrator.services.backup import ManagementObjects, ObjectsApi
from orchestrator.sources.kube import kube


def management_objects() -> ObjectsApi:
    """The raw objects API of the process's management cluster (its API client, its timeout)."""
    source = kube()
    return ManagementObjects(source.core.api_client, source.timeout)
