// The client's overhead against raw fetch, same server, same run (called by bench/bench_client_ts.py).
// Each round makes CALLS `GET .../tree` calls through PersonaTree.tree() and CALLS through fetch +
// response.json(), which goes first alternating; then both against a canned answer (no server).
// Prints the per-round milliseconds and the canned per-call milliseconds as JSON.
import { performance } from "node:perf_hooks";

import { PersonaTree } from "../dist/src/index.js";

const { PERSONATREE_URL: url, PERSONATREE_API_KEY: key, BENCH_SUBJECT: subject } = process.env;
const rounds = Number(process.env.BENCH_ROUNDS ?? 100);
const calls = Number(process.env.BENCH_CALLS ?? 10);
const warmup = Number(process.env.BENCH_WARMUP ?? 20);

const pt = new PersonaTree({ baseUrl: url, apiKey: key });
const treeUrl = `${url}/v1/subjects/${encodeURIComponent(subject)}/tree`;
const headers = { Authorization: `Bearer ${key}`, Accept: "application/json" };

async function viaClient() {
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const tree = await pt.tree(subject);
    if (tree.version < 1) throw new Error("empty tree");
  }
  return performance.now() - started;
}

async function viaFetch() {
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const response = await fetch(treeUrl, { headers });
    const tree = await response.json();
    if (!response.ok || tree.version < 1) throw new Error(`raw fetch: ${response.status}`);
  }
  return performance.now() - started;
}

for (let i = 0; i < warmup; i++) {
  await viaClient();
  await viaFetch();
}
const client = [];
const raw = [];
for (let r = 0; r < rounds; r++) {
  if (r % 2) {
    raw.push(await viaFetch());
    client.push(await viaClient());
  } else {
    client.push(await viaClient());
    raw.push(await viaFetch());
  }
}

// The client's own cost per call without a server: both paths against a canned answer.
const body = JSON.stringify(await (await fetch(treeUrl, { headers })).json());
const canned = async () => new Response(body, { status: 200, headers: { "content-type": "application/json" } });
const offline = new PersonaTree({ baseUrl: url, apiKey: key, fetch: canned });
const N = 2000;
let started = performance.now();
for (let i = 0; i < N; i++) await offline.tree(subject);
const cannedClientMs = (performance.now() - started) / N;
started = performance.now();
for (let i = 0; i < N; i++) await (await canned(treeUrl, { headers })).json();
const cannedRawMs = (performance.now() - started) / N;
console.log(JSON.stringify({ client, raw, calls, cannedClientMs, cannedRawMs, node: process.version }));
