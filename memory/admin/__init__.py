"""Django admin moderation console (registered on import by Django's admin autodiscovery)."""

from memory.admin import (  # noqa: F401
    chunks,
    keys,
    ops,
    review,
    schema_migrations,
    schemas,
    subjects,
    tenants,
    users,
    webhooks,
)
