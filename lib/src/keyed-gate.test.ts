import { test } from "uvu";
import * as assert from "uvu/assert";
import { Code, ConnectError, retryAfterHint } from "./errors.ts";
import { KeyedGate } from "./keyed-gate.ts";

/** A write that finishes when the test says so. */
function held() {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { release, write: () => done };
}

/** A gate that refuses waits past 5 s, on a clock the test moves, whose key A has run one task taking `paceMs`. */
async function pacedGate(limit: number, paceMs: number) {
  const clock = { now: 0 };
  const gate = new KeyedGate(limit, 256, 5_000, () => clock.now);
  const first = await gate.acquire("A");
  clock.now += paceMs;
  first();
  return { gate, clock };
}

/** A task refused its wait: RESOURCE_EXHAUSTED, with when to retry (seconds) and why. */
function assertRefused(err: unknown, retryAfter: number, message: RegExp): void {
  assert.instance(err, ConnectError);
  assert.is((err as ConnectError).code, Code.ResourceExhausted);
  assert.is(retryAfterHint(err as ConnectError), retryAfter);
  assert.match((err as ConnectError).rawMessage, message);
}

test("one product's writes beyond the limit wait in order; another product's pass at once", async () => {
  const gate = new KeyedGate(2, 1);
  const order: string[] = [];
  const a = [held(), held(), held()];
  const runs = a.map((h, i) => gate.run("A", async () => (order.push(`A${i}`), h.write())));
  const b = held();
  const bRun = gate.run("B", async () => (order.push("B0"), b.write()));
  await new Promise((r) => setImmediate(r));
  assert.equal(order, ["A0", "A1", "B0"]);
  assert.equal(gate.load("A"), { running: 2, waiting: 1 });
  // A fourth of A finds the waiting line full: refused as busy, to be sent again after the hint.
  const refused = await gate.run("A", async () => undefined).catch((e: unknown) => e);
  assert.instance(refused, ConnectError);
  assert.is((refused as ConnectError).code, Code.ResourceExhausted);
  assert.is(retryAfterHint(refused as ConnectError), 1);
  a[0]!.release();
  await runs[0];
  await new Promise((r) => setImmediate(r));
  assert.equal(order, ["A0", "A1", "B0", "A2"]);
  for (const h of [...a, b]) h.release();
  await Promise.all([...runs, bRun]);
  assert.equal(gate.load("A"), { running: 0, waiting: 0 });
});

test("a failed write frees its place", async () => {
  const gate = new KeyedGate(1);
  await gate.run("A", async () => Promise.reject(new Error("boom"))).catch(() => {});
  assert.is(await gate.run("A", async () => 7), 7);
  assert.equal(gate.load("A"), { running: 0, waiting: 0 });
});

test("a place given back twice is given back once", async () => {
  const gate = new KeyedGate(1);
  const release = await gate.acquire("A");
  const second = gate.acquire("A");
  release();
  release();
  const releaseSecond = await second;
  assert.equal(gate.load("A"), { running: 1, waiting: 0 });
  releaseSecond();
  assert.equal(gate.load("A"), { running: 0, waiting: 0 });
});

test("with maxWaitMs, a task is refused when the line ahead takes longer at the key's recent pace", async () => {
  // Tasks of A have taken 2 s each.
  const { gate } = await pacedGate(2, 2_000);
  const running = [await gate.acquire("A"), await gate.acquire("A")];
  // Each waiting one adds 1 s (2 s over 2 places) to its own 2 s: 3 wait, the fourth would be done in 6 s.
  const waiting = Array.from({ length: 3 }, () => gate.acquire("A"));
  assertRefused(await gate.acquire("A").catch((e: unknown) => e), 1, /ahead of this one take about 6 s with it; retry in 1 s/);
  // Another key has no such line.
  (await gate.acquire("B"))();
  // Quick tasks: the line empties fast, so it is let wait again.
  for (const r of running) r();
  for (const w of waiting) (await w)();
  assert.equal(gate.load("A"), { running: 0, waiting: 0 });
  for (let i = 0; i < 10; i++) (await gate.acquire("A"))();
  const many = [await gate.acquire("A"), await gate.acquire("A")];
  const queued = Array.from({ length: 20 }, () => gate.acquire("A"));
  for (const r of many) r();
  for (const q of queued) (await q)();
});

test("with maxWaitMs, a task already waiting is refused once its wait and its own turn pass it", async () => {
  // Tasks of A have taken 1 s: two more may wait (2 s and 3 s with their own turns).
  const { gate, clock } = await pacedGate(1, 1_000);
  clock.now = 0;
  const running = await gate.acquire("A");
  const second = gate.acquire("A");
  const third = gate.acquire("A");
  // The running one takes 4.5 s: the pace is now about 2 s, so the third, having waited 4.5 s,
  // would pass 5 s with its own turn. It is told at once, with the time its place is still away.
  clock.now = 4_500;
  running();
  assertRefused(await third.catch((e: unknown) => e), 3, /waited 5 s behind others of its product, which take about 2 s each; retry in 3 s/);
  (await second)();
  assert.equal(gate.load("A"), { running: 0, waiting: 0 });
});

test("with maxWaitMs and no pace yet (a burst before any task finished), waiting tasks are refused when it passes", async () => {
  const gate = new KeyedGate(1, 256, 200);
  const running = await gate.acquire("A");
  const started = performance.now();
  const waiting = [gate.acquire("A"), gate.acquire("A")];
  const refused = await Promise.all(waiting.map((w) => w.catch((e: unknown) => e)));
  assert.ok(performance.now() - started >= 190, "not before maxWaitMs");
  for (const err of refused) {
    assert.instance(err, ConnectError);
    assert.is(retryAfterHint(err as ConnectError), 1);
  }
  assert.equal(gate.load("A"), { running: 1, waiting: 0 });
  running();
  (await gate.acquire("A"))();
  assert.equal(gate.load("A"), { running: 0, waiting: 0 });
});

test("limit 0 runs everything at once", async () => {
  const gate = new KeyedGate(0);
  const hs = [held(), held(), held()];
  let started = 0;
  const runs = hs.map((h) => gate.run("A", async () => (started++, h.write())));
  await new Promise((r) => setImmediate(r));
  assert.is(started, 3);
  for (const h of hs) h.release();
  await Promise.all(runs);
});

test.run();
