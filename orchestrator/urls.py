from django.urls import path

from orchestrator import enrollment, health, metrics_http, releases
from orchestrator.graphql.view import FlexPlaneGraphQLView

urlpatterns = [
    path("graphql", FlexPlaneGraphQLView.as_view(), name="graphql"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_http.metrics, name="metrics"),
    path("enroll/v1/join", enrollment.join, name="enroll-join"),
    path("enroll/v1/renew", enrollment.renew, name="enroll-renew"),
    path("agent/releases/channel.json", releases.channel, name="agent-release-channel"),
    path("agent/releases/<str:name>", releases.release_file, name="agent-release-file"),
]
