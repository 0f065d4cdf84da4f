"""The OAuth 2.0 device authorization grant (RFC 8628), where and as Zitadel serves it: how the ``flexplane``
CLI signs a person in from a terminal (``flexplane login``).

django-oauth-toolkit brings the grant's model and its pages; what Zitadel does and the toolkit does not is
here:

- the device authorization endpoint at Zitadel's path, ``/oauth/v2/device_authorization``, its codes
  living 5 minutes as Zitadel's (config.device_code_lifetime) (oauthlib's server has 30 minutes built in);
- the verification page at Zitadel's ``/ui/login/device``, taking the code as a person types it
  (lowercase, with a dash or spaces);
- the token endpoint's answers to a device that polls, per RFC 8628 3.5: ``authorization_pending``,
  ``slow_down`` to one polling sooner than its interval (which then grows by 5 seconds),
  ``expired_token``, ``access_denied``, and ``invalid_grant`` for a code never issued or already
  exchanged: a code is good for one token (the toolkit's own view answers 404 to the first and would give
  tokens for the second again and again);
- the discovery document listing ``device_authorization_endpoint``.

A refresh token comes with the device's tokens (oauthlib's device code grant issues one, as Zitadel does
when the client asks for ``offline_access``, which the CLI does), and the token endpoint renews them.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from oauth2_provider.models import (
    DeviceCodeResponse,
    DeviceRequest,
    create_device_grant,
    get_device_grant_model,
)
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import ConnectDiscoveryInfoView, DeviceAuthorizationView, TokenView
from oauth2_provider.views.device import DeviceGrantForm, DeviceUserCodeView
from oauthlib.common import Request
from oauthlib.oauth2.rfc8628.grant_types.device_code import DeviceCodeGrant

from devstack.identity.api.models import DevicePoll
from devstack.identity.config import current_config

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
DEVICE_AUTHORIZATION_PATH = "oauth/v2/device_authorization"
VERIFICATION_PATH = "ui/login/device"
# The device authorization response's fields (RFC 8628 3.2), as Zitadel answers them.
DEVICE_CODE_FIELDS = (
    "device_code",
    "user_code",
    "verification_uri",
    "verification_uri_complete",
    "expires_in",
    "interval",
)
# What a device's interval grows by at each slow_down (RFC 8628 3.5).
SLOW_DOWN_STEP = 5
# The grants this provider serves, as its discovery document lists them (Zitadel lists its own likewise);
# the password grant is the devstack's way to script a person's token (`python -m devstack token`).
GRANT_TYPES = [
    "authorization_code",
    "refresh_token",
    "password",
    DEVICE_CODE,
    "urn:ietf:params:oauth:grant-type:jwt-bearer",
]


class DeviceAuthorization(DeviceAuthorizationView):
    """``POST /oauth/v2/device_authorization``: a public client's ``client_id`` and ``scope`` in, a device
    code, a user code, where to enter it, how long both live and how often to poll out, as Zitadel answers
    (the toolkit's own view fails on the ``scope`` that oauthlib 4 adds to the answer)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        headers, answer, status = self.create_device_authorization_response(request)
        if status != 200:
            return JsonResponse(json.loads(answer), status=status, headers=headers)
        codes = {field: answer[field] for field in DEVICE_CODE_FIELDS if field in answer}
        codes["expires_in"] = current_config().device_code_lifetime
        scope = request.POST.get("scope", "").strip() or " ".join(oauth2_settings.DEFAULT_SCOPES)
        create_device_grant(
            DeviceRequest(client_id=request.POST["client_id"], scope=scope), DeviceCodeResponse(**codes)
        )
        return JsonResponse(codes, headers=headers)


class Token(TokenView):
    """The token endpoint: every grant through oauthlib, the device code grant too, whose code's state the
    validator reports (``ZitadelClaimsValidator.validate_device_code``: ``poll`` below)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = self.authorization_flow_token_response(request)
        return response


class Discovery(ConnectDiscoveryInfoView):
    """The OpenID discovery document, with the device authorization endpoint and the grants served."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        document = json.loads(super().get(request, *args, **kwargs).content)
        document["device_authorization_endpoint"] = f"{current_config().origin}/{DEVICE_AUTHORIZATION_PATH}"
        document["grant_types_supported"] = GRANT_TYPES
        response = JsonResponse(document)
        response["Access-Control-Allow-Origin"] = "*"
        return response


def typed_code(typed: str) -> str:
    """A user code as the provider made it, from what a person typed: ``abcd-1234 `` is ``ABCD1234``."""
    return "".join(typed.split()).replace("-", "").upper()


class UserCodeForm(DeviceGrantForm):
    def clean_user_code(self) -> str:
        self.cleaned_data["user_code"] = typed_code(self.cleaned_data["user_code"])
        code: str = super().clean_user_code()
        return code


class Verification(DeviceUserCodeView):
    """``/ui/login/device[?user_code=...]``: a signed-in person enters the code (filled in from the complete
    verification URI), then approves or denies the device on the toolkit's confirmation page."""

    form_class = UserCodeForm


def poll(client_id: str, device_code: str, request: Request) -> str | None:
    """Where the device code of ``client_id`` stands, as oauthlib's ``DeviceCodeGrant`` statuses (None: no
    such code, or one already exchanged). An approved code is used up here, its user and scopes put on
    ``request`` for the token; the grant itself stays, so the person's page can still say it was approved."""
    model = get_device_grant_model()
    grant = model.objects.filter(client_id=client_id, device_code=device_code).first()
    if grant is None:
        return None
    if grant.is_expired():
        return DeviceCodeGrant.DEVICE_CODE_EXPIRED
    if grant.status == model.DENIED:
        return DeviceCodeGrant.DEVICE_CODE_DENIED
    with transaction.atomic():  # a write transaction (settings: IMMEDIATE): one poll at a time per code
        last, first = DevicePoll.objects.get_or_create(
            device_code=device_code,
            defaults={"polled": timezone.now(), "interval": oauth2_settings.DEVICE_FLOW_INTERVAL},
        )
        if last.exchanged:
            return None
        if grant.status == model.AUTHORIZED:
            last.exchanged = True
            last.save(update_fields=["exchanged"])
            request.user = grant.user
            request.scopes = grant.scope.split()
            return DeviceCodeGrant.DEVICE_CODE_AUTHORIZED
        if not first and too_soon(last):
            return DeviceCodeGrant.DEVICE_CODE_SLOW_DOWN
    return DeviceCodeGrant.DEVICE_CODE_PENDING


def too_soon(last: DevicePoll) -> bool:
    """Whether this poll came sooner than the device's interval after its last one; if so its interval grows
    by ``SLOW_DOWN_STEP`` (for this and every later poll, as RFC 8628 3.5 says). Either way it is the last."""
    now = timezone.now()
    hurried = now - last.polled < datetime.timedelta(seconds=last.interval)
    last.polled = now
    if hurried:
        last.interval += SLOW_DOWN_STEP
    last.save(update_fields=["polled", "interval"])
    return hurried
