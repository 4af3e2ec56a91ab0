"""The Celery app (`celery -A personatree_site worker -Q ingest,index`); without
``DJANGO_SETTINGS_MODULE`` it gets the production settings, as ``wsgi.py`` does.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.production")

app = Celery("personatree")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers", "memory.backfill"])  # memory.backfill.tasks: imports
