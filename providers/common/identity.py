"""The providers' identity towards the orchestrator's services and the agents: ``flexplane-capi``.

The infrastructure provider acts for a VDC as a self-service user who is a member of it and nothing
else (``USER`` and ``vdc:<vdc>``): the create path then applies to its machines everything it applies
to a tenant's VMs (the VDC's catalog choices, quota, placement, networks). Its agent client certificate
bears the same name, which agents accept (``allowed_clients``).
"""

from __future__ import annotations

from orchestrator.auth import USER, VDC_ROLE_PREFIX, Principal
from orchestrator.services.context import Context

SERVICE_IDENTITY = "flexplane-capi"


def service_principal(vdc: str) -> Principal:
    return Principal(
        subject=SERVICE_IDENTITY,
        name=SERVICE_IDENTITY,
        email="",
        roles=frozenset({USER, f"{VDC_ROLE_PREFIX}{vdc}"}),
    )


def service_context(vdc: str) -> Context:
    """A fresh request's context, acting for VDC ``vdc`` as ``flexplane-capi``."""
    return Context(principal=service_principal(vdc), vdc=vdc)
