"""Cursor pagination (issue 17): the subject list, the version list and the export, a page at a time."""

import random
import re
from urllib.parse import unquote

import pytest
from django.core import signing
from django.urls import reverse

from memory.api.pagination import CURSOR_PATTERN, PAGE_SIZE_MAX
from memory.engine.ops import Op
from memory.services.tree import Actor, tree_apply_ops
from tests.factories import SubjectFactory

pytestmark = pytest.mark.django_db

STYLE = "body/appearance/style"
ROLE = "identity/occupation/current_role"
HEALTH = "body/health/conditions"  # special tier


def subject_url(name, subject):
    return reverse(name, kwargs={"external_id": subject.external_id})


def follow(client, url, params, key):
    """Every page of a list from its first URL: ``(pages, items)``; each page's status is 200."""
    pages, items = [], []
    response = client.get(url, params)
    while True:
        assert response.status_code == 200, response.content[:300]
        body = response.json()
        pages.append(body)
        items.extend(body[key])
        if body["next"] is None:
            return pages, items
        response = client.get(body["next"])


@pytest.fixture
def versioned(subject, admin_user):
    """Five versions: STYLE set to v1..v4 then HEALTH (special) added; ops on both tiers."""
    actor = Actor.for_admin(admin_user)
    tree_apply_ops(subject=subject, base_version=0, ops=[Op.add(STYLE, "v1")], actor=actor)
    for number in (2, 3, 4):
        tree_apply_ops(
            subject=subject, base_version=number - 1, ops=[Op.update(STYLE, f"v{number}")], actor=actor
        )
    tree_apply_ops(subject=subject, base_version=4, ops=[Op.add(HEALTH, "asthma")], actor=actor)
    return subject


def test_subject_list_pages_through_the_tenants_subjects_in_id_order(tenant, other_tenant, make_api_client):
    ids = [f"user-{n:02d}" for n in (7, 3, 11, 5, 1)]
    for external_id in ids:
        SubjectFactory(tenant=tenant, external_id=external_id)
    SubjectFactory(tenant=other_tenant, external_id="user-04")
    client, _ = make_api_client(tenant, scopes=["read"])
    pages, subjects = follow(client, reverse("subject-list"), {"page_size": 2}, "subjects")
    assert [len(p["subjects"]) for p in pages] == [2, 2, 1]
    assert [s["external_id"] for s in subjects] == sorted(ids)
    assert subjects[0].keys() == {
        "external_id",
        "schema_id",
        "schema_version",
        "head_version",
        "created_at",
        "updated_at",
    }
    # One page holding everything has no next link.
    whole = client.get(reverse("subject-list")).json()
    assert [s["external_id"] for s in whole["subjects"]] == sorted(ids) and whole["next"] is None


def test_a_cursor_after_the_longest_non_ascii_subject_id_still_works(tenant, make_api_client):
    # Ids of 255 distinct-looking CJK characters: escaped in JSON and barely compressible, so the
    # cursor after one is over 1,000 characters.
    rng = random.Random(17)
    ids = ["".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(255)) for _ in range(3)]
    for external_id in ids:
        SubjectFactory(tenant=tenant, external_id=external_id)
    client, _ = make_api_client(tenant, scopes=["read"])
    pages, subjects = follow(client, reverse("subject-list"), {"page_size": 1}, "subjects")
    assert len(pages) == 3 and [s["external_id"] for s in subjects] == sorted(ids)


def test_subject_list_needs_read_and_is_empty_for_a_new_tenant(other_tenant, make_api_client):
    ingest_only, _ = make_api_client(other_tenant, scopes=["ingest"])
    assert ingest_only.get(reverse("subject-list")).status_code == 403
    reader, _ = make_api_client(other_tenant, scopes=["read"])
    assert reader.get(reverse("subject-list")).json() == {"subjects": [], "next": None}


def test_a_subject_created_between_pages_is_neither_repeated_nor_lost(tenant, make_api_client):
    for external_id in ("a", "c", "e"):
        SubjectFactory(tenant=tenant, external_id=external_id)
    client, _ = make_api_client(tenant, scopes=["read"])
    first = client.get(reverse("subject-list"), {"page_size": 2}).json()
    assert [s["external_id"] for s in first["subjects"]] == ["a", "c"]
    SubjectFactory(tenant=tenant, external_id="b")  # before the cursor: a later listing shows it
    SubjectFactory(tenant=tenant, external_id="d")  # after it: this listing shows it
    second = client.get(first["next"]).json()
    assert [s["external_id"] for s in second["subjects"]] == ["d", "e"] and second["next"] is None


def test_versions_are_paged_newest_first(versioned, make_api_client):
    client, _ = make_api_client(versioned.tenant, scopes=["read"])
    pages, versions = follow(client, subject_url("subject-versions", versioned), {"page_size": 2}, "versions")
    assert [[v["number"] for v in p["versions"]] for p in pages] == [[5, 4], [3, 2], [1]]
    assert all(p["head_version"] == 5 and p["subject"] == versioned.external_id for p in pages)
    assert [v["parent"] for v in versions] == [4, 3, 2, 1, None]


