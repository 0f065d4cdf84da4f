"""Settings shared by every environment, read from ``FLEXPLANE_*`` environment variables.

flex.plane keeps no state of its own: there is no database (``DATABASES = {}``), the browser's
login lives in a signed cookie, and everything else is read live from Proxmox (through the
agents), the management cluster and the identity provider.
"""

from __future__ import annotations

import os
import re
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


def env_count(name: str, default: int) -> int:
    """A whole number of at least 1."""
    raw = env(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ImproperlyConfigured(f"FLEXPLANE_{name} must be a whole number of at least 1, not {raw!r}")
    return value


# SECRET_KEY signs the portal's sessions and the task ids: it has no default here. The production
# settings require FLEXPLANE_SECRET_KEY; the development settings make one per process unless given.
DEBUG = env_bool("DEBUG")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
# Serve only connections that arrived on a loopback address (flexplane.loopback): the development settings.
FLEXPLANE_LOOPBACK_ONLY = False

INSTALLED_APPS = [
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
    # The portal's CSS: Tailwind built with npm (portal/theme/static_src, `make install`).
    "tailwind",
    "portal.theme",
]
TAILWIND_APP_NAME = "portal.theme"

MIDDLEWARE = [
    # Counts and times every request (orchestrator.metrics_http): first, so the others' time counts too.
    "orchestrator.metrics_http.MetricsMiddleware",
    # Each request's id, for its log lines, its audit record and its INTERNAL errors (flexplane.logs).
    "flexplane.logs.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "portal.security.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # request.user from the signed session (the portal's user has no database row).
    "portal.auth.SessionUserMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Once the ID token's time is up, ask the identity provider again (after htmx: it answers htmx apart).
    "portal.oidc.SessionRefresh",
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
                "portal.context.navigation",
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
# Tenant Kubernetes clusters live in the VDCs' namespaces (vdc-<vdc>), made with a VDC's first cluster:
# the ClusterRole the orchestrator's service account ("<namespace>/<name>") is bound to there, to read its
# clusters' CA Secrets ("": bind nothing, as in the devstack, whose cluster has no RBAC).
FLEXPLANE_VDC_ROLE = env("VDC_ROLE", "")
FLEXPLANE_SERVICE_ACCOUNT = env("SERVICE_ACCOUNT", "")

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
# Zitadel's management API (orchestrator.sources.zitadel): the service user's JSON key file (mounted
# from a Secret); without one, access management answers UNAVAILABLE and VDC roles are not kept.
FLEXPLANE_ZITADEL_KEY_FILE = env("ZITADEL_KEY_FILE", "")
# The API's base URL (default: the issuer's origin) and the assertion's audience (default: that URL).
FLEXPLANE_ZITADEL_URL = env("ZITADEL_URL", re.sub(r"^(https?://[^/]+).*\Z", r"\1", FLEXPLANE_OIDC_ISSUER))
FLEXPLANE_ZITADEL_AUDIENCE = env("ZITADEL_AUDIENCE", "")
FLEXPLANE_ZITADEL_TIMEOUT = env_float("ZITADEL_TIMEOUT", 5.0)

# --- the portal: login (OIDC code flow with PKCE, mozilla-django-oidc), session, security headers ---
# The user lives in the signed session, built from the claims (portal.models, portal.auth); the
# issuer's endpoints come from its discovery document (portal.oidc).
AUTH_USER_MODEL = "portal.PortalUser"
AUTHENTICATION_BACKENDS = ["portal.oidc.ClaimsBackend"]
LOGIN_URL = "oidc_authentication_init"
LOGIN_REDIRECT_URL = LOGOUT_REDIRECT_URL = LOGIN_REDIRECT_URL_FAILURE = "/"
OIDC_RP_CLIENT_ID = env("OIDC_CLIENT_ID", "flexplane-portal")
OIDC_RP_CLIENT_SECRET = env("OIDC_CLIENT_SECRET", "")
OIDC_RP_SIGN_ALGO = env("OIDC_SIGN_ALGO", "RS256")
# Zitadel puts the project's roles in the tokens and userinfo when asked for them (the dev provider too).
OIDC_RP_SCOPES = env(
    "OIDC_SCOPES",
    "openid profile email urn:zitadel:iam:org:projects:roles "
    f"urn:zitadel:iam:org:project:id:{FLEXPLANE_OIDC_PROJECT_ID}:aud",
)
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_STORE_ID_TOKEN = True  # the end-session endpoint's id_token_hint
OIDC_TIMEOUT = FLEXPLANE_OIDC_TIMEOUT
OIDC_OP_LOGOUT_URL_METHOD = "portal.oidc.end_session_url"
# The portal session's short life (seconds): past it, no request is served on the session before the
# identity provider renewed it, silently (prompt=none) while the provider's own session lasts; a logout
# ends that session, so a copied cookie is good for this long at most (portal.oidc.SessionRefresh).
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = int(env_float("OIDC_RENEW_SECONDS", 900))
# The portal's admin actions (unsafe requests under /admin/) need a renewal younger than this (seconds);
# an admin page renews the session when it is older.
FLEXPLANE_ADMIN_RENEW_SECONDS = env_float("ADMIN_RENEW_SECONDS", 300.0)
# The browser's session (a signed cookie) ends after this long (seconds); then the user signs in again.
SESSION_COOKIE_AGE = int(env_float("SESSION_AGE", 8 * 3600))
# The orchestrator's own endpoints authenticate by bearer token, join token or certificate, never by
# the portal's session: they wait for no renewal of it.
OIDC_EXEMPT_URLS = ["graphql", "healthz", "readyz", re.compile(r"^/(?:enroll|agent)/")]
CSRF_FAILURE_VIEW = "portal.errors.csrf_failure"
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Paths that answer with their own pages and keep no portal policy (GraphiQL loads its own scripts).
FLEXPLANE_CSP_EXEMPT = env_list("CSP_EXEMPT", "/graphql")
# The JOSE "typ" an issuer that types its tokens gives access tokens (RFC 9068: at+jwt); when set, any
# other JWT of the issuer (an ID token, say) is refused as a bearer token. Empty for an issuer that
# marks no types, or marks every token alike ("JWT"), where the type tells nothing.
FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE = env("OIDC_ACCESS_TOKEN_TYPE", "")

# The agents: the platform CA and this orchestrator's client certificate.
FLEXPLANE_AGENT_CA = env("AGENT_CA", "")
FLEXPLANE_AGENT_CERT = env("AGENT_CERT", "")
FLEXPLANE_AGENT_KEY = env("AGENT_KEY", "")
# The deadline of one agent call, and of a whole fan-out across zones (seconds).
FLEXPLANE_AGENT_TIMEOUT = env_float("AGENT_TIMEOUT", 4.0)
FLEXPLANE_ZONE_DEADLINE = env_float("ZONE_DEADLINE", 8.0)
# Calls in flight to one agent's Proxmox at once, from this replica; more wait within their deadline.
FLEXPLANE_AGENT_MAX_IN_FLIGHT = env_count("AGENT_MAX_IN_FLIGHT", 6)

# --- host enrollment and certificate renewal (orchestrator.services.enrollment) ---
# The platform CA (a kubernetes.io/tls Secret of the platform namespace, read live): it signs
# the agents' certificates.
FLEXPLANE_AGENT_CA_SECRET = env("AGENT_CA_SECRET", "flexplane-agent-ca")
# How long a join token may be used (seconds), and how long an agent's certificate lives (seconds).
FLEXPLANE_JOIN_TOKEN_TTL = env_float("JOIN_TOKEN_TTL", 3600.0)
FLEXPLANE_AGENT_CERT_LIFETIME = env_float("AGENT_CERT_LIFETIME", 30 * 86400.0)
# The HTTPS URL nodes reach this orchestrator at (bootstrap and renewal); "": the request's own origin.
FLEXPLANE_ENROLLMENT_URL = env("ENROLLMENT_URL", "")
# The client certificate common names an enrolled agent serves: the orchestrator and the Cluster API
# infrastructure provider (providers/).
FLEXPLANE_AGENT_ALLOWED_CLIENTS = env_list("AGENT_ALLOWED_CLIENTS", "flexplane-orchestrator,flexplane-capi")
# How far a renewal request's timestamp may be from the orchestrator's clock (seconds).
FLEXPLANE_RENEWAL_MAX_SKEW = env_float("RENEWAL_MAX_SKEW", 300.0)

# --- the WireGuard mesh (orchestrator.services.mesh, orchestrator.mesh) ---
# The range nodes' mesh addresses come from (the hub takes its first address); "": no mesh, the
# orchestrator dials each agent's own endpoint.
FLEXPLANE_MESH_RANGE = env("MESH_RANGE", "")
# The hub's public UDP address:port, as nodes dial it (outbound).
FLEXPLANE_MESH_HUB_ENDPOINT = env("MESH_HUB_ENDPOINT", "")
# The Secret holding the hub's WireGuard key (the mesh control server makes it on first start).
FLEXPLANE_MESH_HUB_SECRET = env("MESH_HUB_SECRET", "flexplane-mesh-hub")
# Seconds between a node's keepalives to the hub: NAT mappings stay open, a restarted hub is found again.
FLEXPLANE_MESH_KEEPALIVE = int(env_float("MESH_KEEPALIVE", 15))
# The hub's CONNECT proxy (http://host:port, `mesh_hub --proxy-listen`): the agent pool dials mesh
# addresses through it, mTLS end to end; "": mesh addresses are dialled directly (a route to the hub).
FLEXPLANE_MESH_PROXY = env("MESH_PROXY", "")

# --- agent releases (orchestrator.releases: the channel agents update from) ---
# The folder of signed releases (`flexplane-agent release build` output), read-only: in a real
# deployment a volume. "": no channel is served.
FLEXPLANE_AGENT_RELEASES_DIR = env("AGENT_RELEASES_DIR", "")
# The Ed25519 public key the releases are signed for (PEM, inline or a file's path, read on every
# enrollment): nodes enroll with it and the channel's URL, and update themselves. "": enrolled
# nodes get no self-update (the bootstrap says so).
FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY = env("AGENT_RELEASE_PUBLIC_KEY", "")
# The OCI repository agent releases are pushed to (`flexplane-agent release push`), host[:port]/path:
# when set, the channel lists its tags and names digests there, agents pull from it, and the folder
# above is not read. Its read-only account, handed to nodes at enrollment and renewal, and the CA of
# its certificate (a PEM file's path; "": the system's).
FLEXPLANE_AGENT_REGISTRY = env("AGENT_REGISTRY", "")
FLEXPLANE_AGENT_REGISTRY_USERNAME = env("AGENT_REGISTRY_USERNAME", "")
FLEXPLANE_AGENT_REGISTRY_PASSWORD = env("AGENT_REGISTRY_PASSWORD", "")
FLEXPLANE_AGENT_REGISTRY_CA = env("AGENT_REGISTRY_CA", "")

# Image sources exempt from the address checks (loopback, private, link-local targets refused
# otherwise): hosts as written in URLs, or host:port, comma-separated.
FLEXPLANE_IMAGE_ALLOW_HOSTS = env_list("IMAGE_ALLOW_HOSTS", "")

# Where tenant clusters' control planes answer (the management cluster's load balancer addresses, or the
# SNI router's), IPv4 CIDRs or addresses: a cluster's workers need egress to them (empty: not known).
FLEXPLANE_CONTROL_PLANE_ADDRESSES = env_list("CONTROL_PLANE_ADDRESSES", "")
# The port of the shared control-plane address (the providers' SNI router, sni.port of their chart): set,
# new clusters share it by default (controlPlaneEndpoint "shared"); empty, each cluster gets a load
# balancer of its own and "shared" is refused.
FLEXPLANE_CONTROL_PLANE_SHARED_PORT = env("CONTROL_PLANE_SHARED_PORT", "")

# Requests one process runs at once (flexplane.handler): each runs its middleware and view in a thread
# of a pool this large; the others wait for a thread. A thread is made only when none is idle, so the
# pool grows to what the load needs; the bound keeps a flood of requests from making a thread each.
# GraphQL queries wait for a slot of their own in their thread (below): keep this well above it.
FLEXPLANE_REQUEST_THREADS = env_count("REQUEST_THREADS", 64)

# GraphQL
FLEXPLANE_GRAPHIQL = env_bool("GRAPHIQL", DEBUG)
# Queries one process runs at once (the rest wait their turn, so that none misses its deadlines under a
# burst), and how long one waits before it is answered 503: keep it below the HTTP timeouts in front
# (the ingress's, a client's), so that a client hears "busy" rather than nothing
# (orchestrator.graphql.admission).
FLEXPLANE_MAX_CONCURRENT_QUERIES = env_count("MAX_CONCURRENT_QUERIES", 8)
FLEXPLANE_QUERY_QUEUE_TIMEOUT = env_float("QUERY_QUEUE_TIMEOUT", 60.0)
FLEXPLANE_GRAPHQL_INTROSPECTION = env_bool("GRAPHQL_INTROSPECTION", True)
FLEXPLANE_GRAPHQL_MAX_DEPTH = int(env("GRAPHQL_MAX_DEPTH", "10"))
FLEXPLANE_GRAPHQL_MAX_ALIASES = int(env("GRAPHQL_MAX_ALIASES", "30"))
# Documents are refused past this many tokens, before validation (the introspection query has 163).
FLEXPLANE_GRAPHQL_MAX_TOKENS = int(env("GRAPHQL_MAX_TOKENS", "1000"))
FLEXPLANE_PAGE_SIZE_MAX = int(env("PAGE_SIZE_MAX", "500"))

# The browser console (orchestrator.services.console): consoles open at once per VM and per user (the
# next one is refused), seconds without input from its user (keys, pointer, clipboard) before a console is
# closed, and seconds a console page's ticket may take to reach the websocket.
FLEXPLANE_CONSOLE_MAX_PER_VM = env_count("CONSOLE_MAX_PER_VM", 2)
FLEXPLANE_CONSOLE_MAX_PER_USER = env_count("CONSOLE_MAX_PER_USER", 4)
FLEXPLANE_CONSOLE_IDLE_TIMEOUT = env_float("CONSOLE_IDLE_TIMEOUT", 900.0)
FLEXPLANE_CONSOLE_TICKET_TTL = env_float("CONSOLE_TICKET_TTL", 30.0)

# /metrics (orchestrator.metrics_http): with a port set, it answers only on that port (flexplane.serve's
# --metrics-port, which the ingress does not route to), and that port answers nothing else; unset, on
# the app's own port.
FLEXPLANE_METRICS_PORT: int | None = int(env("METRICS_PORT", "0")) or None

# No GraphQL middleware: under DEBUG graphene-django would add its DjangoDebugMiddleware, which wraps
# every resolved field for a `_debug` field this schema does not have (a third of a listing's time).
GRAPHENE = {"SCHEMA": "orchestrator.graphql.schema.schema", "MIDDLEWARE": []}

# Logs are JSON lines (flexplane.logs) unless FLEXPLANE_LOG_FORMAT=plain; each carries its request's id.
# Audit records (orchestrator.services.audit) are JSON lines on stdout whatever the format.
LOG_FORMAT = env("LOG_FORMAT", "json")
if LOG_FORMAT not in ("json", "plain"):
    raise ImproperlyConfigured(f"FLEXPLANE_LOG_FORMAT must be json or plain, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "flexplane.logs.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "flexplane.logs.json_formatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
        "audit": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": "json",
            "filters": ["request_id"],
        },
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's own console handler (under DEBUG) would print its lines a second time, not as JSON.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"level": "WARNING"},
        "flexplane.audit": {"handlers": ["audit"], "level": "INFO", "propagate": False},
    },
}
