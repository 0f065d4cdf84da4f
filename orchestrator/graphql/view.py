"""``/graphql``: authenticates the bearer token, then runs the query with a service ``Context``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from graphene_django.views import GraphQLView
from graphql import ExecutionResult, GraphQLError

from orchestrator.auth import bearer_token, token_validator
from orchestrator.errors import Unauthenticated, Unavailable
from orchestrator.graphql import admission
from orchestrator.graphql.errors import to_graphql_error
from orchestrator.graphql.validation import document_too_large, validation_rules
from orchestrator.services.context import Context

VDC_HEADER = "FlexPlane-VDC-ID"
_VDC_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass
class RequestContext:
    """``info.context`` in resolvers: the HTTP request and the service context it carries."""

    request: HttpRequest
    flexplane: Context
    # (path, zones) of fields whose data is partial; answered as UNAVAILABLE errors.
    partial: list[tuple[list[str | int], list[Unavailable]]] = field(default_factory=list)


def _error_response(status: int, code: str, message: str, **headers: str) -> HttpResponse:
    response = JsonResponse({"errors": [{"message": message, "extensions": {"code": code}}]}, status=status)
    for name, value in headers.items():
        response[name] = value
    return response


def _challenge(message: str, has_token: bool) -> str:
    """RFC 6750's WWW-Authenticate: no error code when no credentials were sent at all."""
    if not has_token:
        return 'Bearer realm="flexplane"'
    quoted = message.replace("\\", "\\\\").replace('"', "'")
    return f'Bearer realm="flexplane", error="invalid_token", error_description="{quoted}"'


@method_decorator(csrf_exempt, name="dispatch")  # bearer tokens, no cookies: CSRF does not apply
class FlexPlaneGraphQLView(GraphQLView):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("graphiql", settings.FLEXPLANE_GRAPHIQL)
        kwargs.setdefault("validation_rules", validation_rules())
        super().__init__(**kwargs)
        self.context: RequestContext | None = None
        self.result: ExecutionResult | None = None
        # No query slot freed up in time (orchestrator.graphql.admission): answered 503.
        self.busy = False

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "GET" and self.graphiql and self.request_wants_html(request):
            return super().dispatch(request, *args, **kwargs)  # the GraphiQL page itself
        authorization = request.headers.get("Authorization")
        try:
            principal = token_validator().validate(bearer_token(authorization))
        except Unauthenticated as exc:
            return _error_response(
                401,
                exc.code,
                exc.message,
                **{"WWW-Authenticate": _challenge(exc.message, bool(authorization))},
            )
        vdc = request.headers.get(VDC_HEADER) or None
        if vdc is not None and not _VDC_ID.match(vdc):
            return _error_response(400, "INVALID", f"{VDC_HEADER} must be a VDC id (a lowercase slug)")
        self.context = RequestContext(request, Context(principal=principal, vdc=vdc))
        response: HttpResponse = super().dispatch(request, *args, **kwargs)
        if self.busy:
            response["Retry-After"] = "1"
        return response

    def get_context(self, request: HttpRequest) -> RequestContext | HttpRequest:
        return self.context or request

    def execute_graphql_request(
        self,
        request: HttpRequest,
        data: Any,
        query: str | None,
        variables: Any,
        operation_name: str | None,
        show_graphiql: bool = False,
    ) -> ExecutionResult | None:
        oversized = document_too_large(query)
        if oversized is not None:
            self.result = ExecutionResult(data=None, errors=[oversized])
            return self.result
        try:
            with admission.admitted(query, operation_name):
                result: ExecutionResult | None = super().execute_graphql_request(
                    request, data, query, variables, operation_name, show_graphiql
                )
        except admission.Busy as exc:
            self.busy = True
            self.result = ExecutionResult(
                data=None, errors=[GraphQLError(str(exc), extensions={"code": "UNAVAILABLE"})]
            )
            return self.result
        if result is not None and self.context is not None and self.context.partial:
            extra = [to_graphql_error(zone, path) for path, zones in self.context.partial for zone in zones]
            result.errors = [*(result.errors or []), *extra]
        self.result = result
        return result

    def get_response(self, request: HttpRequest, data: Any, show_graphiql: bool = False) -> tuple[Any, int]:
        body, status = super().get_response(request, data, show_graphiql)
        if self.busy:
            return body, 503
        if status == 200 and _refused_as_a_whole(self.result):
            status = 403
        return body, status


def _refused_as_a_whole(result: ExecutionResult | None) -> bool:
    """Whether every field asked for was refused for want of a role or membership: answered 403, as the
    rest of the API. A nullable field (each mutation) refused leaves ``{"field": null}``, a non-null
    one leaves no data at all; either way nothing was answered."""
    if result is None or not result.errors:
        return False
    if {(e.extensions or {}).get("code") for e in result.errors} != {"FORBIDDEN"}:
        return False
    return result.data is None or all(value is None for value in result.data.values())
