"""Settings shared by every environment, read from ``FLEXPLANE_*`` environment variables.

flex.plane keeps no state of its own: there is no database (``DATABASES = {}``), the browser's
login lives in a signed cookie, and everything else is read live from Proxmox (through the
agents), the management cluster and the identity provider.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env(name: str, default: str | None = None) -> str:
    """The value of ``FLEXPLANE_<name>``; a missing variable without a default is a configuration error."""
    value = os.environ.get(f"FLEXPLANE_{name}", default)
    if value is None:
        raise ImproperlyConfigured(f"FLEXPLANE_{name} is not set")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


def env_bool(name: str, default: bool = False) -> bool:
    return env(name, "1" if default else "0").strip().lower() in {"1", "true", "yes", "on"}


def env_float(name: str, default: float) -> float:
    raw = env(name, str(default))
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"FLEXPLANE_{name} must be a number, not {raw!r}") from None


SECRET_KEY = env("SECRET_KEY", "dev-only-insecure-key-change-me")
DEBUG = env_bool("DEBUG")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "graphene_django",
    "django_htmx",
    "orchestrator",
    "portal",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "flexplane.urls"
ASGI_APPLICATION = "flexplane.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The stateless rule: no database, not even SQLite.
DATABASES: dict[str, dict[str, str]] = {}
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
MESSAGE_STORAGE = "django.contrib.messages.storage.cookie.CookieStorage"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / ".scratch" / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- flex.plane -----------------------------------------------------------------------------

# The management cluster: a kubeconfig file, else the in-cluster service account.
FLEXPLANE_KUBECONFIG = env("KUBECONFIG", "")
FLEXPLANE_NAMESPACE = env("NAMESPACE", "flexplane")
FLEXPLANE_KUBE_TIMEOUT = env_float("KUBE_TIMEOUT", 5.0)

# The identity provider (Zitadel in production): bearer tokens are checked against its JWKS.
FLEXPLANE_OIDC_ISSUER = env("OIDC_ISSUER", "")
FLEXPLANE_OIDC_AUDIENCE = env("OIDC_AUDIENCE", "flexplane")
# Zitadel's project id, for the claim urn:zitadel:iam:org:project:{id}:roles.
FLEXPLANE_OIDC_PROJECT_ID = env("OIDC_PROJECT_ID", FLEXPLANE_OIDC_AUDIENCE)
FLEXPLANE_OIDC_ALGORITHMS = env_list("OIDC_ALGORITHMS", "RS256,RS384,RS512,ES256,ES384,PS256")
FLEXPLANE_OIDC_TIMEOUT = env_float("OIDC_TIMEOUT", 5.0)
# How long the issuer's discovery document and JWKS are kept in memory (seconds).
FLEXPLANE_JWKS_TTL = env_float("JWKS_TTL", 300.0)
FLEXPLANE_OIDC_LEEWAY = env_float("OIDC_LEEWAY", 30.0)

# The agents: the platform CA and this orchestrator's client certificate.
FLEXPLANE_AGENT_CA = env("AGENT_CA", "")
FLEXPLANE_AGENT_CERT = env("AGENT_CERT", "")
FLEXPLANE_AGENT_KEY = env("AGENT_KEY", "")
# The deadline of one agent call, and of a whole fan-out across zones (seconds).
FLEXPLANE_AGENT_TIMEOUT = env_float("AGENT_TIMEOUT", 4.0)
FLEXPLANE_ZONE_DEADLINE = env_float("ZONE_DEADLINE", 8.0)

# Image sources exempt from the address checks (loopback, private, link-local targets refused
# otherwise): hosts as written in URLs, or host:port, comma-separated.
FLEXPLANE_IMAGE_ALLOW_HOSTS = env_list("IMAGE_ALLOW_HOSTS", "")

# GraphQL
FLEXPLANE_GRAPHIQL = env_bool("GRAPHIQL", DEBUG)
FLEXPLANE_GRAPHQL_INTROSPECTION = env_bool("GRAPHQL_INTROSPECTION", True)
FLEXPLANE_GRAPHQL_MAX_DEPTH = int(env("GRAPHQL_MAX_DEPTH", "10"))
FLEXPLANE_GRAPHQL_MAX_ALIASES = int(env("GRAPHQL_MAX_ALIASES", "30"))
FLEXPLANE_PAGE_SIZE_MAX = int(env("PAGE_SIZE_MAX", "500"))

GRAPHENE = {"SCHEMA": "orchestrator.graphql.schema.schema"}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {"django.server": {"level": "WARNING"}},
}
