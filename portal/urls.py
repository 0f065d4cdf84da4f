"""The portal's routes. Each area adds its own single ``include`` line below (``vdc/<str:vdc>/vms/``
for the VM pages, ``admin/`` for the admin pages); the websocket routes are in ``portal.routing``."""

from django.urls import include, path
from mozilla_django_oidc.views import OIDCLogoutView

from portal import dashboard, oidc, tasks, views

urlpatterns = [
    path("", views.home, name="home"),
    # Login, its callback (the URL registered at the identity provider) and logout.
    path("login/", oidc.LoginView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc.CallbackView.as_view(), name="oidc_authentication_callback"),
    # POST only: the session ends here, then at the issuer (oidc.end_session_url).
    path("logout/", OIDCLogoutView.as_view(), name="oidc_logout"),
    path("vdc/<str:vdc>/", dashboard.dashboard, name="vdc-dashboard"),
    path("vdc/<str:vdc>/tasks/<str:task_id>/", tasks.task_page, name="task"),
    path("admin/activity/", include("portal.activity.urls")),
    # Access changes are admin actions: under admin/, they need a freshly renewed session (portal.oidc).
    path("admin/access/", include("portal.access.urls")),
    path("admin/", include("portal.admin.urls")),
    path("vdc/<str:vdc>/vms/", include("portal.vms.urls")),
    path("vdc/<str:vdc>/", include("portal.networks.urls")),
    path("vdc/<str:vdc>/", include("portal.security_groups.urls")),
    path("vdc/<str:vdc>/", include("portal.gateways.urls")),
    path("vdc/<str:vdc>/", include("portal.clusters.urls")),
    path("vdc/<str:vdc>/console/", include("portal.console.urls")),
]
