"""Redoc loads its script from this server and nothing from elsewhere (issue 17): drf-spectacular's
own Redoc template links Google Fonts, ours (memory/templates/api/redoc.html) drops them."""

import re

from django.contrib.staticfiles import finders
from django.template.loader import get_template
from django.urls import reverse

URL = re.compile(r"""(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}""")
ASSET = re.compile(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']""")


def test_redoc_page_references_no_external_url(client):
    response = client.get(reverse("api-redoc"))
    assert response.status_code == 200
    html = response.content.decode()
    assert URL.findall(html) == [], URL.findall(html)
    assets = ASSET.findall(html)
    scripts = [a for a in assets if a.endswith(".js") or ".js?" in a]
    assert scripts and all("drf_spectacular_sidecar/redoc/" in s for s in scripts), assets
    for script in scripts:  # a file the static finders serve (and collectstatic collects)
        assert finders.find(script.split("/static/", 1)[1].split("?")[0]), script
    assert reverse("openapi-schema") in html  # the spec it renders is this server's schema


def test_the_upstream_template_would_load_fonts_from_elsewhere():
    """What the override is for: if drf-spectacular drops the links, the override can go too."""
    upstream = get_template("drf_spectacular/redoc.html").template.source
    assert URL.search(upstream)
