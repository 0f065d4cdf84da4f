"""Django settings of the development identity provider (never of flex.plane itself).

``python -m devstack.identity serve`` puts its configuration in the environment (see
:mod:`devstack.identity.config`) and creates the secrets in the data directory before Django
reads this module.
"""

from __future__ import annotations

import logging
from pathlib import Path

from devstack.identity.claims import ROLES_SCOPES, project_audience_scope
from devstack.identity.config import current_config

CONFIG = current_config()

SECRET_KEY = CONFIG.secret_key_path.read_text(encoding="ascii").strip()
DEBUG = False
ALLOWED_HOSTS = CONFIG.allowed_hosts

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
    "devstack.identity.api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "devstack.identity.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,  # django-oauth-toolkit's own pages (errors, logout confirmation)
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ],
        },
    },
]

# The tables of Django's apps and django-oauth-toolkit's are made straight from their models (`migrate
# --run-syncdb`) rather than by replaying their 39 migrations: 0.4 s instead of 1.6-2 s at every start, and
# the tests start this provider often. Only a data dir kept across an upgrade of Django or the toolkit
# (make dev's) could miss a column a newer version added: remove .devstack/identity then. This app's own
# models keep their migrations.
MIGRATION_MODULES = {"auth": None, "contenttypes": None, "sessions": None, "oauth2_provider": None}

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": CONFIG.database_path,
        "OPTIONS": {
            # The server is threaded: let writers queue instead of failing with "database is locked".
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []  # development passwords are the usernames
PASSWORD_HASHERS = ["devstack.identity.hashers.DevelopmentPasswordHasher"]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"

# The portal may run on the same host name on another port, and cookies ignore ports: give
# this provider's cookies names of their own.
SESSION_COOKIE_NAME = "flexplane_identity_session"
CSRF_COOKIE_NAME = "flexplane_identity_csrftoken"
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = CONFIG.issuer.startswith("https://")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"

# The device authorization grant (RFC 8628, devstack/identity/device.py): where the person enters the code
# is Zitadel's login UI's page, at the origin (not under the issuer's path).
DEVICE_VERIFICATION_URI = f"{CONFIG.origin}/ui/login/device"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": CONFIG.issuer,
    "OIDC_RSA_PRIVATE_KEY": CONFIG.signing_key_path.read_text(encoding="ascii"),
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    # Log out without a confirmation page when the RP names the signed-in user's ID token.
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,  # S256 only
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,  # keep only checksums of issued tokens
    "ACCESS_TOKEN_GENERATOR": "devstack.identity.oauth.generate_access_token",
    # Without this, oauthlib would make refresh tokens with the access token generator too.
    "REFRESH_TOKEN_GENERATOR": "oauthlib.oauth2.rfc6749.tokens.random_token_generator",
    "OAUTH2_VALIDATOR_CLASS": "devstack.identity.oauth.ZitadelClaimsValidator",
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "ID_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 24 * 3600,
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Name and username",
        "email": "Email address",
        "offline_access": "Refresh tokens",
        **dict.fromkeys(ROLES_SCOPES, "Roles in the project"),
        project_audience_scope(CONFIG.project_id): "The project as an audience",
    },
    "DEFAULT_SCOPES": ["openid", "profile", "email"],
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "ALLOWED_SCHEMES": ["http", "https"],
    "OAUTH_DEVICE_VERIFICATION_URI": DEVICE_VERIFICATION_URI,
    "OAUTH_DEVICE_VERIFICATION_URI_COMPLETE": DEVICE_VERIFICATION_URI + "?user_code={user_code}",
    "DEVICE_FLOW_INTERVAL": CONFIG.device_poll_interval,
    # The validator finds the device's user itself (ZitadelClaimsValidator.validate_device_code): the
    # toolkit's own hook looks the code up before anything checked it, and fails on an unknown one.
    "OAUTH_PRE_TOKEN_VALIDATION": [],
}


def _not_about_the_password_grant(record: logging.LogRecord) -> bool:
    # The password grant is this provider's deliberate way to script tokens in development;
    # django-oauth-toolkit would log an RFC 9700 warning for every such token.
    return "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT" not in record.getMessage()


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "password_grant_is_intended": {
            "()": "django.utils.log.CallbackFilter",
            "callback": _not_about_the_password_grant,
        },
    },
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["password_grant_is_intended"],
        },
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "devstack.identity": {"level": "INFO"},
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
