import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from memory.engine.ops import Op
from memory.models import ApiKey, Subject, Tombstone
from memory.services.tree import Actor, tree_apply_ops

pytestmark = pytest.mark.django_db

ROLE = "identity/occupation/current_role"
HEALTH = "body/health/conditions"


@pytest.fixture
def filled(subject, admin_user):
    actor = Actor.for_admin(admin_user)  # admin writes are not held for review
    tree_apply_ops(
        subject=subject, base_version=0, ops=[Op.add(ROLE, "nurse"), Op.add(HEALTH, "asthma")], actor=actor
    )
    tree_apply_ops(subject=subject, base_version=1, ops=[Op.update(ROLE, "doctor")], actor=actor)
    return subject


def url(name, subject):
    return reverse(name, kwargs={"external_id": subject.external_id})


def test_tree_hides_special_tier_without_read_special(filled, make_api_client):
    plain, _ = make_api_client(filled.tenant, scopes=["read"])
    special, _ = make_api_client(filled.tenant, scopes=["read", "read_special"])
    body = plain.get(url("subject-tree", filled)).json()
    assert body["version"] == 2 and body["tree"] == {ROLE: "doctor"}
    assert special.get(url("subject-tree", filled)).json()["tree"] == {ROLE: "doctor", HEALTH: "asthma"}


def test_tree_as_of_version_and_bad_as_of(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["read"])
    assert client.get(url("subject-tree", filled), {"as_of": 1}).json()["tree"] == {ROLE: "nurse"}
    bad = client.get(url("subject-tree", filled), {"as_of": "yesterday"})
    assert bad.status_code == 400 and bad.json()["field"] == "as_of"
    missing = client.get(url("subject-tree", filled), {"as_of": 99})
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_versions_list(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["read"])
    body = client.get(url("subject-versions", filled)).json()
    assert body["head_version"] == 2
    assert [(v["number"], v["parent"], v["created_by"]) for v in body["versions"]] == [
        (2, 1, "admin"),
        (1, None, "admin"),
    ]


def test_export_filters_special_tier(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["read"])
    body = client.get(url("subject-export", filled)).json()
    assert body["tree"] == {ROLE: "doctor"}
    assert HEALTH not in {o["path"] for o in body["ops"]}
    assert all(HEALTH not in v["tree"] for v in body["versions"])


def test_erase_needs_erase_scope_and_leaves_tombstone(filled, make_api_client, other_tenant):
    reader, _ = make_api_client(filled.tenant, scopes=["read"])
    assert reader.delete(url("subject-detail", filled)).status_code == 403
    foreign, _ = make_api_client(other_tenant, scopes=["erase"])
    assert foreign.delete(url("subject-detail", filled)).status_code == 404
    eraser, _ = make_api_client(filled.tenant, scopes=["erase"])
    response = eraser.delete(url("subject-detail", filled))
    assert response.status_code == 200 and response.json()["counts"]["versions"] == 2
    assert not Subject.objects.filter(pk=filled.pk).exists()
    assert Tombstone.objects.filter(tenant=filled.tenant).count() == 1
    assert eraser.delete(url("subject-detail", filled)).status_code == 404


def test_read_endpoint_query_count(filled, make_api_client, django_assert_max_num_queries):
    client, _ = make_api_client(filled.tenant, scopes=["read"])
    client.get(url("subject-tree", filled))  # a key's first request of a minute writes last_used_at
    with django_assert_max_num_queries(2):  # key lookup (with tenant) + subject with head
        assert client.get(url("subject-tree", filled)).status_code == 200


def test_create_tenant_command_prints_key_once(db):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_tenant", "Acme", "--scopes", "read", "erase", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    key = ApiKey.objects.get(tenant__name="Acme")
    assert raw.startswith(key.prefix) and key.hashed == ApiKey.hash_key(raw) and raw not in err.getvalue()
    assert key.scopes == ["erase", "read"]
    with pytest.raises(CommandError):
        call_command("create_tenant", "Acme", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError):
        call_command("create_tenant", "Beta", "--scopes", "root", stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.parametrize(
    "as_of",
    [
        "2024-13-01T00:00",  # well-formed, not a date: parse_datetime raises ValueError
        "2024-02-30",
        "\u00b2",  # superscript two: str.isdigit() is True, int() refuses it
        "\u0661\u0662",  # Arabic-Indic digits
        "9" * 400,  # a number no version can have (integer column)
        "9" * 5000,  # beyond Python's int() digit limit
        "2147483648",
        "-1",
        "0001-01-01T00:00+05:00",  # before datetime.min once moved to UTC
        "9999-12-31T23:59-05:00",  # after datetime.max once moved to UTC
        "2024-01-01T00:00+25:00",  # offset out of range
    ],
)
def test_bad_as_of_is_a_json_400_naming_the_parameter(filled, make_api_client, as_of):
    client, _ = make_api_client(filled.tenant, scopes=["read"])
    response = client.get(url("subject-tree", filled), {"as_of": as_of})
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["field"] == "as_of"


def test_good_as_of_forms_still_work(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["read"])
    for as_of, version in [("", 2), ("0", 0), (" 1 ", 1), ("2147483647", None), ("2999-01-01T00:00", 2)]:
        response = client.get(url("subject-tree", filled), {"as_of": as_of})
        if version is None:
            assert response.status_code == 404 and response.json()["code"] == "not_found"
        else:
            assert response.status_code == 200 and response.json()["version"] == version, (as_of, response)


@pytest.mark.parametrize("name", ["subject-tree", "subject-versions", "subject-export", "subject-detail"])
def test_unusable_subject_ids_are_a_json_400(tenant, make_api_client, name):
    """A NUL cannot reach PostgreSQL (psycopg refuses it: a 500 before)."""
    client, _ = make_api_client(tenant, scopes=["read", "erase"])
    path = reverse(name, kwargs={"external_id": "a\x00b"})
    response = client.delete(path) if name == "subject-detail" else client.get(path)
    assert response.status_code == 400, response.content[:300]
    assert response.json()["field"] == "external_id"
