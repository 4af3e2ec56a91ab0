"""``manage.py schema_migrate`` (issue 18 item 1): JSON out, dry run writes nothing, a run resumes,
and the docs block of docs/SCHEMAS.md "Migrating a tenant's subjects" is what the command prints."""

from __future__ import annotations

import json
import re
import shlex
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memory.models import SchemaMigration, Subject, TreeVersion
from tests.schema_migration_fixture import MAPPING_FILE, acme_tenant

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]
SECTION = "## Migrating a tenant's subjects"


def run(*args: str) -> dict:
    out = StringIO()
    call_command("schema_migrate", *args, stdout=out)
    return json.loads(out.getvalue())


def docs_examples() -> list[tuple[list[str], dict]]:
    """Each ``manage.py schema_migrate ...`` command of the docs section with the JSON block after it."""
    text = (ROOT / "docs" / "SCHEMAS.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    found = []
    for (lang, code), (next_lang, output) in zip(blocks, blocks[1:], strict=False):
        if lang == "sh" and "manage.py schema_migrate" in code and next_lang == "json":
            argv = shlex.split(code.strip().split("manage.py schema_migrate", 1)[1])
            found.append((argv, json.loads(output)))
    return found


def test_the_documented_commands_print_the_documented_output():
    acme_tenant()
    examples = docs_examples()
    assert [argv[-1] for argv, _ in examples] == ["--dry-run", str(MAPPING_FILE.relative_to(ROOT))]
    for argv, expected in examples:
        argv = [str(ROOT / a) if a.endswith(".json") else a for a in argv]
        assert run(*argv) == expected


def test_dry_run_writes_nothing_and_a_run_resumes(db):
    tenant = acme_tenant()
    versions = TreeVersion.objects.count()
    report = run("--tenant", "acme", "--mapping", str(MAPPING_FILE), "--dry-run", "--max-subjects", "1")
    assert report["subjects"] == 1 and report["remaining"] == 4
    assert TreeVersion.objects.count() == versions and not SchemaMigration.objects.exists()
    first = run(
        "--tenant", "acme", "--mapping", str(MAPPING_FILE), "--max-subjects", "3", "--batch-size", "2"
    )
    assert (first["created"], first["status"], first["examined"], first["remaining"]) == (
        True,
        "running",
        3,
        1,
    )
    second = run("--tenant", "acme", "--mapping", str(MAPPING_FILE))
    assert (second["created"], second["status"], second["examined"]) == (False, "done", 1)
    assert set(Subject.objects.filter(tenant=tenant).values_list("schema_version", flat=True)) == {2}


def test_bad_input_is_a_json_error(db, tmp_path):
    acme_tenant()
    with pytest.raises(CommandError) as exc:
        run("--tenant", "nobody", "--mapping", str(MAPPING_FILE))
    assert json.loads(str(exc.value))["field"] == "tenant"
    bad = json.loads(MAPPING_FILE.read_text())
    bad["steps"][1]["to"] = "health/sleep/nowhere"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(CommandError) as exc:
        run("--tenant", "acme", "--mapping", str(tmp_path / "bad.json"), "--dry-run")
    assert json.loads(str(exc.value))["field"] == "document.steps[1]"
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(CommandError) as exc:
        run("--tenant", "acme", "--mapping", str(tmp_path / "broken.json"))
    assert json.loads(str(exc.value))["field"] == "mapping"
