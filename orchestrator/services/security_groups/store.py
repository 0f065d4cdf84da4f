"""A VDC's security groups, stored in its catalog entry (the VDC ConfigMap's spec, ``securityGroups``).

A change is read, applied and written back at the version read (``resourceVersion``); when another
write got there first (``Conflict``) it is read and applied again, a few times, so that concurrent
changes to one VDC (of its groups, or of the VDC itself) are never lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from orchestrator.errors import Conflict, NotFound
from orchestrator.models.security_groups import SecurityGroup, groups_from_spec, groups_to_spec
from orchestrator.services import catalog
from orchestrator.services.context import Context

T = TypeVar("T")

SPEC_KEY = "securityGroups"
WRITE_ATTEMPTS = 5

Groups = dict[str, SecurityGroup]


def stored_groups(ctx: Context, vdc_id: str) -> Groups:
    """The VDC's groups by name (``default`` among them), from the request's catalog snapshot."""
    entry = catalog.entries(ctx, catalog.VDC).get(vdc_id)
    if entry is None:
        raise NotFound("VDC", vdc_id)
    return groups_from_spec(entry.spec)


def change_groups(ctx: Context, vdc_id: str, change: Callable[[Groups], tuple[Groups, T]]) -> T:
    """Apply ``change`` to the VDC's groups as stored now and store what it returns; its second value
    is the answer. ``change`` may be called again (after a concurrent write): it must be pure."""
    attempt = 0
    while True:
        attempt += 1
        entry = ctx.kube.get_catalog(catalog.VDC, vdc_id)
        if entry is None:
            raise NotFound("VDC", vdc_id)
        groups, answer = change(groups_from_spec(entry.spec))
        spec = {**entry.spec, SPEC_KEY: groups_to_spec(groups.values())}
        try:
            stored = ctx.kube.replace_catalog(
                catalog.VDC, vdc_id, spec, entry.resource_version, labels=entry.labels
            )
        except Conflict:
            if attempt == WRITE_ATTEMPTS:
                raise
            continue
        catalog.remember(ctx, stored)
        return answer
