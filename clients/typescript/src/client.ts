// The client: each API operation as a method, typed by the generated schema (src/schema.ts).
import { randomUUID } from "node:crypto";

import { APIError, PersonaTreeError } from "./errors.js";
import { Transport, sleep, type RetryOptions } from "./http.js";
import type { components } from "./schema.js";

type S = components["schemas"];
export type MessageIn = S["MessagesIn"]["messages"][number];
/** A message to ingest; an `idempotency_key` is made up when missing (keep the object to replay it). */
export type Message = Omit<MessageIn, "idempotency_key" | "session_id"> & { idempotency_key?: string; session_id?: string };
export type IngestResult = S["IngestOut"];
export type IngestStatus = S["IngestStatusOut"];
/** Request fields with a server default are optional (the generator marks them required). */
export type QueryOptions = Partial<Omit<S["QueryIn"], "query">> & { timeoutMs?: number };
export type SearchOptions = Partial<Omit<S["SearchIn"], "query">> & { timeoutMs?: number };
export type AsOf = number | string | Date;

/** The server's defaults (`PERSONATREE_MAX_MESSAGES_PER_CALL`, `..._MAX_REQUEST_BYTES`). */
export const SERVER_MAX_MESSAGES_PER_CALL = 500;
export const SERVER_MAX_REQUEST_BYTES = 500 * (4 * 20_000 + 1024);

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Per request, in milliseconds (default 30 000). */
  timeoutMs?: number;
  retry?: RetryOptions;
  maxBatchMessages?: number;
  maxBatchBytes?: number;
  fetch?: typeof fetch;
}

/** Ingest is blocked by a failed chunk (its id is in `status.failures`). */
export class IngestBlockedError extends PersonaTreeError {
  override name = "IngestBlockedError";
  constructor(
    message: string,
    readonly status: IngestStatus,
  ) {
    super(message);
  }
}

export class WaitTimeoutError extends PersonaTreeError {
  override name = "WaitTimeoutError";
  constructor(
    message: string,
    readonly status: IngestStatus,
  ) {
    super(message);
  }
}

const encoder = new TextEncoder();

function asOfJson(asOf: AsOf): string | number {
  return asOf instanceof Date ? asOf.toISOString() : asOf;
}

function shiftMessageIndex(field: string, offset: number): string {
  return field.replace(/^messages\[(\d+)\]/, (_, n: string) => `messages[${Number(n) + offset}]`);
}

function mergeIngest(a: IngestResult, b: IngestResult): IngestResult {
  return {
    ...b,
    subject_created: a.subject_created || b.subject_created,
    accepted: [...a.accepted, ...b.accepted],
    duplicates: [...a.duplicates, ...b.duplicates],
    chunks_created: a.chunks_created + b.chunks_created,
  };
}

export class PersonaTree {
  readonly transport: Transport;
  private readonly maxBatchMessages: number;
  private readonly maxBatchBytes: number;

  constructor(options: ClientOptions) {
    this.transport = new Transport(
      options.baseUrl,
      { Authorization: `Bearer ${options.apiKey}`, Accept: "application/json" },
      options.timeoutMs ?? 30_000,
      options.retry ?? {},
      options.fetch ?? globalThis.fetch,
    );
    this.maxBatchMessages = options.maxBatchMessages ?? SERVER_MAX_MESSAGES_PER_CALL;
    this.maxBatchBytes = options.maxBatchBytes ?? SERVER_MAX_REQUEST_BYTES;
    if (this.maxBatchMessages < 1) throw new RangeError("maxBatchMessages must be at least 1");
  }

  private static subjectPath(subject: string, ...rest: string[]): string {
    return ["/v1/subjects", encodeURIComponent(subject), ...rest].join("/");
  }

  private static leafPath(subject: string, path: string): string {
    if (!path) throw new RangeError("path must be a leaf path such as 'identity/location/current_city'");
    return PersonaTree.subjectPath(subject, "tree", "leaves", path.split("/").map(encodeURIComponent).join("/"));
  }

  // --- ingest -----------------------------------------------------------------------------

  /** Request bodies of at most `maxBatchMessages` messages and `maxBatchBytes` bytes (a message
   * alone over the byte limit still goes alone, so the server's 413 names it). */
  *batches(messages: Message[], recreateErased = false): Generator<{ count: number; body: string }> {
    const head = '{"messages":[';
    let tail = recreateErased ? '],"recreate_erased":true}' : "]}";
    let parts: string[] = [];
    let size = head.length + tail.length;
    let sent = false;
    for (const message of messages) {
      message.idempotency_key ??= randomUUID();
      const encoded = JSON.stringify(message);
      const bytes = encoder.encode(encoded).length;
      if (parts.length && (parts.length >= this.maxBatchMessages || size + bytes + 1 > this.maxBatchBytes)) {
        yield { count: parts.length, body: head + parts.join(",") + tail };
        sent = true;
        tail = "]}";
        parts = [];
        size = head.length + tail.length;
      }
      parts.push(encoded);
      size += bytes + 1;
    }
    if (parts.length || !sent) yield { count: parts.length, body: head + parts.join(",") + tail };
  }

