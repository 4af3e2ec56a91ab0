"""A scratch PostgreSQL database for the benchmarks that write (store, ingest, query, client).

``with scratch_db(name) as connection:`` sets Django up with the test settings, creates the
database ``name`` (dropping a leftover one) as the test database, and drops it on exit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def scratch_db(name: str) -> Iterator[object]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.test")
    import django
    from django.conf import settings

    django.setup()
    from django.db import connection

    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = name
    old_name = connection.settings_dict["NAME"]
    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        yield connection
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
