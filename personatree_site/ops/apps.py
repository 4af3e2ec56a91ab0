"""The operations package as a Django app: its ``ready`` runs once per process (web server, Celery
worker, beat, management commands), which is where logging context and tracing are set up."""

from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "personatree_site.ops"
    label = "personatree_ops"
    verbose_name = "PersonaTree operations"

    def ready(self) -> None:
        from personatree_site.ops import logging, tracing

        logging.install_celery_hooks()
        tracing.install()
