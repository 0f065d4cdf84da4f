"""Production settings: everything secure by default, every secret from the environment."""

from flexplane.settings.base import *  # noqa: F403
from flexplane.settings.base import env, env_bool, env_list

DEBUG = False
SECRET_KEY = env("SECRET_KEY")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

FLEXPLANE_GRAPHIQL = False
FLEXPLANE_GRAPHQL_INTROSPECTION = env_bool("GRAPHQL_INTROSPECTION", False)
# /metrics only on its own port (flexplane.serve's --metrics-port, for the cluster's Prometheus), never
# public.
FLEXPLANE_METRICS_PORT = int(env("METRICS_PORT", "9100")) or None

# TLS terminates at the ingress; it tells us the original scheme.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SECURE_HSTS_SECONDS = 31536000
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SECURE = True
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
