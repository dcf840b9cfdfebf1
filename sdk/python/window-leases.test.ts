// The Python client's budget leases cover the windows of a plan's `limits` (BUDGETS.md §1: a lease
// covers every dimension a call touches; a call is admitted only if every slice suffices): 4 replica
// processes (bench/lease_replica.py; two Meter over threads, two AsyncMeter over tasks) share one
// user's windows against the real stack, as the TypeScript client's replicas do in
// gateway/routes/window-leases.test.ts.
import { spawn } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { windowedUser } from "../../bench/lease-run.ts";
import { eventually } from "../../test/support/eventually.ts";
import type { Api } from "../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import { ensureVenv, pythonRoot, venvBin } from "./venv.ts";

const t = suite<{ stack: TestStack; api: Api; apiKey: string }>("sdk/python: budget leases of windows across 4 replica processes");

t.before(async (ctx) => {
  await ensureVenv();
  ctx.stack = await startTestStack();
  const p = await ctx.stack.newProduct();
  ctx.api = p.api;
  ctx.apiKey = p.apiKey;
});
t.after(async (ctx) => {
  await ctx.stack?.close();
});

interface ReplicaResult {
  calls: number;
  refused: number;
  delivered: boolean;
  lease_requests: number;
  /** When each call was admitted (epoch ms). */
  admitted: number[];
  /** "<gate_reason> <resets_at>" of the refusals. */
  reasons: string[];
}

/** Starts 4 replicas (2 Meter, 2 AsyncMeter), lets them load the user's view, starts them at once; their figures. */
async function runReplicas(ctx: { stack: TestStack; apiKey: string }, user: string, env: Record<string, string>): Promise<ReplicaResult[]> {
  const replicas = ["sync", "async", "sync", "async"].map((kind) => {
    const child = spawn(venvBin("python"), ["-m", "bench.lease_replica"], {
      cwd: pythonRoot,
      env: { ...process.env, METER_API_KEY: ctx.apiKey, METER_BASE_URL: ctx.stack.apiUrl, LEASE_USER: user, LEASE_KIND: kind, LEASE_CONCURRENCY: "5", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    let onReady = () => {};
    const ready = new Promise<void>((resolve) => (onReady = resolve));
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("ready\n")) onReady();
    });
    child.stderr.on("data", (d) => (err += d));
    const done = new Promise<ReplicaResult>((resolve, reject) =>
      child.once("close", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop()!)) : reject(new Error(`${kind} replica exited ${code}: ${err.slice(-3000)}`)))),
    );
    return { child, ready, done };
  });
  // A replica that fails while setting up rejects `done` instead of printing "ready".
  await Promise.race([Promise.all(replicas.map((r) => r.ready)), Promise.all(replicas.map((r) => r.done))]);
  for (const r of replicas) r.child.stdin.end("go\n");
  return Promise.all(replicas.map((r) => r.done));
}

t("4 replica processes with leases: a 60-requests/minute limit admits at most 60 calls in any minute (0 over)", async (ctx) => {
  const user = await windowedUser(ctx.api, [{ name: "rpm", metric: "requests", max: 60, window: "minute" }]);
  // From the replicas' start through 6 s into the next minute: two windows, the second granted anew.
  const results = await runReplicas(ctx, user, { LEASE_UNTIL_MINUTE_PLUS: "6000" });
  const perMinute = new Map<number, number>();
  for (const r of results) for (const at of r.admitted) perMinute.set(at - (at % 60_000), (perMinute.get(at - (at % 60_000)) ?? 0) + 1);
  const counts = [...perMinute].sort(([a], [b]) => a - b).map(([m, n]) => `${new Date(m).toISOString().slice(11, 16)}: ${n}`);
  for (const n of perMinute.values()) assert.ok(n <= 60, `calls admitted per minute: ${counts.join(", ")}`);
  assert.is(perMinute.size, 2, `the run spans two minutes: ${counts.join(", ")}`);
  assert.ok(results.every((r) => r.lease_requests > 0), "every replica asked for leases");
  assert.ok(results.reduce((a, r) => a + r.refused, 0) > 0, "calls past the limit were refused");
  for (const reason of new Set(results.flatMap((r) => r.reasons))) {
    const [gate, resets] = reason.split(" ");
    assert.is(gate, "limit:rpm", reason);
    assert.is(Date.parse(resets!) % 60_000, 0, `resets at a minute's start: ${reason}`);
  }
  assert.ok(results.every((r) => r.delivered), "every replica delivered its events");
  const calls = results.reduce((a, r) => a + r.calls, 0);
  assert.is(calls, results.reduce((a, r) => a + r.admitted.length, 0));
});

t("4 replica processes with leases: $1 a day is never overspent", async (ctx) => {
  // A call is estimated at $0.002 and costs $0.0015: about 666 calls fit.
  const user = await windowedUser(ctx.api, [{ name: "daily", metric: "spend", max: 1, window: "day" }], 0.001);
  const results = await runReplicas(ctx, user, {});
  const calls = results.reduce((a, r) => a + r.calls, 0);
  assert.ok(results.every((r) => r.delivered), "every replica delivered its events");
  // Every event counted by the service (delivered, then counted in the background).
  const daily = await eventually(async () => {
    const d = (await ctx.api.get(`/users/${user}/limits`)).body.limits.find((l: { reason: string }) => l.reason === "limit:daily");
    return d.used >= calls * 0.0015 - 1e-6 ? d : null;
  }, 120_000, "the service to count every call");
  assert.ok(daily.used <= 1 + 1e-9, `the service counted $${daily.used} of a $1 day (${calls} calls)`);
  assert.ok(calls * 0.0015 <= 1 + 1e-9, `${calls} calls of $0.0015 ran`);
  assert.ok(daily.used >= 0.5, `the replicas spent most of it: $${daily.used}`);
  assert.equal([...new Set(results.flatMap((r) => r.reasons.map((x) => x.split(" ")[0])))], ["limit:daily"]);
});

t.run();
