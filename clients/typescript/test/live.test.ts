// The client against a live server (PERSONATREE_URL, PERSONATREE_API_KEY with ingest, read, write
// and erase), started by tests/client/test_typescript_live.py; the retry tests use a fake fetch.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  NotFoundError,
  PersonaTree,
  RateLimitError,
  SubjectErasedError,
  retryAfterSeconds,
  type Message,
} from "../src/index.js";

const baseUrl = process.env.PERSONATREE_URL;
const apiKey = process.env.PERSONATREE_API_KEY ?? "";
const live = { skip: baseUrl ? false : "PERSONATREE_URL is not set (run tests/client/test_typescript_live.py)" };

const FACTS = ["I work as a nurse at the city hospital.", "I moved to Lisbon last spring.", "My sister Ana lives in Porto."];

function conversation(pairs: number): Message[] {
  return Array.from({ length: pairs }, (_, i) => [
    { role: "user" as const, content: FACTS[i % FACTS.length] as string },
    { role: "assistant" as const, content: `Noted (${i}).` },
  ]).flat();
}

function client(options: Partial<ConstructorParameters<typeof PersonaTree>[0]> = {}): PersonaTree {
  return new PersonaTree({ baseUrl: baseUrl as string, apiKey, ...options });
}

describe("against the live server", live, () => {
  test("ingest in batches, wait, tree, versions, context, search, erase", async () => {
    const pt = client({ maxBatchMessages: 5 });
    const subject = `ts-${randomUUID()}`;
    const messages = conversation(6); // 12 messages: three batches
    const stored = await pt.ingest(subject, messages);
    assert.equal(stored.accepted.length, 12);
    assert.equal(stored.cursor, 12);
    assert.ok(messages.every((m) => typeof m.idempotency_key === "string"));
    const again = await pt.ingest(subject, messages); // the same keys: nothing new
    assert.equal(again.accepted.length, 0);
    assert.equal(again.duplicates.length, 12);

    await pt.waitUntilApplied(subject, { timeoutMs: 30_000, pollMs: 100 });
    const tree = await pt.tree(subject);
    assert.ok(tree.version >= 1 && Object.keys(tree.tree).length > 0);
    const versions = [];
    for await (const version of pt.versions(subject, 1)) versions.push(version);
    assert.equal(versions.length, tree.version);

    const context = await pt.context(subject, "Where do I live?", { mode: "fast" });
    assert.equal(context.mode_used, "fast");
    assert.ok(context.context.text.length > 0);

    await pt.setLeaf(subject, "identity/location/current_city", "Lisbon");
    const found = await pt.search(subject, "which city do I live in", { prefix: "identity/" });
    assert.ok(found.leaves.some((leaf) => leaf.path === "identity/location/current_city"));

    const erased = await pt.erase(subject);
    assert.equal(erased.erased, true);
    await assert.rejects(pt.ingest(subject, conversation(1)), SubjectErasedError);
  });

  test("leaf history, diff and revert", async () => {
    const pt = client();
    const subject = `ts-${randomUUID()}`;
    const path = "behaviour/habits/exercise";
    await pt.ingest(subject, [{ role: "user", content: "hello" }]);
    const first = (await pt.setLeaf(subject, path, "running")).version;
    await pt.setLeaf(subject, path, "swimming");
    const history = [];
    for await (const change of pt.leafHistory(subject, path, 1)) history.push(change); // two pages
    assert.deepEqual(
      history.map((c) => [c.op, c.value]),
      [
        ["ADD", "running"],
        ["UPDATE", "swimming"],
      ],
    );
    const diff = await pt.diff(subject, first, first + 1);
    assert.equal(diff.changes.length, 1);
    const back = await pt.revert(subject, first, first + 1);
    assert.equal(back.status, "applied");
    assert.equal((await pt.leaf(subject, path)).value, "running");
  });

  test("subjects are iterated lazily across pages", async () => {
    const pt = client();
    const prefix = `ts-${randomUUID()}`;
    for (const n of [1, 2, 3]) await pt.ingest(`${prefix}-${n}`, [{ role: "user", content: "hi" }]);
    const ids = [];
    for await (const subject of pt.subjects(1)) ids.push(subject.external_id);
    assert.deepEqual(ids.filter((id) => id.startsWith(prefix)).sort(), [1, 2, 3].map((n) => `${prefix}-${n}`));
  });

  test("a JSONL import, polled and listed", async () => {
    const pt = client();
    const history = readFileSync(new URL("../../../../tests/fixtures/backfill/history.jsonl", import.meta.url), "utf8");
    const label = `ts-${randomUUID()}`;
    const job = await pt.createImport(history, label);
    assert.equal(job.source, label);
    assert.equal(job.lines, 3);
    const polled = await pt.getImport(job.id);
    assert.equal(polled.status, "done");
    const again = await pt.createImport(history, label); // the same keys: nothing new
    assert.equal((await pt.getImport(again.id)).duplicates, polled.new_messages);
    const ids = [];
    for await (const each of pt.imports(1)) ids.push(each.id);
    assert.deepEqual(ids.slice(0, 2), [again.id, job.id]);
    await assert.rejects(pt.createImport([{ subject: "x", messages: [{ role: "nobody" }] }]), BadRequestError);
  });

  test("problems are typed errors; a batch's field is indexed in the whole call", async () => {
    await assert.rejects(client({ apiKey: "pt_live_nope_nope" }).tree("x"), AuthenticationError);
    const pt = client({ maxBatchMessages: 2 });
    await assert.rejects(pt.tree(`ts-${randomUUID()}`), (error: unknown) => {
      assert.ok(error instanceof NotFoundError);
      assert.equal(error.status, 404);
      assert.equal(typeof error.problem.type, "string");
      return true;
    });
    const messages: Message[] = [...conversation(1), { role: "user", content: "" }];
    await assert.rejects(pt.ingest(`ts-${randomUUID()}`, messages), (error: unknown) => {
      assert.ok(error instanceof BadRequestError);
      assert.equal(error.field, "messages[2].content");
      assert.equal((error.partial as { accepted: unknown[] }).accepted.length, 2);
      return true;
    });
  });
});

