"""`manage.py demo` (what `make demo` runs): the real pipeline on the embedded default.

It creates a tenant and an API key, sends the bundled conversation
(`memory/demo/conversation.json`, written for the project) through the ingest
API one chunk-sized batch at a time, prints each new tree version with its
ops and rejections, then asks the query API a few questions in fast, auto and
deep mode and prints the answers, evidence and router decisions. Everything
goes through the same HTTP views, services, workers and models as production;
only the wiring differs (SQLite, eager Celery, Milvus Lite on a file, the local
GGUF MemListener), as chosen by settings.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test import Client

from memory.models import OpRecord, Subject, Tenant
from memory.services.subjects import api_key_create, subject_erase, tenant_create

CONVERSATION = Path(__file__).resolve().parents[2] / "demo" / "conversation.json"
TENANT_NAME = "demo"
# Library chatter that would drown the demo's own output (task traces, model loaders, Milvus Lite's
# embedded gRPC server). Warnings and errors of our own code still show.
QUIET_LOGGERS = ("celery", "personatree.tasks", "faiss", "milvus_lite", "grpc", "kombu", "memory.recall")


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
        cfg = settings.PERSONATREE
        db = settings.DATABASES["default"]
        self.say(
            "PersonaTree demo",
            f"database: {db['ENGINE'].rsplit('.', 1)[-1]} {db.get('NAME')}",
            f"celery: {'eager (in process)' if settings.CELERY_TASK_ALWAYS_EAGER else settings.CELERY_BROKER_URL}",
            f"memlistener: {describe_backend(cfg)}",
            f"evidence index: Milvus at {cfg['MILVUS_URI']}",
        )
        tenant = Tenant.objects.filter(name=TENANT_NAME).first() or tenant_create(name=TENANT_NAME)
        # The demo plays the subject's own assistant: read_special lets it see evidence (raw dialogue
        # counts as the special tier) and special-tier leaves.
        _, raw_key = api_key_create(tenant=tenant, scopes=["ingest", "read", "read_special"], name="demo")
        external_id = data["subject"]
        old = Subject.objects.filter(tenant=tenant, external_id=external_id).first()
        if old is not None:
            subject_erase(subject=old, erased_by="demo restart")
            self.stdout.write(f"(erased the previous demo subject {external_id!r}; a tombstone remains)")
        self.client = Api(raw_key, url)
        self.wait = wait
        self.base = f"/v1/subjects/{external_id}"

        self.ingest(data, tenant, external_id)
        self.ask(data.get("questions", []), answers=not no_answers)
        self.say(
            "Where to look next",
            "make serve, then http://127.0.0.1:8008/admin/ (create a login: manage.py createsuperuser)",
            "API docs: http://127.0.0.1:8008/api/docs/  (schema at /api/schema/)",
            f"this subject's tree: GET {self.base}/tree with an API key (manage.py create_tenant)",
        )

    # --- ingestion ---------------------------------------------------------------------------
    def ingest(self, data: dict, tenant: Tenant, external_id: str) -> None:
        last_op = OpRecord.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
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
                if pairs == cfg_pairs(tenant) or i == len(session["messages"]) - 1:
                    last_op = self.post_batch(batch, tenant, external_id, last_op)
                    batch = []
        self.stdout.write(self.style.HTTP_INFO("\n-> flushing the last partial window"))
        started = time.perf_counter()
        self.check_response(self.client.post(f"{self.base}/flush"), 202)
        self.wait_idle()
        self.report_changes(tenant, external_id, last_op, time.perf_counter() - started)
        subject = Subject.objects.get(tenant=tenant, external_id=external_id)
        status = self.check_response(self.client.get(f"{self.base}/ingest"), 200)
        self.say(f"Final tree (version {subject.head_version}, as the API returns it to a read key)")
        tree = self.check_response(self.client.get(f"{self.base}/tree"), 200)
        sources = leaf_sources(subject)
        for path, value in tree["tree"].items():
            self.stdout.write(f"  {path}: {value}")
            for sentence in sources.get(path, []):
                self.stdout.write(f'      <- "{sentence}"')
        self.stdout.write(f"ingest status: {json.dumps(status.get('chunks', status))}")

    def post_batch(self, batch, tenant, external_id, last_op) -> int:
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
        payload = {"messages": batch, "recreate_erased": True}
        body = self.check_response(self.client.post(f"{self.base}/messages", payload), 202)
        self.wait_idle()
        self.stdout.write(
            f"   {len(body['accepted'])} accepted, {body['chunks_created']} chunk(s) closed, cursor {body['cursor']}"
        )
        return self.report_changes(tenant, external_id, last_op, time.perf_counter() - started)

    def report_changes(self, tenant, external_id, last_op: int, seconds: float) -> int:
        records = list(
            OpRecord.objects.filter(
                subject__tenant=tenant, subject__external_id=external_id, pk__gt=last_op
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

    # --- queries -------------------------------------------------------------------------------
    def ask(self, questions: list[dict], *, answers: bool) -> None:
        for q in questions:
            endpoint = "answer" if answers else "context"
            self.say(f"Q ({q['mode']}): {q['query']}")
            self.stdout.write(f"   calling /{endpoint} ...")
            self.stdout.flush()
            payload = {"query": q["query"], "mode": q["mode"]}
            response = self.client.post(f"{self.base}/{endpoint}", payload)
            if response[0] != 200 and answers:
                self.stdout.write(self.style.WARNING(f"   /answer failed ({response[1]}); showing /context"))
                response = self.client.post(f"{self.base}/context", payload)
            body = self.check_response(response, 200)
            router = body.get("router") or {}
            self.stdout.write(f"   router: {body['mode_used']} ({router.get('reason')})")
            self.stdout.write(
                f"   tree context: {body['context']['tokens']} tokens, {len(body['context']['paths'])} leaves"
            )
            for ev in body.get("evidence", [])[:3]:
                text = ev.get("text", "").replace("\n", " ")[:110]
                src = ev.get("source") or {}
                self.stdout.write(
                    f"   evidence {ev.get('score', 0):.3f} msgs {src.get('start_seq')}-{src.get('end_seq')}: {text}"
                )
            for notice in body.get("notices", []):
                self.stdout.write(self.style.WARNING(f"   note: {notice}"))
            if "answer" in body:
                self.stdout.write(self.style.SUCCESS(f"   answer: {body['answer']}"))
            self.stdout.write(f"   timings: {body['timings_ms']}")

    # --- helpers --------------------------------------------------------------------------------
    def check_response(self, response: tuple[int, dict], expected: int) -> dict:
        status, body = response
        if status != expected:
            raise CommandError(f"expected HTTP {expected}, got {status}: {json.dumps(body)[:500]}")
        return body

    def wait_idle(self) -> None:
        """With a real worker (--url), wait until the subject has no pending or processing chunk."""
        if not self.client.remote:
            return  # eager Celery: the chunks were applied inside the request
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            chunks = self.check_response(self.client.get(f"{self.base}/ingest"), 200).get("chunks", {})
            if not chunks.get("pending") and not chunks.get("processing"):
                return
            time.sleep(0.5)
        raise CommandError(f"chunks still pending after {self.wait:.0f} s: is the Celery worker running?")

    def say(self, title: str, *lines: str) -> None:
        self.stdout.write(self.style.MIGRATE_HEADING(f"\n== {title}"))
        for line in lines:
            self.stdout.write(f"   {line}")


class Api:
    """The same calls in process (Django test client, eager Celery) or over HTTP (``--url``)."""

    def __init__(self, raw_key: str, url: str = "") -> None:
        self.remote = bool(url)
        headers = {"Authorization": f"Bearer {raw_key}"}
        if url:
            self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=600.0)
        else:
            self.local = Client(HTTP_AUTHORIZATION=headers["Authorization"], HTTP_HOST="127.0.0.1")

    def post(self, path: str, payload: dict | None = None) -> tuple[int, dict]:
        if self.remote:
            r = self.http.post(path, json=payload or {})
            return r.status_code, r.json()
        r = self.local.post(path, data=payload or {}, content_type="application/json")
        return r.status_code, r.json()

    def get(self, path: str) -> tuple[int, dict]:
        r = self.http.get(path) if self.remote else self.local.get(path)
        return r.status_code, r.json()


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


def describe_backend(cfg: dict) -> str:
    backend = cfg["MEMLISTENER_BACKEND"]
    if backend == "extractive":
        return (
            "extractive listener (no language model: each self-disclosing user sentence into its best leaf)"
        )
    if backend == "local":
        return f"llama.cpp in process, model {cfg['LOCAL_MODEL_PATH']}"
    if backend == "standin":
        return "STAND-IN engine (no model: emits NO_OP/deterministic ops; for smoke runs only)"
    if backend == "recorded":
        return "RECORDED model outputs (replayed from a recording file, no live model)"
    return f"{backend} at {cfg['MEMLISTENER_URL'] if backend == 'ray' else cfg['OPENAI_BASE_URL']}"


def cfg_pairs(tenant: Tenant) -> int:
    return tenant.chunk_pairs or settings.PERSONATREE["CHUNK_PAIRS"]
