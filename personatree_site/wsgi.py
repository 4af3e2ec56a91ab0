"""WSGI entry point (``gunicorn personatree_site.wsgi:application``).

Without ``DJANGO_SETTINGS_MODULE`` a server gets the production settings, which refuse to start
without their secrets (a real ``DJANGO_SECRET_KEY`` among them): never DEBUG with the development
key by accident. ``manage.py`` (development, ``runserver``, tests) keeps the local settings.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.production")
application = get_wsgi_application()
