"""The endpoints: Zitadel's JWT profile grant at ``/oauth/v2/token`` and the Connect routes of the API.

Requests are checked as Zitadel's Connect server checks them: POST only, ``Connect-Protocol-Version:
1``, a JSON object whose fields the method knows (in protobuf's JSON names, lowerCamelCase, or their
original snake_case), a valid bearer token of a service user with the project audience. Failures are
Connect errors: ``{"code": "<code>", "message": "..."}`` with the status Connect maps the code to.
"""

from __future__ import annotations

import datetime
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any

import jwt
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from devstack.identity import device
from devstack.identity.api import handlers, machines
from devstack.identity.api.errors import ConnectError
from devstack.identity.api.models import Account, ApiToken, MachineKey, checksum
from devstack.identity.claims import project_audience_scope
from devstack.identity.config import current_config

logger = logging.getLogger(__name__)

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
API_AUDIENCE_SCOPE = "urn:zitadel:iam:org:project:id:zitadel:aud"
TOKEN_LIFETIME = 43200  # Zitadel's default for a service user's access token (12 hours)
_ASSERTION_MAX_AGE = 3600

Handler = Callable[[dict[str, Any]], dict[str, Any]]

ROUTES: dict[str, Handler] = {
    "zitadel.user.v2.UserService/ListUsers": handlers.list_users,
    "zitadel.user.v2.UserService/CreateUser": machines.create_user,
    "zitadel.user.v2.UserService/AddKey": machines.add_key,
    "zitadel.user.v2.UserService/RemoveKey": machines.remove_key,
    "zitadel.user.v2.UserService/DeleteUser": machines.delete_user,
    "zitadel.project.v2.ProjectService/AddProjectRole": handlers.add_project_role,
    "zitadel.project.v2.ProjectService/RemoveProjectRole": handlers.remove_project_role,
    "zitadel.project.v2.ProjectService/GetProject": handlers.get_project,
    "zitadel.project.v2.ProjectService/CreateProjectGrant": handlers.create_project_grant,
    "zitadel.project.v2.ProjectService/UpdateProjectGrant": handlers.update_project_grant,
    "zitadel.project.v2.ProjectService/DeleteProjectGrant": handlers.delete_project_grant,
    "zitadel.authorization.v2.AuthorizationService/ListAuthorizations": handlers.list_authorizations,
    "zitadel.authorization.v2.AuthorizationService/CreateAuthorization": handlers.create_authorization,
    "zitadel.authorization.v2.AuthorizationService/UpdateAuthorization": handlers.update_authorization,
    "zitadel.authorization.v2.AuthorizationService/DeleteAuthorization": handlers.delete_authorization,
    "zitadel.org.v2.OrganizationService/ListOrganizations": handlers.list_organizations,
}


