"""``/graphql``: authenticates the bearer token, then runs the query with a service ``Context``.

It is also the API's error boundary: a request that is not a GraphQL request (a query that is not a
string, variables that are not an object or nest too deeply, a body that is not UTF-8 JSON) is
answered 400 in words, and any exception nothing expected, in a resolver or around one, is answered
as a generic ``INTERNAL`` error carrying a request id, its traceback logged once under that id
(``orchestrator.errors.internal_error``): never Python's own text.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
    JsonResponse,
)
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from graphene_django.views import GraphQLView, HttpError
from graphql import ExecutionResult, GraphQLError, OperationType, execute

from agentclient.identity import LOWER_DNS_LABEL
from orchestrator.auth import bearer_token, token_validator
from orchestrator.errors import FlexPlaneError, Unauthenticated, Unavailable, internal_error, new_request_id
from orchestrator.graphql import admission, documents
from orchestrator.graphql.errors import to_graphql_error
from orchestrator.graphql.execution import LeafExecutionContext
from orchestrator.graphql.validation import validation_rules
from orchestrator.services.context import Context

VDC_HEADER = "FlexPlane-VDC-ID"
# How deep a request's variables may nest (no input of the schema nests more than a few levels).
MAX_VARIABLE_DEPTH = 32
_VDC_ID = re.compile(LOWER_DNS_LABEL)


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
    execution_context_class = LeafExecutionContext

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("graphiql", settings.FLEXPLANE_GRAPHIQL)
        kwargs.setdefault("validation_rules", validation_rules())
        super().__init__(**kwargs)
        self.context: RequestContext | None = None
        self.result: ExecutionResult | None = None
        # No query slot freed up in time (orchestrator.graphql.admission): answered 503.
        self.busy = False
        # The id the request's unexpected exceptions are logged under (made at the first one).
        self.request_id: str | None = None

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return self._dispatch(request, *args, **kwargs)
        except Exception as exc:  # the boundary: whatever nothing expected, answered in words
            internal = internal_error(exc, f"{request.method} {request.path}", self.request_id)
            extensions = {"code": internal.code, "requestId": internal.request_id}
            return JsonResponse(
                {"errors": [{"message": internal.message, "extensions": extensions}]}, status=500
            )

    def _dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
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
        if vdc is not None and not _VDC_ID.fullmatch(vdc):
            return _error_response(400, "INVALID", f"{VDC_HEADER} must be a VDC id (a lowercase slug)")
        self.context = RequestContext(request, Context(principal=principal, vdc=vdc))
        response: HttpResponse = super().dispatch(request, *args, **kwargs)
        if self.busy:
            response["Retry-After"] = "1"
        return response

    def json_encode(self, request: HttpRequest, d: Any, pretty: bool = False) -> str | bytes:
        """The answer's JSON: orjson's (UTF-8, about ten times faster than the standard library's on a page
        of 100 VMs), or graphene's own indented form when asked for ``pretty`` (GraphiQL, ``?pretty``)
        and for what orjson cannot write (an integer beyond 64 bits, in a ``BigInt``)."""
        if not (pretty or self.pretty or request.GET.get("pretty")):
            try:
                return orjson.dumps(d)
            except orjson.JSONEncodeError:
                pass
        encoded: str = super().json_encode(request, d, pretty)
        return encoded

    def get_context(self, request: HttpRequest) -> RequestContext | HttpRequest:
        return self.context or request

    def parse_body(self, request: HttpRequest) -> Any:
        """The body as graphene reads it, refused in words (never Python's) when it is not UTF-8 JSON
        or nests deeper than any GraphQL request does."""
        if self.get_content_type(request) in ("application/json", "application/graphql"):
            try:
                request.body.decode("utf-8")
            except UnicodeDecodeError:
                raise HttpError(HttpResponseBadRequest("The body is not UTF-8 text.")) from None
        try:
            return super().parse_body(request)
        except RecursionError:
            raise HttpError(HttpResponseBadRequest("The body nests too deeply.")) from None

    @staticmethod
    def get_graphql_params(request: HttpRequest, data: Any) -> tuple[Any, Any, Any, Any]:
        """``query``, ``variables``, ``operationName`` and ``id``, each of the type GraphQL says."""
        query, variables, operation_name, ident = GraphQLView.get_graphql_params(request, data)
        if query is not None and not isinstance(query, str):
            raise HttpError(HttpResponseBadRequest("'query' must be a string."))
        if operation_name is not None and not isinstance(operation_name, str):
            raise HttpError(HttpResponseBadRequest("'operationName' must be a string."))
        if variables in ("", None):
            variables = None
        elif not isinstance(variables, dict):
            raise HttpError(HttpResponseBadRequest("'variables' must be an object."))
        elif _depth(variables) > MAX_VARIABLE_DEPTH:
            raise HttpError(
                HttpResponseBadRequest(f"'variables' nest deeper than {MAX_VARIABLE_DEPTH} levels.")
            )
        return query, variables, operation_name, ident

    def execute_graphql_request(
        self,
        request: HttpRequest,
        data: Any,
        query: str | None,
        variables: Any,
        operation_name: str | None,
        show_graphiql: bool = False,
    ) -> ExecutionResult | None:
        """graphene's steps (refuse a mutation over GET, validate, run), on the document parsed and
        validated once (``orchestrator.graphql.documents``), under a query slot."""
        if not query:
            if show_graphiql:
                return None
            raise HttpError(HttpResponseBadRequest("Must provide query string."))
        document = documents.parsed(query)
        if document.ast is None:
            assert document.error is not None
            self.result = ExecutionResult(data=None, errors=[document.error])
            return self.result
        operation = document.operation(operation_name)
        if request.method == "GET" and operation is not None and operation.operation != OperationType.QUERY:
            if show_graphiql:
                return None
            raise HttpError(
                HttpResponseNotAllowed(
                    ["POST"], f"Can only perform a {operation.operation.value} operation from a POST request."
                )
            )
        schema = self.schema.graphql_schema
        invalid = documents.validation_errors(schema, query, document.ast, self.validation_rules)
        if invalid:
            self.result = ExecutionResult(data=None, errors=list(invalid))
            return self.result
        try:
            with admission.admitted(document.is_query(operation_name)):
                result = execute(
                    schema,
                    document.ast,
                    root_value=self.get_root_value(request),
                    context_value=self.get_context(request),
                    variable_values=variables,
                    operation_name=operation_name,
                    middleware=self.get_middleware(request),
                    execution_context_class=self.execution_context_class,
                    is_awaitable=synchronous,
                )
        except admission.Busy as exc:
            self.busy = True
            self.result = ExecutionResult(
                data=None, errors=[GraphQLError(str(exc), extensions={"code": "UNAVAILABLE"})]
            )
            return self.result
        except Exception as exc:  # as graphene: the boundary below words it (INTERNAL, logged)
            result = ExecutionResult(errors=[exc])  # type: ignore[list-item]
        assert not isinstance(result, Awaitable), "the schema's resolvers are synchronous (see synchronous)"
        if result.errors:
            result.errors = [self._expected(error) for error in result.errors]
        if self.context is not None and self.context.partial:
            extra = [to_graphql_error(zone, path) for path, zones in self.context.partial for zone in zones]
            result.errors = [*(result.errors or []), *extra]
        self.result = result
        return result

    def _expected(self, error: Exception) -> GraphQLError:
        """The error as the client may see it: GraphQL's own errors and domain errors as they are; any
        other exception (raised in a resolver, or around the execution) as ``INTERNAL``, logged."""
        if isinstance(error, GraphQLError):
            cause = error.original_error
            if cause is None or isinstance(cause, FlexPlaneError | GraphQLError) or not error.path:
                return error
        else:
            cause = error
        self.request_id = self.request_id or new_request_id()
        where = ".".join(str(step) for step in getattr(error, "path", None) or []) or "the execution"
        internal = internal_error(cause, where, self.request_id)
        return GraphQLError(
            internal.message,
            nodes=getattr(error, "nodes", None),
            path=getattr(error, "path", None),
            extensions={"code": internal.code, "requestId": internal.request_id},
        )

    def get_response(self, request: HttpRequest, data: Any, show_graphiql: bool = False) -> tuple[Any, int]:
        body, status = super().get_response(request, data, show_graphiql)
        if self.busy:
            return body, 503
        if status == 400 and _failed_as_a_whole(self.result):
            status = 500  # graphene says 400 for any error without a path: not the client's fault here
        if status == 200 and _refused_as_a_whole(self.result):
            status = 403
        return body, status


def synchronous(value: Any) -> bool:
    """graphql-core asks of every field's value whether it is awaitable (about a tenth of a page's
    execution): the schema's resolvers are synchronous, so none is."""
    return False


def _failed_as_a_whole(result: ExecutionResult | None) -> bool:
    """Whether the request failed on an exception nothing expected, outside any field."""
    return result is not None and any(
        not error.path and (error.extensions or {}).get("code") == "INTERNAL" for error in result.errors or []
    )


def _refused_as_a_whole(result: ExecutionResult | None) -> bool:
    """Whether every field asked for was refused for want of a role or membership: answered 403, as the
    rest of the API. A nullable field (each mutation) refused leaves ``{"field": null}``, a non-null
    one leaves no data at all; either way nothing was answered."""
    if result is None or not result.errors:
        return False
    if {(e.extensions or {}).get("code") for e in result.errors} != {"FORBIDDEN"}:
        return False
    return result.data is None or all(value is None for value in result.data.values())


def _depth(value: Any) -> int:
    """How deep a decoded JSON value nests (iteratively: a hostile one may nest deeper than the stack)."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > MAX_VARIABLE_DEPTH:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return deepest
