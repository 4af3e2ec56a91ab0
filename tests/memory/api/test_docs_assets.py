"""Swagger UI loads its files from this server, not a CDN (issue 17): an air-gapped install shows
the API docs. (Redoc, likewise: tests/memory/api/test_redoc_assets.py.)"""

import re

from django.contrib.staticfiles import finders
from django.urls import reverse

ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")


def test_docs_page_loads_every_asset_from_this_server(client):
    response = client.get(reverse("api-docs"))
    assert response.status_code == 200
    html = response.content.decode()
    assets = ASSET.findall(html)
    assert any("drf_spectacular_sidecar" in a for a in assets), assets
    external = [a for a in assets if a.startswith(("http:", "https:", "//"))]
    assert external == [], external
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html
    for asset in assets:
        if "drf_spectacular_sidecar" in asset:  # each one is a file the static finders serve
            relative = asset.split("/static/", 1)[1].split("?")[0]
            assert finders.find(relative), asset
