from django.apps import AppConfig


class ZitadelApiConfig(AppConfig):
    name = "devstack.identity.api"
    label = "zitadel_api"
    verbose_name = "Zitadel-shaped management API"
    default_auto_field = "django.db.models.BigAutoField"
