from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "PersonaTree memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The workers' receivers (indexing, dispatch) are connected by workers.apps.WorkersConfig.
        from django.db.models.signals import post_delete

        import memory.api.openapi  # noqa: F401  (registers the OpenAPI auth scheme)
        import memory.checks  # noqa: F401  (system checks of the PERSONATREE settings)
        import memory.services.erasure  # noqa: F401  (subject_erased -> empty the llama.cpp prompt cache)
        from memory.models import TenantSchema

        post_delete.connect(_forget_schemas, sender=TenantSchema, dispatch_uid="memory.schema_cache")


def _forget_schemas(**_kwargs) -> None:
    """A deleted tenant schema row (its tenant was deleted) leaves no stale cached schema behind."""
    from memory import selectors

    selectors.schema_cache_clear()
