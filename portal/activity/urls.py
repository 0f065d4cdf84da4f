"""The Activity page, routed under ``admin/activity/``."""

from django.urls import path

from portal.activity import views

urlpatterns = [path("", views.activity_page, name="activity")]
