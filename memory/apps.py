from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "PersonaTree memory"
    default_auto_field = "django.db.models.BigAutoField"
