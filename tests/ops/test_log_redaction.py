"""Database errors are logged without their DETAIL/CONTEXT values (issue 24 item 9): PostgreSQL
quotes the row in them (``Key (tenant_id, external_id)=(3, alice) already exists``)."""

from __future__ import annotations

import io
import logging
import logging.config

import pytest
from django.db import IntegrityError, connection, transaction

from memory.models import Subject
from personatree_site.ops import logging as logs
from tests.factories import SubjectFactory

pytestmark = pytest.mark.django_db

CANARY = "canary-subject-5e1b"


@pytest.fixture(params=logs.FORMATS)
def lines(request):
    """The root logger's lines through the handler ``logging_config`` builds (plain and JSON)."""
    stream = io.StringIO()
    config = logs.logging_config(request.param, "INFO")
    handler_config = config["handlers"]["console"]
    filters = [
        logging.config.DictConfigurator({}).configure_custom(dict(config["filters"][name]))
        for name in handler_config["filters"]
    ]
    formatter_config = dict(config["formatters"]["default"])
    if "()" in formatter_config:
        formatter = logs.JsonFormatter()
    else:
        formatter = logging.Formatter(formatter_config["format"])
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    for item in filters:
        handler.addFilter(item)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream.getvalue
    finally:
        root.removeHandler(handler)


def _integrity_error() -> IntegrityError:
    subject = SubjectFactory(external_id=CANARY)
    try:
        with transaction.atomic():
            Subject.objects.create(tenant=subject.tenant, external_id=CANARY)
    except IntegrityError as exc:
        assert CANARY in str(exc) and "DETAIL" in str(exc)  # what PostgreSQL puts in the error
        return exc
    raise AssertionError("no IntegrityError")


def test_a_logged_integrity_error_keeps_its_kind_but_not_the_row(lines):
    exc = _integrity_error()
    log = logging.getLogger("personatree.test")
    try:
        raise exc
    except IntegrityError:
        log.exception("write failed")
    log.error("write failed: %s", exc)
    log.error("write failed: %r", exc)
    out = lines()
    assert CANARY not in out
    assert "IntegrityError" in out and "duplicate key" in out and "DETAIL: [redacted]" in out


def test_detail_and_context_of_a_plpgsql_error_are_redacted(lines):
    with pytest.raises(Exception) as caught, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DO $$ BEGIN RAISE EXCEPTION 'boom' USING DETAIL = '{CANARY}'; END $$")
    assert CANARY in str(caught.value) and "CONTEXT" in str(caught.value)
    logging.getLogger("personatree.test").error("statement failed", exc_info=caught.value)
    out = lines()
    assert CANARY not in out and "inline_code_block" not in out, out
    assert "DETAIL: [redacted]" in out and "CONTEXT: [redacted]" in out and "boom" in out


def test_plain_lines_are_left_alone():
    assert logs.redact_db_detail("no detail here: 3 rows") == "no detail here: 3 rows"
    text = "IntegrityError('duplicate key\\nDETAIL:  Key (x)=(secret) already exists.\\n')"
    assert "secret" not in logs.redact_db_detail(text)
    assert logs.redact_db_detail("DETAIL: a\nnext line") == "DETAIL: [redacted]\nnext line"
