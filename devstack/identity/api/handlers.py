"""The methods: each takes the request's JSON object and answers the response's, as Zitadel's v2 services.

Field names are read in protobuf's JSON form (lowerCamelCase) or their proto names; a field the method's
message does not have is refused (``invalid_argument``), as Zitadel's Connect server refuses it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from devstack.identity.api.errors import ConnectError
from devstack.identity.api.models import Account, Authorization, Organization, ProjectGrant, ProjectRole
from devstack.identity.claims import ORGANISATION_ID
from devstack.identity.config import current_config

# The organization that owns the project: roles are given there without a grant.
OWNER = ORGANISATION_ID

Body = dict[str, Any]
_MAX_LIMIT = 1000


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def fields(body: Any, allowed: Iterable[str], where: str) -> dict[str, Any]:
    """``body`` under proto (snake_case) names; ``invalid_argument`` for anything else."""
    if not isinstance(body, Mapping):
        raise ConnectError("invalid_argument", f"{where} must be an object")
    known = set(allowed)
    out: dict[str, Any] = {}
    for name, value in body.items():
        proto = _snake(name) if name == _camel(_snake(name)) else name
        if proto not in known:
            raise ConnectError("invalid_argument", f"unknown field {name!r} in {where}")
        out[proto] = value
    return out


def _string(values: Mapping[str, Any], name: str, where: str, *, required: bool = True) -> str:
    value = values.get(name, "")
    if not isinstance(value, str):
        raise ConnectError("invalid_argument", f"{where}.{name} must be a string")
    if required and not 1 <= len(value) <= 200:
        raise ConnectError(
            "invalid_argument", f"invalid {where}.{name}: value length must be between 1 and 200"
        )
    if len(value) > 200:
        raise ConnectError("invalid_argument", f"invalid {where}.{name}: value length must be at most 200")
    return value


def _strings(values: Mapping[str, Any], name: str, where: str) -> list[str]:
    value = values.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and 1 <= len(v) <= 200 for v in value):
        raise ConnectError(
            "invalid_argument", f"{where}.{name} must be a list of strings of 1 to 200 characters"
        )
    if len(set(value)) != len(value):
        raise ConnectError("invalid_argument", f"{where}.{name} must hold unique items")
    return list(value)


def _list(values: Mapping[str, Any], name: str, where: str = "") -> list[Any]:
    """``values[name]``, a list (empty when absent); ``invalid_argument`` for anything else."""
    value = values.get(name) or []
    if not isinstance(value, list):
        raise ConnectError(
            "invalid_argument", f"{where}.{name} must be a list" if where else f"{name} must be a list"
        )
    return value


def _now() -> str:
    return _timestamp(timezone.now())


def _timestamp(moment: Any) -> str:
    return str(moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def _project(values: Mapping[str, Any], where: str, name: str = "project_id") -> str:
    project = _string(values, name, where)
    if project != current_config().project_id:
        raise ConnectError("not_found", "Project not found (PROJECT-3n9fs)")
    return project


def _project_and(body: Body, name: str, where: str) -> tuple[str, str]:
    """A request of the project and one string ``name``: the two, checked."""
    values = fields(body, ("project_id", name), where)
    return _project(values, where), _string(values, name, where)


def _page(values: Mapping[str, Any], name: str) -> tuple[int, int]:
    page = fields(values.get(name) or {}, ("offset", "limit", "asc"), name)
    try:
        offset, limit = int(page.get("offset") or 0), int(page.get("limit") or 100)
    except (TypeError, ValueError) as exc:
        raise ConnectError("invalid_argument", f"{name} offset and limit must be numbers") from exc
    if limit > _MAX_LIMIT:
        raise ConnectError("invalid_argument", f"limit exceeds the maximum of {_MAX_LIMIT}")
    return offset, limit


# ------------------------------------------------------------------------------ text filters

_TEXT = {
    "EQUALS": lambda v, s: v == s,
    "EQUALS_IGNORE_CASE": lambda v, s: v.lower() == s.lower(),
    "STARTS_WITH": lambda v, s: v.startswith(s),
    "STARTS_WITH_IGNORE_CASE": lambda v, s: v.lower().startswith(s.lower()),
    "CONTAINS": lambda v, s: s in v,
    "CONTAINS_IGNORE_CASE": lambda v, s: s.lower() in v.lower(),
    "ENDS_WITH": lambda v, s: v.endswith(s),
    "ENDS_WITH_IGNORE_CASE": lambda v, s: v.lower().endswith(s.lower()),
}


def _text_match(method: Any, prefix: str) -> Callable[[str, str], bool]:
    name = method if isinstance(method, str) and method else f"{prefix}_EQUALS"
    if not name.startswith(prefix + "_") or name.removeprefix(prefix + "_") not in _TEXT:
        raise ConnectError("invalid_argument", f"invalid text method {name!r}")
    return _TEXT[name.removeprefix(prefix + "_")]


# ------------------------------------------------------------------------------ users


def _user_json(account: Account) -> Body:
    user = account.user
    org = account.organization
    display = (user.first_name if account.machine else user.get_full_name()) or user.username
    common: Body = {
        "userId": account.zitadel_id,
        "details": {"sequence": "1", "changeDate": _now(), "resourceOwner": org.id},
        "state": "USER_STATE_ACTIVE" if user.is_active else "USER_STATE_INACTIVE",
        "username": user.username,
        "loginNames": [f"{user.username}@{org.domain}"],
        "preferredLoginName": f"{user.username}@{org.domain}",
    }
    if account.machine:
        return {**common, "machine": {"name": display, "description": user.last_name, "hasSecret": False}}
    return {
        **common,
        "human": {
            "profile": {"givenName": user.first_name, "familyName": user.last_name, "displayName": display},
            "email": {"email": user.email, "isVerified": True},
        },
    }


_USER_QUERIES = (
    "user_name_query",
    "first_name_query",
    "last_name_query",
    "nick_name_query",
    "display_name_query",
    "email_query",
    "state_query",
    "type_query",
    "login_name_query",
    "in_user_ids_query",
    "or_query",
    "and_query",
    "not_query",
    "in_user_emails_query",
    "organization_id_query",
    "phone_query",
)
_TEXT_QUERIES = {
    "user_name_query": ("user_name", lambda a: a.user.username),
    "first_name_query": ("first_name", lambda a: a.user.first_name),
    "last_name_query": ("last_name", lambda a: a.user.last_name),
    "display_name_query": ("display_name", lambda a: a.user.get_full_name() or a.user.username),
    "email_query": ("email_address", lambda a: a.user.email),
}


def _user_matcher(query: Any, depth: int = 0) -> Callable[[Account], bool]:
    if depth > 10:
        raise ConnectError("invalid_argument", "queries nest too deep")
    values = fields(query, _USER_QUERIES, "SearchQuery")
    if len(values) != 1:
        raise ConnectError("invalid_argument", "a SearchQuery must set exactly one query")
    ((kind, inner),) = values.items()
    if kind in _TEXT_QUERIES:
        name, read = _TEXT_QUERIES[kind]
        parts = fields(inner, (name, "method"), kind)
        wanted = _string(parts, name, kind, required=kind != "email_query")
        match = _text_match(parts.get("method"), "TEXT_QUERY_METHOD")
        return lambda account: match(read(account), wanted)
    if kind == "in_user_ids_query":
        ids = set(_strings(fields(inner, ("user_ids",), kind), "user_ids", kind))
        return lambda account: account.zitadel_id in ids
    if kind == "organization_id_query":
        org = _string(fields(inner, ("organization_id",), kind), "organization_id", kind)
        return lambda account: account.organization_id == org
    if kind == "type_query":
        kind_name = fields(inner, ("type",), kind).get("type")
        if kind_name not in ("TYPE_HUMAN", "TYPE_MACHINE"):
            raise ConnectError("invalid_argument", "type_query.type must be TYPE_HUMAN or TYPE_MACHINE")
        return lambda account: account.machine == (kind_name == "TYPE_MACHINE")
    if kind in ("or_query", "and_query"):
        subs = _list(fields(inner, ("queries",), kind), "queries", kind)
        matchers = [_user_matcher(sub, depth + 1) for sub in subs]
        combine = any if kind == "or_query" else all
        return lambda account: combine(m(account) for m in matchers)
    if kind == "not_query":
        negated = _user_matcher(fields(inner, ("query",), kind).get("query"), depth + 1)
        return lambda account: not negated(account)
    raise ConnectError("unimplemented", f"{kind} is not served by the development identity provider")


def list_users(body: Body) -> Body:
    values = fields(body, ("query", "sorting_column", "queries"), "ListUsersRequest")
    offset, limit = _page(values, "query")
    matchers = [_user_matcher(q) for q in _list(values, "queries")]
    accounts = [
        a
        for a in Account.objects.select_related("user", "organization").order_by("user__username")
        if all(m(a) for m in matchers)
    ]
    page = accounts[offset : offset + limit]
    return {
        "details": {"totalResult": str(len(accounts)), "timestamp": _now()},
        "sortingColumn": values.get("sorting_column") or "USER_FIELD_NAME_UNSPECIFIED",
        "result": [_user_json(a) for a in page],
    }


# ------------------------------------------------------------------------------ project roles


def add_project_role(body: Body) -> Body:
    where = "AddProjectRoleRequest"
    values = fields(body, ("project_id", "role_key", "display_name", "group"), where)
    project = _project(values, where)
    key = _string(values, "role_key", where)
    display = _string(values, "display_name", where)
    group = _string(values, "group", where, required=False)
    try:
        with transaction.atomic():
            ProjectRole.objects.create(project_id=project, key=key, display_name=display, group=group)
    except IntegrityError as exc:
        raise ConnectError("already_exists", "Errors.Project.Role.AlreadyExists (PROJECT-4m9vS)") from exc
    return {"creationDate": _now()}


def remove_project_role(body: Body) -> Body:
    project, key = _project_and(body, "role_key", "RemoveProjectRoleRequest")
    with transaction.atomic():
        deleted, _ = ProjectRole.objects.filter(project_id=project, key=key).delete()
        holders: list[Authorization | ProjectGrant] = [
            *Authorization.objects.filter(project_id=project),
            *ProjectGrant.objects.filter(project_id=project),
        ]
        for holder in holders:
            if key in holder.role_keys:
                holder.role_keys = [k for k in holder.role_keys if k != key]
                holder.save()
    return {"removalDate": _now()} if deleted else {}


def get_project(body: Body) -> Body:
    where = "GetProjectRequest"
    project = _project(fields(body, ("project_id",), where), where)
    return {
        "project": {
            "projectId": project,
            "organizationId": OWNER,
            "name": "flex.plane",
            "state": "PROJECT_STATE_ACTIVE",
            "projectRoleAssertion": True,
            "authorizationRequired": True,
        }
    }


def _project_grant(body: Body, where: str) -> tuple[str, Organization, list[str]]:
    values = fields(body, ("project_id", "granted_organization_id", "role_keys"), where)
    project = _project(values, where)
    org = Organization.objects.filter(id=_string(values, "granted_organization_id", where)).first()
    if org is None:
        raise ConnectError("not_found", "Errors.Org.NotFound (PROJECT-3M9fs)")
    if org.id == OWNER:
        raise ConnectError("invalid_argument", "Errors.Project.Grant.SameOrganization (PROJECT-3m9FS)")
    keys = _strings(values, "role_keys", where)
    _role_keys(project, keys)
    return project, org, keys


def create_project_grant(body: Body) -> Body:
    project, org, keys = _project_grant(body, "CreateProjectGrantRequest")
    try:
        with transaction.atomic():
            grant = ProjectGrant.objects.create(project_id=project, organization=org, role_keys=keys)
    except IntegrityError as exc:
        raise ConnectError("already_exists", "Errors.Project.Grant.AlreadyExists (PROJECT-8kf9s)") from exc
    return {"creationDate": _timestamp(grant.created)}


def update_project_grant(body: Body) -> Body:
    project, org, keys = _project_grant(body, "UpdateProjectGrantRequest")
    with transaction.atomic():
        grant = ProjectGrant.objects.filter(project_id=project, organization=org).first()
        if grant is None:
            raise ConnectError("not_found", "Errors.Project.Grant.NotFound (PROJECT-D8JxR)")
        taken = set(grant.role_keys) - set(keys)
        grant.role_keys = keys
        grant.save()
        for holder in Authorization.objects.filter(project_id=project, organization=org):
            if taken & set(holder.role_keys):
                holder.role_keys = [k for k in holder.role_keys if k not in taken]
                holder.save()
    return {"changeDate": _timestamp(grant.changed)}


def delete_project_grant(body: Body) -> Body:
    """The grant removed, and with it the organization's authorizations of the project (as Zitadel does);
    none to remove is no error (no deletion date)."""
    project, org = _project_and(body, "granted_organization_id", "DeleteProjectGrantRequest")
    with transaction.atomic():
        deleted, _ = ProjectGrant.objects.filter(project_id=project, organization_id=org).delete()
        if deleted:
            Authorization.objects.filter(project_id=project, organization_id=org).delete()
    return {"deletionDate": _now()} if deleted else {}


# ------------------------------------------------------------------------------ authorizations


def _role_keys(project: str, keys: list[str], org: Organization | None = None) -> None:
    """The roles exist, and (in an organization that does not own the project) its grant has them."""
    known = set(ProjectRole.objects.filter(project_id=project, key__in=keys).values_list("key", flat=True))
    missing = [k for k in keys if k not in known]
    if missing:
        raise ConnectError("failed_precondition", "Errors.Project.Role.NotFound (COMMAND-m9Fs2)")
    if org is not None and org.id != OWNER:
        grant = ProjectGrant.objects.filter(project_id=project, organization=org).first()
        if grant is None or not set(keys) <= set(grant.role_keys):
            raise ConnectError("failed_precondition", "Errors.Project.Grant.Role.NotFound (COMMAND-4fm9s)")


def _authorization_json(grant: Authorization) -> Body:
    account = grant.account
    org = grant.organization
    roles = {
        r.key: r for r in ProjectRole.objects.filter(project_id=grant.project_id, key__in=grant.role_keys)
    }
    return {
        "id": grant.id,
        "creationDate": _timestamp(grant.created),
        "changeDate": _timestamp(grant.changed),
        "project": {"id": grant.project_id, "name": "flex.plane", "organizationId": org.id},
        "organization": {"id": org.id, "name": org.name},
        "user": {
            "id": account.zitadel_id,
            "preferredLoginName": f"{account.user.username}@{account.organization.domain}",
            "displayName": account.user.get_full_name() or account.user.username,
            "organizationId": account.organization_id,
        },
        "state": "STATE_ACTIVE" if grant.active else "STATE_INACTIVE",
        "roles": [
            {"key": key, "displayName": roles[key].display_name, "group": roles[key].group}
            for key in grant.role_keys
            if key in roles
        ],
    }


_AUTHORIZATION_FILTERS = (
    "authorization_ids",
    "organization_id",
    "state",
    "user_id",
    "user_organization_id",
    "user_preferred_login_name",
    "user_display_name",
    "project_id",
    "project_name",
    "role_key",
    "project_grant_id",
)


def _authorization_filter(item: Any) -> Q:
    values = fields(item, _AUTHORIZATION_FILTERS, "AuthorizationsSearchFilter")
    if len(values) != 1:
        raise ConnectError("invalid_argument", "a filter must set exactly one criterion")
    ((kind, inner),) = values.items()
    if kind in ("organization_id", "user_id", "project_id", "user_organization_id"):
        ident = _string(fields(inner, ("id",), kind), "id", kind, required=False)
        column = {
            "organization_id": "organization_id",
            "user_id": "account__zitadel_id",
            "project_id": "project_id",
            "user_organization_id": "account__organization_id",
        }[kind]
        return Q(**{column: ident})
    if kind == "authorization_ids":
        return Q(id__in=_strings(fields(inner, ("ids",), kind), "ids", kind))
    if kind == "state":
        state = fields(inner, ("state",), kind).get("state")
        if state not in ("STATE_ACTIVE", "STATE_INACTIVE"):
            raise ConnectError("invalid_argument", "state must be STATE_ACTIVE or STATE_INACTIVE")
        return Q(active=state == "STATE_ACTIVE")
    if kind == "role_key":
        parts = fields(inner, ("key", "method"), kind)
        key = _string(parts, "key", kind, required=False)
        match = _text_match(parts.get("method"), "TEXT_FILTER_METHOD")
        ids = [g.id for g in Authorization.objects.all() if any(match(k, key) for k in g.role_keys)]
        return Q(id__in=ids)
    raise ConnectError("unimplemented", f"filter {kind} is not served by the development identity provider")


def list_authorizations(body: Body) -> Body:
    values = fields(body, ("pagination", "sorting_column", "filters"), "ListAuthorizationsRequest")
    offset, limit = _page(values, "pagination")
    query = Q()
    for item in _list(values, "filters"):
        query &= _authorization_filter(item)
    grants = list(
        Authorization.objects.filter(query)
        .select_related("account__user", "account__organization", "organization")
        .order_by("created", "id")
    )
    return {
        "pagination": {"totalResult": str(len(grants)), "appliedLimit": str(limit)},
        "authorizations": [_authorization_json(g) for g in grants[offset : offset + limit]],
    }


def create_authorization(body: Body) -> Body:
    where = "CreateAuthorizationRequest"
    values = fields(body, ("user_id", "project_id", "organization_id", "role_keys"), where)
    user_id = _string(values, "user_id", where)
    project = _project(values, where)
    org_id = _string(values, "organization_id", where)
    keys = _strings(values, "role_keys", where)
    account = Account.objects.filter(zitadel_id=user_id).first()
    if account is None:
        raise ConnectError("not_found", "Errors.User.NotFound (COMMAND-2M0fs)")
    org = Organization.objects.filter(id=org_id).first()
    if org is None:
        raise ConnectError("not_found", "Errors.Org.NotFound (COMMAND-2M0fs)")
    _role_keys(project, keys, org)
    try:
        with transaction.atomic():
            grant = Authorization.objects.create(
                account=account, project_id=project, organization=org, role_keys=keys
            )
    except IntegrityError as exc:
        raise ConnectError("already_exists", "Errors.UserGrant.AlreadyExists (COMMAND-2N9fs)") from exc
    return {"id": grant.id, "creationDate": _timestamp(grant.created)}


def update_authorization(body: Body) -> Body:
    where = "UpdateAuthorizationRequest"
    values = fields(body, ("id", "role_keys"), where)
    ident = _string(values, "id", where)
    keys = _strings(values, "role_keys", where)
    with transaction.atomic():
        grant = Authorization.objects.filter(id=ident).first()
        if grant is None:
            raise ConnectError("not_found", "Errors.UserGrant.NotFound (COMMAND-5m9sd)")
        _role_keys(grant.project_id, keys, grant.organization)
        grant.role_keys = keys
        grant.save()
    return {"changeDate": _timestamp(grant.changed)}


def delete_authorization(body: Body) -> Body:
    where = "DeleteAuthorizationRequest"
    values = fields(body, ("id",), where)
    deleted, _ = Authorization.objects.filter(id=_string(values, "id", where)).delete()
    return {"deletionDate": _now()} if deleted else {}


# ------------------------------------------------------------------------------ organizations

_ORG_QUERIES = ("name_query", "domain_query", "state_query", "id_query", "default_query")


def _org_filter(query: Any) -> Q:
    values = fields(query, _ORG_QUERIES, "SearchQuery")
    if len(values) != 1:
        raise ConnectError("invalid_argument", "a SearchQuery must set exactly one query")
    ((kind, inner),) = values.items()
    if kind == "id_query":
        return Q(id=_string(fields(inner, ("id",), kind), "id", kind))
    if kind == "name_query":
        parts = fields(inner, ("name", "method"), kind)
        name = _string(parts, "name", kind)
        match = _text_match(parts.get("method"), "TEXT_QUERY_METHOD")
        return Q(id__in=[o.id for o in Organization.objects.all() if match(o.name, name)])
    raise ConnectError("unimplemented", f"{kind} is not served by the development identity provider")


def list_organizations(body: Body) -> Body:
    values = fields(body, ("query", "sorting_column", "queries"), "ListOrganizationsRequest")
    offset, limit = _page(values, "query")
    query = Q()
    for item in values.get("queries") or []:
        query &= _org_filter(item)
    orgs = list(Organization.objects.filter(query).order_by("name"))
    return {
        "details": {"totalResult": str(len(orgs)), "timestamp": _now()},
        "sortingColumn": values.get("sorting_column") or "ORGANIZATION_FIELD_NAME_UNSPECIFIED",
        "result": [
            {
                "id": o.id,
                "details": {"sequence": "1", "changeDate": _now(), "resourceOwner": o.id},
                "state": "ORGANIZATION_STATE_ACTIVE",
                "name": o.name,
                "primaryDomain": o.domain,
            }
            for o in orgs[offset : offset + limit]
        ],
    }
