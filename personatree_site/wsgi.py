"""WSGI entry point. Without ``DJANGO_SETTINGS_MODULE`` a server gets the production settings, which
refuse to start without their secrets: never DEBUG with the development key by accident.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.production")
application = get_wsgi_application()
