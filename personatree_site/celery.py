"""The Celery app. Workers: `celery -A personatree_site worker -Q ingest,index`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.local")

app = Celery("personatree")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"])
