"""Routes: django-oauth-toolkit's OAuth 2.0 and OIDC endpoints and the login page, under the issuer's path;
the Zitadel-shaped management API at the root, where Zitadel serves it."""

from __future__ import annotations

import re

from django.contrib.auth.views import LoginView
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.generic import TemplateView
from oauth2_provider import urls as oauth2_urls

from devstack.identity import device
from devstack.identity.api import views as api
from devstack.identity.config import current_config

PREFIX = current_config().url_prefix

# The token, authorization, OIDC and metadata endpoints; not the application management pages.
oauth2_patterns = (
    oauth2_urls.base_urlpatterns + oauth2_urls.oidc_urlpatterns + oauth2_urls.metadata_urlpatterns,
    "oauth2_provider",
)

urlpatterns: list[URLPattern | URLResolver] = [
    path("", TemplateView.as_view(template_name="identity/home.html"), name="home"),
    path(f"{PREFIX}login/", LoginView.as_view(template_name="identity/login.html"), name="login"),
    # The toolkit's token endpoint and discovery document, with the device authorization grant's answers
    # (devstack/identity/device.py); its own device authorization endpoint answers as Zitadel's does.
    path(f"{PREFIX}token/", device.Token.as_view()),
    re_path(rf"^{re.escape(PREFIX)}\.well-known/openid-configuration/?$", device.Discovery.as_view()),
    path(f"{PREFIX}device-authorization/", device.DeviceAuthorization.as_view()),
    path(PREFIX, include(oauth2_patterns)),
    # Zitadel's device authorization endpoint and its login UI's page for the user code.
    path(device.DEVICE_AUTHORIZATION_PATH, device.DeviceAuthorization.as_view(), name="device-authorization"),
    path(device.VERIFICATION_PATH, device.Verification.as_view(), name="device-verification"),
    # Zitadel's management API, where Zitadel serves it: the service user's token, then Connect routes.
    path("oauth/v2/token", api.token, name="zitadel-token"),
    re_path(r"^management/v1/users/(?P<user_id>[0-9]{1,30})/machine$", api.update_machine),
    re_path(r"^(?P<service>zitadel(?:\.[a-z0-9]+)+\.[A-Za-z]+Service)/(?P<method>[A-Za-z]+)$", api.connect),
]