def _oauth_error(error: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


def _audiences() -> set[str]:
    config = current_config()
    origin = (
        config.issuer.removesuffix("/" + config.url_prefix.rstrip("/"))
        if config.url_prefix
        else config.issuer
    )
    return {origin, config.issuer}


@csrf_exempt
def token(request: HttpRequest) -> HttpResponse:
    """RFC 7523's JWT bearer grant, as Zitadel serves it for a service user's key."""
    if request.method != "POST":
        return _oauth_error("invalid_request", "use POST", 405)
    if request.POST.get("grant_type") != JWT_BEARER:
        # One token endpoint for every grant, as Zitadel's: the device code and refresh token grants (the
        # CLI's login) are the OAuth provider's.
        response: HttpResponse = device.Token.as_view()(request)
        return response
    assertion = request.POST.get("assertion", "")
    try:
        kid = jwt.get_unverified_header(assertion).get("kid")
        key = MachineKey.objects.filter(key_id=str(kid)).first()
        if key is None:
            return _oauth_error("invalid_grant", "unknown key")
        claims = jwt.decode(
            assertion,
            key.public_key,
            algorithms=["RS256"],
            audience=sorted(_audiences()),
            options={"require": ["iss", "sub", "aud", "iat", "exp"]},
        )
    except jwt.InvalidTokenError as exc:
        return _oauth_error("invalid_grant", f"assertion invalid: {exc}")
    if claims["iss"] != key.user_id or claims["sub"] != key.user_id:
        return _oauth_error("invalid_grant", "assertion's iss and sub must be the key's user")
    if int(claims["iat"]) < int(timezone.now().timestamp()) - _ASSERTION_MAX_AGE:
        return _oauth_error("invalid_grant", "assertion too old")
    if key.expires is not None and key.expires <= timezone.now():
        return _oauth_error("invalid_grant", "the key has expired")
    scopes = request.POST.get("scope", "").split()
    account = (
        Account.objects.filter(zitadel_id=key.user_id, machine=True, jwt_access_tokens=True)
        .select_related("user")
        .first()
    )
    if account is not None and project_audience_scope(current_config().project_id) in scopes:
        # A machine user whose access token type is JWT, asking for flex.plane's audience: a JWT.
        jwt_token = machines.access_token(account, scopes, TOKEN_LIFETIME)
        return JsonResponse({"access_token": jwt_token, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME})
    value = secrets.token_urlsafe(32)
    ApiToken.objects.create(
        checksum=checksum(value),
        user_id=key.user_id,
        scopes=scopes,
        expires=timezone.now() + datetime.timedelta(seconds=TOKEN_LIFETIME),
    )
    return JsonResponse({"access_token": value, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME})


def _authenticate(request: HttpRequest) -> None:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value:
        raise ConnectError("unauthenticated", "auth header missing")
    found = ApiToken.objects.filter(checksum=checksum(value.strip()), expires__gt=timezone.now()).first()
    if found is None:
        raise ConnectError("unauthenticated", "token invalid or expired")
    if API_AUDIENCE_SCOPE not in found.scopes:
        raise ConnectError("unauthenticated", "token has no audience of the API (scope missing)")


@csrf_exempt
def connect(request: HttpRequest, service: str, method: str) -> HttpResponse:
    """One unary Connect call, JSON-encoded."""
    try:
        handler = ROUTES.get(f"{service}/{method}")
        if handler is None:
            raise ConnectError("unimplemented", f"{service}/{method} is not served")
        if request.method != "POST":
            raise ConnectError("unimplemented", "unary calls are POST")
        if request.headers.get("Connect-Protocol-Version") != "1":
            raise ConnectError(
                "invalid_argument", "missing required header: set Connect-Protocol-Version to 1"
            )
        if request.content_type != "application/json":
            raise ConnectError("unimplemented", f"content type {request.content_type!r} is not served")
        _authenticate(request)
        try:
            body = json.loads(request.body or b"{}")
        except ValueError as exc:
            raise ConnectError("invalid_argument", "the body is not JSON") from exc
        if not isinstance(body, dict):
            raise ConnectError("invalid_argument", "the body must be a JSON object")
        answer = handler(body)
    except ConnectError as error:
        return error.response()
    return JsonResponse(answer)


@csrf_exempt
def update_machine(request: HttpRequest, user_id: str) -> HttpResponse:
    """``PUT /management/v1/users/{id}/machine`` (grpc-gateway's JSON): a machine user's name, description
    and access token type; Zitadel's v2 API creates machine users with opaque tokens and has no other way
    to ask for JWTs."""
    if request.method != "PUT":
        return JsonResponse({"code": 12, "message": "Method Not Allowed"}, status=405)
    try:
        _authenticate(request)
        body = json.loads(request.body or b"{}")
        if not isinstance(body, dict):
            raise ConnectError("invalid_argument", "the body must be a JSON object")
        answer = machines.update_machine(user_id, body)
    except ValueError:
        return JsonResponse({"code": 3, "message": "the body is not JSON"}, status=400)
    except ConnectError as error:
        return error.gateway_response()
    return JsonResponse(answer)
