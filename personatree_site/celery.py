"""The Celery app. Workers: `celery -A personatree_site worker -Q ingest,index`.

Without ``DJANGO_SETTINGS_MODULE`` a worker gets the production settings, which refuse to start
without their secrets (see ``wsgi.py``). ``manage.py`` sets the local settings before this module
is imported, so development commands keep them.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.production")

app = Celery("personatree")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers", "memory.backfill"])  # memory.backfill.tasks: imports
