"""Django admin moderation console (registered on import by Django's admin autodiscovery)."""

from memory.admin import ops, other, review, schema_migrations, schemas, subjects, users, webhooks  # noqa: F401