  /**
   * Append messages to the subject's log, in batches the server accepts, in order. The first error
   * stops the call; it carries `partial` (the batches stored before it) and a `field` indexed in the
   * whole call. A retried batch goes with the same idempotency keys.
   */
  async ingest(subject: string, messages: Message[], options: { recreateErased?: boolean } = {}): Promise<IngestResult> {
    const path = PersonaTree.subjectPath(subject, "messages");
    let result: IngestResult | undefined;
    let offset = 0;
    for (const { count, body } of this.batches(messages, options.recreateErased)) {
      let batch: IngestResult;
      try {
        batch = await this.transport.json<IngestResult>({ method: "POST", path, body });
      } catch (error) {
        if (error instanceof APIError) {
          error.partial = result;
          if (error.field && offset) (error as { field: string }).field = shiftMessageIndex(error.field, offset);
        }
        throw error;
      }
      offset += count;
      result = result ? mergeIngest(result, batch) : batch;
    }
    return result as IngestResult;
  }

  ingestStatus(subject: string): Promise<IngestStatus> {
    return this.transport.json({ method: "GET", path: PersonaTree.subjectPath(subject, "ingest") });
  }

  flush(subject: string): Promise<S["FlushOut"]> {
    return this.transport.json({ method: "POST", path: PersonaTree.subjectPath(subject, "flush") });
  }

  /** Poll until the log up to `cursor` (default: all of it) is in the tree. */
  async waitUntilApplied(
    subject: string,
    { cursor, flush = true, timeoutMs = 60_000, pollMs = 500 }: { cursor?: number; flush?: boolean; timeoutMs?: number; pollMs?: number } = {},
  ): Promise<IngestStatus> {
    const deadline = Date.now() + timeoutMs;
    if (flush) await this.flush(subject);
    for (;;) {
      const status = await this.ingestStatus(subject);
      if (status.blocked) throw new IngestBlockedError(`subject ${subject} is blocked by a failed chunk`, status);
      const done =
        cursor === undefined
          ? status.pending_chunks === 0 && status.unchunked_messages === 0
          : status.applied_through_seq >= cursor;
      if (done) return status;
      if (Date.now() + pollMs > deadline) {
        throw new WaitTimeoutError(`subject ${subject} not caught up after ${timeoutMs} ms`, status);
      }
      await sleep(pollMs / 1000);
    }
  }

  /** Run a failed chunk again (not sent again after a lost answer). */
  requeueChunk(subject: string, chunkId: number): Promise<S["ChunkOut"]> {
    const path = PersonaTree.subjectPath(subject, "chunks", String(Math.trunc(chunkId)), "requeue");
    return this.transport.json({ method: "POST", path, idempotent: false });
  }

  // --- bulk imports -------------------------------------------------------------------------

  /**
   * Send a JSONL body of histories (docs/BACKFILL.md: the text, or its lines as objects) to be
   * imported by the server; poll `getImport`. A bad line is a BadRequestError whose `field` names
   * it. `label` names the source whose message keys a re-import shares (default: the body's digest).
   * Not sent again after a lost answer (a second POST makes a second import).
   */
  createImport(source: string | object[], label?: string): Promise<S["ImportOut"]> {
    const body = typeof source === "string" ? source : source.map((line) => JSON.stringify(line)).join("\n") + "\n";
    return this.transport.json({
      method: "POST",
      path: "/v1/imports",
      query: { source: label },
      body,
      contentType: "application/x-ndjson",
      idempotent: false,
    });
  }

  getImport(importId: string): Promise<S["ImportOut"]> {
    return this.transport.json({ method: "GET", path: `/v1/imports/${encodeURIComponent(importId)}` });
  }

  /** The tenant's imports, newest first. */
  async *imports(pageSize?: number): AsyncGenerator<S["ImportOut"]> {
    for await (const page of this.transport.pages<S["ImportList"]>("/v1/imports", pageSize)) yield* page.imports;
  }

  // --- subjects and the tree ----------------------------------------------------------------

  /** Every subject of the key's tenant, page by page as you iterate. */
  async *subjects(pageSize?: number): AsyncGenerator<S["SubjectOut"]> {
    for await (const page of this.transport.pages<S["SubjectList"]>("/v1/subjects", pageSize)) yield* page.subjects;
  }

