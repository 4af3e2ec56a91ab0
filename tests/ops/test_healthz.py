"""/healthz: liveness without the database or any service, and without the production host checks."""

from __future__ import annotations

import pytest


def test_healthz_is_ok_without_any_query(probe, django_assert_num_queries, db):
    with django_assert_num_queries(0):
        resp = probe.get("/healthz")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok"}
    assert resp["Cache-Control"] == "no-store"


def test_healthz_needs_no_database_at_all(probe):
    # No `db` fixture: pytest-django blocks every database access, so a query would error here.
    assert probe.get("/healthz").status_code == 200


def test_healthz_only_answers_get_and_head(probe):
    assert probe.head("/healthz").status_code == 200
    resp = probe.post("/healthz")
    assert resp.status_code == 405
    assert resp["Content-Type"] == "application/problem+json"
    body = resp.json()
    assert (body["code"], body["status"], body["instance"]) == ("method_not_allowed", 405, "/healthz")
    assert "error" not in body


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probe_by_pod_ip_over_http_passes_the_production_checks(probe, settings, db, path):
    """Probes call by IP over plain HTTP: no HTTPS redirect, no DisallowedHost 400."""
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["memory.example.com"]
    resp = probe.get(path, HTTP_HOST="10.1.2.3:8000")
    assert resp.status_code == 200, resp.content
    # The rest of the site keeps both checks.
    assert probe.get("/v1/subjects/x/tree", HTTP_HOST="10.1.2.3:8000").status_code == 400


def test_probes_are_not_throttled(probe, settings, db):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"api_key": "1/min"}}
    assert all(probe.get("/healthz").status_code == 200 for _ in range(5))
    assert all(probe.get("/readyz").status_code == 200 for _ in range(3))