def test_versions_list_is_no_longer_cut_at_500(subject, make_api_client, admin_user):
    """Before: the list silently stopped at 500 versions. Now the 501st is on the next page."""
    actor = Actor.for_admin(admin_user)
    tree_apply_ops(subject=subject, base_version=0, ops=[Op.add(STYLE, "0")], actor=actor)
    for number in range(2, 502):
        tree_apply_ops(
            subject=subject, base_version=number - 1, ops=[Op.update(STYLE, str(number))], actor=actor
        )
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    pages, versions = follow(
        client, subject_url("subject-versions", subject), {"page_size": PAGE_SIZE_MAX}, "versions"
    )
    assert len(pages) == 2 and [v["number"] for v in versions] == list(range(501, 0, -1))


def test_export_pages_hold_every_version_and_op_once_and_filter_tiers(versioned, make_api_client):
    plain, _ = make_api_client(versioned.tenant, scopes=["read"])
    special, _ = make_api_client(versioned.tenant, scopes=["read", "read_special"])
    url = subject_url("subject-export", versioned)

    whole = special.get(url).json()
    assert whole["next"] is None and [v["number"] for v in whole["versions"]] == [1, 2, 3, 4, 5]
    assert [o["path"] for o in whole["ops"]] == [STYLE] * 4 + [HEALTH]
    assert whole["tree"] == {STYLE: "v4", HEALTH: "asthma"}
    assert whole["schema"] == {"id": versioned.schema_id, "version": versioned.schema_version}
    op = whole["ops"][-1]
    assert op["actor"]["kind"] == "admin" and op["source"] == {
        "chunk_id": None,
        "start_seq": None,
        "end_seq": None,
    }
    assert (op["op"], op["status"], op["version"], op["new_value"]) == ("ADD", "applied", 5, "asthma")

    pages, versions = follow(special, url, {"page_size": 2}, "versions")
    assert len(pages) == 3
    assert versions == whole["versions"]
    assert [o for p in pages for o in p["ops"]] == whole["ops"]
    assert all(p["tree"] == whole["tree"] and p["head_version"] == 5 for p in pages)

    pages, versions = follow(plain, url, {"page_size": 2}, "versions")
    ops = [o for p in pages for o in p["ops"]]
    assert [o["path"] for o in ops] == [STYLE] * 4  # the special-tier op is not exported
    assert versions[-1]["tree"] == {STYLE: "v4"} and pages[0]["tree"] == {STYLE: "v4"}


@pytest.mark.parametrize("page_size", ["0", "-1", str(PAGE_SIZE_MAX + 1), "ten", "9" * 50])
def test_bad_page_size_is_a_json_400(subject, make_api_client, page_size):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    for url in (
        reverse("subject-list"),
        subject_url("subject-versions", subject),
        subject_url("subject-export", subject),
    ):
        response = client.get(url, {"page_size": page_size})
        assert response.status_code == 400, (url, response.content[:300])
        assert response.json()["field"] == "page_size"


def test_bad_cursors_are_a_json_400_or_404_naming_the_cursor(versioned, make_api_client):
    """Not a cursor's form (the document's pattern): 400. Of that form but naming no page of this
    list (forged, tampered, another list's): 404. Both ``invalid_cursor`` naming ``cursor``."""
    client, _ = make_api_client(versioned.tenant, scopes=["read"])
    versions_url = subject_url("subject-versions", versioned)
    good = client.get(versions_url, {"page_size": 1}).json()["next"]
    cursor = unquote(good.split("cursor=")[1].split("&")[0])
    assert re.fullmatch(CURSOR_PATTERN, cursor)
    forged = signing.dumps({"before": 3}, salt="not-the-api's")  # a position the server never signed
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    for url, bad, status in [
        (versions_url, "garbage", 400),
        (versions_url, "\u00e9\u2603", 400),
        (versions_url, forged, 404),
        (versions_url, tampered, 404),
        (reverse("subject-list"), cursor, 404),  # a versions cursor on another list
        (subject_url("subject-export", versioned), cursor, 404),
    ]:
        response = client.get(url, {"cursor": bad})
        assert response.status_code == status, (url, bad, response.content[:300])
        problem = response.json()
        assert (problem["code"], problem["field"]) == ("invalid_cursor", "cursor")
    assert client.get(good).status_code == 200


def test_missing_as_of_version_is_a_404(versioned, make_api_client):
    client, _ = make_api_client(versioned.tenant, scopes=["read"])
    response = client.get(subject_url("subject-tree", versioned), {"as_of": 99})
    assert response.status_code == 404
    assert (response.json()["code"], response.json()["field"]) == ("not_found", "as_of")
    for name in ("subject-context", "subject-answer"):
        response = client.post(subject_url(name, versioned), {"query": "job?", "as_of": 99}, format="json")
        assert response.status_code == 404, (name, response.content[:300])
        assert response.json()["field"] == "as_of"
