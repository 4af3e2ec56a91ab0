from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "PersonaTree memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The workers' receivers (indexing, dispatch) are connected by workers.apps.WorkersConfig.
        import memory.api.openapi  # noqa: F401  (registers the OpenAPI auth scheme)
        import memory.checks  # noqa: F401  (system checks of the PERSONATREE settings)
        import memory.services.erasure  # noqa: F401  (subject_erased -> empty the llama.cpp prompt cache)
