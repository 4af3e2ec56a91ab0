"""The workers as a Django app: its receivers are connected when Django starts, so the services
announce what happened (``memory.signals``) without importing the workers."""

from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "PersonaTree workers"

    def ready(self) -> None:
        import workers.dispatcher  # noqa: F401  (chunks_ready -> dispatch)
        import workers.exporter  # noqa: F401  (worker_init -> the metrics exporter, workers/exporter.py)
        import workers.indexing  # noqa: F401  (version_applied / subject_erased -> evidence index)
        import workers.tasks  # noqa: F401  (the sweep; Celery's autodiscovery imports it too)
        import workers.webhooks  # noqa: F401  (version_applied / review_decided / subject_erased -> webhooks)