describe("retries (fake fetch)", () => {
  function fakeFetch(answers: Array<[number, Record<string, string>]>, calls: number[]): typeof fetch {
    return (async () => {
      const [status, headers] = answers[Math.min(calls.length, answers.length - 1)] as [number, Record<string, string>];
      calls.push(status);
      const body = status < 400 ? '{"external_id":"a"}' : JSON.stringify({ code: "throttled", detail: "slow down", status });
      return new Response(body, { status, headers: { "content-type": "application/json", ...headers } });
    }) as typeof fetch;
  }

  test("429 and 503 are retried after Retry-After", async () => {
    const calls: number[] = [];
    const answers: Array<[number, Record<string, string>]> = [
      [429, { "retry-after": "0" }],
      [503, {}],
      [200, {}],
    ];
    const pt = new PersonaTree({ baseUrl: "http://127.0.0.1:9", apiKey: "k", retry: { backoff: 0.01 }, fetch: fakeFetch(answers, calls) });
    assert.equal((await pt.subject("a")).external_id, "a");
    assert.deepEqual(calls, [429, 503, 200]);
  });

  test("a Retry-After longer than maxWait is raised at once", async () => {
    const calls: number[] = [];
    const pt = new PersonaTree({ baseUrl: "http://127.0.0.1:9", apiKey: "k", retry: { maxWait: 5 }, fetch: fakeFetch([[429, { "retry-after": "60" }]], calls) });
    await assert.rejects(pt.subject("a"), (error: unknown) => {
      assert.ok(error instanceof RateLimitError);
      assert.equal(error.retryAfter, 60);
      return true;
    });
    assert.equal(calls.length, 1);
  });

  test("Retry-After as an HTTP date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(retryAfterSeconds("Thu, 01 Jan 2026 00:00:30 GMT", now), 30);
    assert.equal(retryAfterSeconds("soon", now), undefined);
  });
});
