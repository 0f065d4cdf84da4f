"""The audit trail's recent records, as the portal's Activity page and VDC dashboards show them."""

from __future__ import annotations

import datetime

import graphene

from orchestrator.graphql.core import flexplane
from orchestrator.graphql.errors import domain_errors
from orchestrator.services import audit
from orchestrator.services.audit import AuditRecord as AuditRecordModel


class AuditTarget(graphene.ObjectType):
    """What an operation acted on: ``vm`` and its id, ``name`` and a snapshot's name, ..."""

    key = graphene.String(required=True)
    value = graphene.String(required=True)


class AuditRecord(graphene.ObjectType):
    """One mutation or portal action: who did what, where, and how it ended."""

    time = graphene.DateTime(required=True)
    subject = graphene.String(required=True, description="The caller's subject at the identity provider.")
    roles = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="The roles that mattered: ADMIN, USER, and the membership of the record's VDC.",
    )
    vdc = graphene.String(description="The VDC it acted in; null when it was no VDC's.")
    operation = graphene.String(
        required=True, description="The mutation (a portal action: the one it mirrors)."
    )
    targets = graphene.List(graphene.NonNull(AuditTarget), required=True)
    outcome = graphene.String(required=True, description="succeeded, failed, refused or error.")
    error_code = graphene.String(description="The error's code when it did not succeed.")
    request_id = graphene.String(description="The request's id (its answer's X-Request-ID, its log lines').")
    client = graphene.String(description="The client's address as the orchestrator saw it.")
    via = graphene.String(required=True, description="api or portal.")

    @staticmethod
    def resolve_targets(record: AuditRecordModel, info: graphene.ResolveInfo) -> list[AuditTarget]:
        return [AuditTarget(key=key, value=value) for key, value in record.targets.items()]


class Query(graphene.ObjectType):
    audit_records = graphene.List(
        graphene.NonNull(AuditRecord),
        required=True,
        vdc=graphene.ID(description="A VDC's records only (needed unless ADMIN)."),
        user=graphene.String(description="One subject's records only."),
        operation=graphene.String(description="One operation's records only."),
        since=graphene.DateTime(description="Records of this time or later only."),
        until=graphene.DateTime(description="Records of this time or earlier only."),
        first=graphene.Int(description=f"How many, newest first (default {audit.DEFAULT_RECENT})."),
        description="The recent audit records, newest first, as long as the management cluster keeps its "
        "Events (an hour by default). ADMIN: every VDC's; a member: the VDC named by `vdc` only (another "
        "VDC is NOT_FOUND; none named is FORBIDDEN). Needs USER or ADMIN.",
    )

    @staticmethod
    @domain_errors
    def resolve_audit_records(
        root: None,
        info: graphene.ResolveInfo,
        vdc: str | None = None,
        user: str | None = None,
        operation: str | None = None,
        since: datetime.datetime | None = None,
        until: datetime.datetime | None = None,
        first: int | None = None,
    ) -> list[AuditRecordModel]:
        return audit.recent(
            flexplane(info),
            vdc=vdc,
            user=user,
            operation=operation,
            since=since,
            until=until,
            limit=first or audit.DEFAULT_RECENT,
        )
