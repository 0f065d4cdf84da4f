from django.urls import include, path

urlpatterns = [
    path("", include("orchestrator.urls")),
    path("", include("portal.urls")),
]

# Failures outside the portal's views: the page in words, with the request id the traceback is logged under.
handler500 = "portal.errors.server_error"
