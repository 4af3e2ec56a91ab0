"""`manage.py demo` (`make demo`): the bundled conversation through the real API with the Python client,
a chunk at a time, printing each version's ops, then questions in each mode (docs: README)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory import conf
from memory.models import OpRecord, Subject, Tenant
from memory.services.keys import api_key_create
from memory.services.subjects import subject_erase, tenant_create
from memory.services.tree import Actor

CONVERSATION = Path(__file__).resolve().parents[2] / "demo" / "conversation.json"
TENANT_NAME = "demo"
# Library chatter that would drown the demo's own output (task traces, model loaders, Milvus Lite's
# embedded gRPC server). Warnings and errors of our own code still show.
QUIET_LOGGERS = (
    "celery",
    "personatree.tasks",
    "faiss",
    "milvus_lite",
    "grpc",
    "kombu",
    "memory.recall",
    "httpx",
)


class Command(BaseCommand):
    help = "Run the PersonaTree pipeline on the bundled example conversation and print what happens."

    def add_arguments(self, parser):
        parser.add_argument("--conversation", default=str(CONVERSATION), help="conversation JSON to ingest")
        parser.add_argument("--no-answers", action="store_true", help="build contexts only, skip /answer")
        parser.add_argument(
            "--url",
            default="",
            help="talk HTTP to a running server (make stack) instead of calling the views in process; "
            "the database settings must point at the same database",
        )
        parser.add_argument("--wait", type=float, default=600.0, help="with --url: seconds to wait per batch")

    def handle(self, *args, conversation, no_answers, url, wait, **options):
        data = json.loads(Path(conversation).read_text())
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR if name == "grpc" else logging.WARNING)
        logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
        cfg = conf.get()
        db = settings.DATABASES["default"]
        self.say(
            "PersonaTree demo",
            f"database: {db['ENGINE'].rsplit('.', 1)[-1]} {db.get('NAME')}",
            f"celery: {'eager (in process)' if settings.CELERY_TASK_ALWAYS_EAGER else settings.CELERY_BROKER_URL}",
            f"memlistener: {describe_backend(cfg)}",
            f"evidence index: Milvus at {cfg.recall.milvus_uri}",
        )
        tenant = Tenant.objects.filter(name=TENANT_NAME).first() or tenant_create(name=TENANT_NAME)
        # The demo plays the subject's own assistant: read_special lets it see evidence (raw dialogue
        # counts as the special tier) and special-tier leaves.
        _, raw_key = api_key_create(
            actor=Actor.system("demo"), tenant=tenant, scopes=["ingest", "read", "read_special"], name="demo"
        )
        external_id = data["subject"]
        old = Subject.objects.filter(tenant=tenant, external_id=external_id).first()
        if old is not None:
            subject_erase(subject=old, erased_by="demo restart")
            self.stdout.write(f"(erased the previous demo subject {external_id!r}; a tombstone remains)")
        from personatree_client import PersonaTreeError

        self.client, self.remote = client_for(raw_key, url), bool(url)
        self.wait, self.tenant, self.subject = wait, tenant, external_id
        try:
            with self.client:
                self.ingest(data)
                self.ask(data.get("questions", []), answers=not no_answers)
        except PersonaTreeError as exc:
            raise CommandError(f"the API refused a demo call: {exc}") from exc
        self.say(
            "Where to look next",
            "make serve, then http://127.0.0.1:8008/admin/ (create a login: manage.py createsuperuser)",
            "API docs: http://127.0.0.1:8008/api/docs/  (schema at /api/schema/)",
            f"this subject's tree: GET /v1/subjects/{external_id}/tree with an API key (manage.py create_tenant)",
        )

    def ingest(self, data: dict) -> None:
        last_op = OpRecord.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        pairs_per_chunk = self.tenant.chunk_pairs or conf.get().ingest.chunk_pairs
        for session in data["sessions"]:
            batch: list[dict] = []
            for i, msg in enumerate(session["messages"]):
                batch.append(
                    {
                        "role": msg["role"],
                        "content": msg["content"],
                        "idempotency_key": f"{session['session_id']}:{i}",
                        "ts": session.get("started_at"),
                        "session_id": session["session_id"],
                    }
                )
                pairs = sum(1 for m in batch if m["role"] == "assistant")
                if pairs == pairs_per_chunk or i == len(session["messages"]) - 1:
                    last_op = self.post_batch(batch, last_op)
                    batch = []
        self.stdout.write(self.style.HTTP_INFO("\n-> flushing the last partial window"))
        started = time.perf_counter()
        self.client.flush(self.subject)
        self.wait_idle()
        self.report_changes(last_op, time.perf_counter() - started)
        subject = Subject.objects.get(tenant=self.tenant, external_id=self.subject)
        status = self.client.ingest_status(self.subject)
        self.say(f"Final tree (version {subject.head_version}, as the API returns it to a read key)")
        tree = self.client.tree(self.subject)
        sources = leaf_sources(subject)
        for path, value in tree.tree.items():
            self.stdout.write(f"  {path}: {value}")
            for sentence in sources.get(path, []):
                self.stdout.write(f'      <- "{sentence}"')
        self.stdout.write(f"ingest status: {json.dumps(status.chunks)}")

    def post_batch(self, batch, last_op) -> int:
        started = time.perf_counter()
        first = batch[0]["content"][:60]
        self.stdout.write(
            self.style.HTTP_INFO(
                f'\n-> POST {len(batch)} messages ("{first}..."); a complete window closes a chunk'
            )
        )
        self.stdout.write(
            "   the MemListener writes ops for it now (a few seconds to a minute per chunk on CPU)..."
        )
        self.stdout.flush()
        # The previous demo run's subject was erased above; re-creating an erased subject must be asked for.
        result = self.client.ingest(self.subject, batch, recreate_erased=True)
        self.wait_idle()
        self.stdout.write(
            f"   {len(result.accepted)} accepted, {result.chunks_created} chunk(s) closed, cursor {result.cursor}"
        )
        return self.report_changes(last_op, time.perf_counter() - started)

    def report_changes(self, last_op: int, seconds: float) -> int:
        records = list(
            OpRecord.objects.filter(
                subject__tenant=self.tenant, subject__external_id=self.subject, pk__gt=last_op
            ).select_related("version")
        )
        for r in records:
            where = f"v{r.version.number}" if r.version_id else f"base v{r.base_version}"
            value = f' "{r.new_value}"' if r.new_value else ""
            line = f"   [{where}] {r.status:<14} {r.op_type}({r.path or ''}{',' + value if value else ''})"
            if r.status == "rejected":
                line += f"  <- {r.reason_code}: {r.detail}"
            elif r.op_type == "NO_OP" and r.detail:
                line += f"  ({r.detail})"
            style = self.style.ERROR if r.status == "rejected" else self.style.SUCCESS
            self.stdout.write(style(line))
            if r.source_text:
                self.stdout.write(f'        from the user\'s words: "{r.source_text}"')
        if not records:
            self.stdout.write("   (no chunk closed yet)")
        self.stdout.write(f"   took {seconds:.1f} s")
        return max([last_op, *(r.pk for r in records)])

    def ask(self, questions: list[dict], *, answers: bool) -> None:
        from personatree_client import APIError

        for q in questions:
            endpoint = "answer" if answers else "context"
            self.say(f"Q ({q['mode']}): {q['query']}")
            self.stdout.write(f"   calling /{endpoint} ...")
            self.stdout.flush()
            try:
                ask = self.client.answer if answers else self.client.context
                body = ask(self.subject, q["query"], mode=q["mode"])
            except APIError as exc:
                if not answers:
                    raise
                self.stdout.write(self.style.WARNING(f"   /answer failed ({exc}); showing /context"))
                body = self.client.context(self.subject, q["query"], mode=q["mode"])
            self.stdout.write(f"   router: {body.mode_used} ({body.router.get('reason')})")
            self.stdout.write(
                f"   tree context: {body.context.tokens} tokens, {len(body.context.paths)} leaves"
            )
            for ev in body.evidence[:3]:
                text = ev.get("text", "").replace("\n", " ")[:110]
                src = ev.get("source") or {}
                self.stdout.write(
                    f"   evidence {ev.get('score', 0):.3f} msgs {src.get('start_seq')}-{src.get('end_seq')}: {text}"
                )
            for notice in body.notices:
                self.stdout.write(self.style.WARNING(f"   note: {notice}"))
            if getattr(body, "answer", ""):
                self.stdout.write(self.style.SUCCESS(f"   answer: {body.answer}"))
            self.stdout.write(f"   timings: {body.timings_ms}")

    def wait_idle(self) -> None:
        """With a real worker (--url), wait until the subject has no pending or processing chunk."""
        if not self.remote:
            return  # eager Celery: the chunks were applied inside the request
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            chunks = self.client.ingest_status(self.subject).chunks
            if not chunks.get("pending") and not chunks.get("processing"):
                return
            time.sleep(0.5)
        raise CommandError(f"chunks still pending after {self.wait:.0f} s: is the Celery worker running?")

    def say(self, title: str, *lines: str) -> None:
        self.stdout.write(self.style.MIGRATE_HEADING(f"\n== {title}"))
        for line in lines:
            self.stdout.write(f"   {line}")


def client_for(raw_key: str, url: str = ""):
    """The Python client over HTTP (``--url``), or through this process's WSGI app (eager Celery:
    each chunk is applied inside its request)."""
    from django.core.wsgi import get_wsgi_application
    from personatree_client import PersonaTree

    if url:
        return PersonaTree(url, raw_key, timeout=600.0)
    transport = httpx.WSGITransport(app=get_wsgi_application())
    return PersonaTree("http://127.0.0.1", raw_key, timeout=600.0, transport=transport)


def leaf_sources(subject: Subject) -> dict[str, list[str]]:
    """Per leaf, the user sentences behind its current value: the applied ops since the leaf was
    last emptied, oldest first (each value is traceable to the user's words)."""
    out: dict[str, list[str]] = {}
    records = OpRecord.objects.filter(subject=subject, status__in=["applied", "approved"]).order_by("pk")
    for r in records.only("path", "op_type", "source_text"):
        if r.op_type == "DELETE":
            out.pop(r.path, None)
        elif r.source_text and r.source_text not in out.get(r.path, []):
            out.setdefault(r.path, []).append(r.source_text)
    return out


BACKENDS = {
    "extractive": "extractive fact pipeline (no language model: short dated facts, each in its trained leaf)",
    "standin": "STAND-IN engine (no model: emits NO_OP/deterministic ops; for smoke runs only)",
    "recorded": "RECORDED model outputs (replayed from a recording file, no live model)",
}


def describe_backend(cfg: conf.Settings) -> str:
    backend = cfg.listener.backend
    if backend == "local":
        return f"llama.cpp in process, model {cfg.models.model_path}"
    where = cfg.listener.url if backend == "ray" else cfg.models.base_url
    return BACKENDS.get(backend, f"{backend} at {where}")
