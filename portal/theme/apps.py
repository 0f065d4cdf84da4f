"""The portal's Tailwind theme: django-tailwind's app whose ``static_src`` builds the portal's CSS."""

from django.apps import AppConfig


class ThemeConfig(AppConfig):
    name = "portal.theme"
    label = "theme"
    verbose_name = "flex.plane portal theme"
