from django.urls import path

from orchestrator import health
from orchestrator.graphql.view import FlexPlaneGraphQLView

urlpatterns = [
    path("graphql", FlexPlaneGraphQLView.as_view(), name="graphql"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
]
