"""A chunk's ``last_error`` keeps the error's kind and a short reason, never user or model text, URLs
or file paths (issue 15): masked when stored by the dispatcher, and when the admin shows it (rows
stored before the masking)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory.models import Chunk
from memory.services.chunk_errors import MAX_CHARS, safe_chunk_error
from tests.factories import ChunkFactory
from tests.workers.helpers import FailingClient, ingest_pairs
from workers.dispatcher import dispatch_round

pytestmark = pytest.mark.django_db

CANARY = "Zqx-my-cat-is-Marmalade"
LEAKY = [
    f"bad job: 1 validation error for ListenerJob\nturns.0.content\n  input_value='I said {CANARY}'",
    f"internal error judging output: KeyError('{CANARY}')",
    f'HTTP 400 from http://vllm.internal:8000/v1: {{"error": {{"message": "prompt: {CANARY}"}}}}',
    f"local model file not found: /srv/models/{CANARY}.gguf (run make model)",
    f"apply failed: invalid input {{'value': '{CANARY}'}} " + "x" * 400,
    f"engine failure: RuntimeError(text={CANARY})",
]


@pytest.mark.parametrize("error", LEAKY)
def test_masked_error_keeps_the_kind_without_text_urls_or_paths(error):
    safe = safe_chunk_error(error)
    assert CANARY not in safe
    assert "http" not in safe and "/srv/" not in safe and "\n" not in safe
    assert len(safe) <= MAX_CHARS
    assert safe.split()[:2] == error.split()[:2]  # the kind stays readable


@pytest.mark.parametrize("plain", ["engine down (test)", "prompt too long", "listener timeout after 300 s"])
def test_plain_reasons_are_kept_as_they_are(plain):
    assert safe_chunk_error(plain) == plain


@pytest.mark.parametrize("error", LEAKY[:4])
def test_dispatcher_stores_the_masked_error(tenant, error):
    ingest_pairs(tenant, "leaky", 3)
    dispatch_round(client=FailingClient(retryable=False, message=error), max_wait_ms=0, index=False)
    chunk = Chunk.objects.get()
    assert chunk.status == Chunk.Status.FAILED
    assert chunk.last_error and CANARY not in chunk.last_error
    assert "http" not in chunk.last_error and "/srv/" not in chunk.last_error


def test_admin_shows_an_old_unmasked_error_masked(client, admin_user):
    chunk = ChunkFactory(status=Chunk.Status.FAILED, attempts=5, last_error=LEAKY[1])
    client.force_login(admin_user)
    for url in (
        reverse("admin:memory_chunk_changelist"),
        reverse("admin:memory_chunk_change", args=[chunk.pk]),
    ):
        page = client.get(url)
        assert page.status_code == 200
        body = page.content.decode()
        assert "internal error judging output" in body, url
        assert CANARY not in body, url
