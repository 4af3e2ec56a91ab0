"""The operations package as a Django app: logging context and tracing set up once per process."""

from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "personatree_site.ops"
    label = "personatree_ops"
    verbose_name = "PersonaTree operations"

    def ready(self) -> None:
        from personatree_site.ops import logging, tracing

        logging.install_celery_hooks()
        tracing.install()