  subject(subject: string): Promise<S["SubjectOut"]> {
    return this.transport.json({ method: "GET", path: PersonaTree.subjectPath(subject) });
  }

  tree(subject: string, asOf?: AsOf): Promise<S["TreeOut"]> {
    const query = { as_of: asOf === undefined ? undefined : asOfJson(asOf) };
    return this.transport.json({ method: "GET", path: PersonaTree.subjectPath(subject, "tree"), query });
  }

  leaf(subject: string, path: string): Promise<S["LeafOut"]> {
    return this.transport.json({ method: "GET", path: PersonaTree.leafPath(subject, path) });
  }

  /** Set one leaf (`write` scope); `baseVersion`: ConflictError if the subject moved on. */
  setLeaf(subject: string, path: string, value: string, baseVersion?: number): Promise<S["LeafWriteOut"]> {
    const body: S["LeafIn"] = baseVersion === undefined ? { value } : { value, base_version: baseVersion };
    return this.transport.json({ method: "PUT", path: PersonaTree.leafPath(subject, path), body: JSON.stringify(body) });
  }

  /** Empty one leaf (`write` scope); not sent again after a lost answer. */
  deleteLeaf(subject: string, path: string, baseVersion?: number): Promise<S["LeafWriteOut"]> {
    const path_ = PersonaTree.leafPath(subject, path);
    return this.transport.json({ method: "DELETE", path: path_, query: { base_version: baseVersion }, idempotent: false });
  }

  /** Every value the leaf was given, oldest first. */
  async *leafHistory(subject: string, path: string, pageSize?: number): AsyncGenerator<S["LeafHistory"]["changes"][number]> {
    const url = PersonaTree.leafPath(subject, path) + "/history";
    for await (const page of this.transport.pages<S["LeafHistory"]>(url, pageSize)) yield* page.changes;
  }

  /** The version history, newest first. */
  async *versions(subject: string, pageSize?: number): AsyncGenerator<S["SubjectVersions"]["versions"][number]> {
    const path = PersonaTree.subjectPath(subject, "versions");
    for await (const page of this.transport.pages<S["SubjectVersions"]>(path, pageSize)) yield* page.versions;
  }

  /** The export's pages (each: the subject, its tree, and the next versions and ops). */
  exportPages(subject: string, pageSize?: number): AsyncGenerator<S["SubjectExport"]> {
    return this.transport.pages<S["SubjectExport"]>(PersonaTree.subjectPath(subject, "export"), pageSize);
  }

  diff(subject: string, a: number, b: number): Promise<S["VersionDiff"]> {
    const path = PersonaTree.subjectPath(subject, "versions", String(Math.trunc(a)), "diff", String(Math.trunc(b)));
    return this.transport.json({ method: "GET", path });
  }

  revert(subject: string, version: number, baseVersion?: number): Promise<S["RevertOut"]> {
    const body: S["BaseVersionIn"] = baseVersion === undefined ? {} : { base_version: baseVersion };
    const path = PersonaTree.subjectPath(subject, "versions", String(Math.trunc(version)), "revert");
    return this.transport.json({ method: "POST", path, body: JSON.stringify(body) });
  }

  /** Erase the subject, leaving a tombstone; not sent again after a lost answer. */
  erase(subject: string): Promise<S["SubjectErased"]> {
    return this.transport.json({ method: "DELETE", path: PersonaTree.subjectPath(subject), idempotent: false });
  }

  // --- queries ----------------------------------------------------------------------------

  private query<T>(subject: string, endpoint: string, query: string, options: QueryOptions): Promise<T> {
    const { timeoutMs, ...rest } = options;
    const body: Pick<S["QueryIn"], "query"> & typeof rest = { query, ...rest };
    const path = PersonaTree.subjectPath(subject, endpoint);
    return this.transport.json({ method: "POST", path, body: JSON.stringify(body), timeoutMs });
  }

  context(subject: string, query: string, options: QueryOptions = {}): Promise<S["ContextOut"]> {
    return this.query(subject, "context", query, options);
  }

  answer(subject: string, query: string, options: QueryOptions = {}): Promise<S["AnswerOut"]> {
    return this.query(subject, "answer", query, options);
  }

  search(subject: string, query: string, options: SearchOptions = {}): Promise<S["SearchOut"]> {
    const { timeoutMs, ...rest } = options;
    const body: Pick<S["SearchIn"], "query"> & typeof rest = { query, ...rest };
    const path = PersonaTree.subjectPath(subject, "search");
    return this.transport.json({ method: "POST", path, body: JSON.stringify(body), timeoutMs });
  }
}
