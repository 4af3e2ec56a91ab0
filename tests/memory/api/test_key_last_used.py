"""ApiKey.last_used_at, kept to the minute with at most one conditional UPDATE per key and minute (issue 17)."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memory.api.auth import LAST_USED_RESOLUTION, mark_used
from memory.models import ApiKey

pytestmark = pytest.mark.django_db


def test_last_used_at_is_written_at_most_once_a_minute(subject, make_api_client, django_assert_num_queries):
    client, key = make_api_client(subject.tenant, scopes=["read"])
    url = reverse("subject-tree", kwargs={"external_id": subject.external_id})
    assert ApiKey.objects.get(pk=key.pk).last_used_at is None
    with django_assert_num_queries(3) as first:  # key lookup, the UPDATE, subject
        assert client.get(url).status_code == 200
    assert sum(q["sql"].startswith("UPDATE") for q in first.captured_queries) == 1
    used = ApiKey.objects.get(pk=key.pk).last_used_at
    assert used is not None and abs(timezone.now() - used) < timedelta(seconds=30)

    with django_assert_num_queries(2):  # within the minute: nothing is written
        assert client.get(url).status_code == 200
    assert ApiKey.objects.get(pk=key.pk).last_used_at == used

    # A minute later it is written again, once.
    older = used - LAST_USED_RESOLUTION - timedelta(seconds=1)
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=older)
    with django_assert_num_queries(3):
        assert client.get(url).status_code == 200
    assert ApiKey.objects.get(pk=key.pk).last_used_at > used


def test_a_concurrent_request_that_read_a_stale_time_writes_nothing(subject, make_api_client):
    """The UPDATE is conditional: a request that loaded the key before another one marked it
    used (both saw an old last_used_at) does not write again."""
    _, key = make_api_client(subject.tenant, scopes=["read"])
    stale = ApiKey.objects.get(pk=key.pk)  # loaded while last_used_at is still None
    fresh = ApiKey.objects.get(pk=key.pk)
    mark_used(fresh)
    first = ApiKey.objects.get(pk=key.pk).last_used_at
    mark_used(stale)
    assert ApiKey.objects.get(pk=key.pk).last_used_at == first
