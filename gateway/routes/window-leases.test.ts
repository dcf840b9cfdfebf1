import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { runReplicas, windowedUser } from "../../bench/lease-run.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import type { Api } from "../../test/support/http.ts";

// Budget leases of the windows of a plan's `limits` over HTTP (BUDGETS.md §1: a lease covers
// every dimension a call touches): slices of a window's hard mark less what it counted and what
// other holders hold, settled once by the events spent from them, given back, and worth
// nothing once their window has ended.
const t = suite<{ stack: TestStack; api: Api; apiKey: string }>("budget leases of windows over HTTP and across replica processes");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  const p = await ctx.stack.newProduct();
  ctx.api = p.api;
  ctx.apiKey = p.apiKey;
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const RPM = "requests:minute::";
const DAILY = "spend:day::";
const close = (a: number, b: number, msg = "") => assert.ok(Math.abs(a - b) < 1e-6, `${msg} ${a} != ${b}`);
const acquire = (api: Api, user: string, body: Record<string, unknown>) => api.post(`/users/${user}/leases`, { need: 0, want: 0, ...body });
const minuteOf = (t: number) => new Date(t - (t % 60_000)).toISOString();
const call = (user: string, lease: string | null, at = new Date(), cost = 0) => ({
  id: randomUUID(),
  user_id: user,
  timestamp: at.toISOString(),
  model: "m",
  cost_total: cost,
  ...(lease ? { lease_id: lease } : {}),
});

t("a requests window: slices of N calls, an equal share among holders and one more, refused at the limit", async ({ api }) => {
  const user = await windowedUser(api, [{ name: "rpm", metric: "requests", max: 60, window: "minute" }]);
  // Early in a minute, so that every grant below is of the same window.
  if (Date.now() % 60_000 > 45_000) await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
  const start = minuteOf(Date.now());
  const a = await acquire(api, user, { holder: "a", windows: [{ dimension: RPM, window_start: start, need: 1, want: 100 }] });
  assert.is(a.status, 200, JSON.stringify(a.body));
  assert.is(a.body.limited, true);
  const wa = a.body.lease.windows[0];
  assert.equal({ ...wa, remaining: undefined }, { dimension: RPM, limited: true, window_start: start, window_end: new Date(Date.parse(start) + 60_000).toISOString(), granted: 30, added: 30, spent: 0, remaining: undefined, holders: 1 });
  const b = await acquire(api, user, { holder: "b", windows: [{ dimension: RPM, need: 1, want: 100 }] });
  assert.is(b.body.lease.windows[0].added, 10, "30 remain: a third of it, whole calls");
  // 10 calls spent from a's slice and counted: settled against it, so what remains does not move.
  assert.is((await api.post("/events/batch", Array.from({ length: 10 }, () => call(user, "a")))).status, 200);
  const c = await acquire(api, user, { holder: "c", windows: [{ dimension: RPM, need: 20, want: 20 }] });
  assert.is(c.body.lease.windows[0].added, 20, "60 - 10 counted - 20 still held by a - 10 by b = 20");
  assert.is(c.body.lease.windows[0].remaining, 0);
  const d = await acquire(api, user, { holder: "d", windows: [{ dimension: RPM, need: 1, want: 1 }] });
  assert.is(d.body.lease.windows[0].added, 0, "nothing left in this minute: refused");
  // a gives back what it did not use: the 20 calls it held come back.
  const back = await api.post(`/users/${user}/leases/a/release`, { used: 0, used_windows: [{ dimension: RPM, window_start: start, used: 10 }] });
  assert.is(back.status, 200, JSON.stringify(back.body));
  const e = await acquire(api, user, { holder: "d", windows: [{ dimension: RPM, need: 1, want: 100 }] });
  assert.is(e.body.lease.windows[0].added + e.body.lease.windows[0].remaining, 20);
  // Counted once: the service's view of the window.
  const limits = (await api.get(`/users/${user}/limits`)).body.limits;
  assert.is(limits[0].used, 10);
});

t("usage not spent from a slice lowers what remains; a slice is of its window only", async ({ api }) => {
  const user = await windowedUser(api, [{ name: "daily", metric: "spend", max: 1, window: "day" }]);
  const a = await acquire(api, user, { holder: "a", windows: [{ dimension: DAILY, need: 0.01, want: 0.3 }] });
  close(a.body.lease.windows[0].added, 0.3);
  assert.is((await api.post("/events/batch", [call(user, null, new Date(), 0.25)])).status, 200);
  const b = await acquire(api, user, { holder: "b", windows: [{ dimension: DAILY, need: 0.01, want: 10 }] });
  close(b.body.lease.windows[0].added + b.body.lease.windows[0].remaining, 1 - 0.25 - 0.3, "the unleased 0.25 counted, a's 0.3 held");
  // Yesterday's window: ended, nothing to grant. A dimension the plan does not limit: not limited.
  const old = await acquire(api, user, { holder: "c", windows: [{ dimension: DAILY, window_start: new Date(Date.now() - 2 * 86_400_000).toISOString(), need: 0.01, want: 1 }, { dimension: RPM, need: 1, want: 1 }] });
  assert.is(old.status, 200, JSON.stringify(old.body));
  assert.is(old.body.lease.windows[0].added, 0);
  assert.is(old.body.lease.windows[1].limited, false);
  assert.is((await acquire(api, user, { holder: "c", windows: [{ dimension: DAILY, need: 2, want: 1 }] })).status, 400, "want below need");
  assert.is((await acquire(api, user, { holder: "c", windows: [{ dimension: DAILY, need: 0, want: 1, window_start: new Date(Date.now() + 3_600_000).toISOString() }] })).status, 400, "a window an hour ahead");
  const none = await windowedUser(api, []);
  assert.equal((await acquire(api, none, { holder: "a", windows: [{ dimension: DAILY, need: 0, want: 1 }] })).body, { limited: false, lease: null }, "nothing limited, nothing to lease");
});

t("a rolling window: what remains is the limit less its live buckets and the slices held", async ({ api }) => {
  const ROLLING = "spend:rolling:300:";
  const user = await windowedUser(api, [{ name: "five-hours", metric: "spend", max: 1, window: "rolling", duration_minutes: 300 }]);
  assert.is((await api.post("/events/batch", [call(user, null, new Date(), 0.4)])).status, 200);
  const a = await acquire(api, user, { holder: "a", windows: [{ dimension: ROLLING, need: 0.01, want: 10 }] });
  assert.is(a.status, 200, JSON.stringify(a.body));
  assert.equal([a.body.lease.windows[0].window_start, a.body.lease.windows[0].window_end], [null, null]);
  close(a.body.lease.windows[0].added, 0.3, "(1 - 0.4 counted) / 2");
  // 0.1 spent from a's slice: settled, so what remains does not move.
  assert.is((await api.post("/events/batch", [call(user, "a", new Date(), 0.1)])).status, 200);
  const b = await acquire(api, user, { holder: "b", windows: [{ dimension: ROLLING, need: 0.01, want: 10 }] });
  close(b.body.lease.windows[0].added + b.body.lease.windows[0].remaining, 1 - 0.5 - 0.2, "live buckets 0.5, a still holds 0.2");
});

t("4 replica processes with leases: a 60-requests/minute limit admits at most 60 calls in any minute (0 over)", async ({ stack, api, apiKey }) => {
  const user = await windowedUser(api, [{ name: "rpm", metric: "requests", max: 60, window: "minute" }]);
  // From the replicas' start through 6 s into the next minute: two windows, the second granted anew.
  const run = await runReplicas(api, { baseUrl: stack.apiUrl, apiKey, userId: user, replicas: 4, concurrency: 5, leases: true, together: true, untilMinutePlusMs: 6_000 });
  const perMinute = new Map<number, number>();
  for (const r of run.replicas) for (const at of r.admitted!) perMinute.set(at - (at % 60_000), (perMinute.get(at - (at % 60_000)) ?? 0) + 1);
  const counts = [...perMinute].sort(([a], [b]) => a - b).map(([m, n]) => `${new Date(m).toISOString().slice(11, 16)}: ${n}`);
  for (const n of perMinute.values()) assert.ok(n <= 60, `calls admitted per minute: ${counts.join(", ")}`);
  assert.is(perMinute.size, 2, `the run spans two minutes: ${counts.join(", ")}`);
  assert.ok(run.refused > 0, "calls past the limit were refused");
  const reasons = new Set(run.replicas.flatMap((r) => r.reasons!));
  for (const r of reasons) {
    const [reason, resets] = r.split(" ");
    assert.is(reason, "limit:rpm", r);
    assert.is(Date.parse(resets!) % 60_000, 0, `resets at a minute's start: ${r}`);
  }
  assert.is(run.calls, run.replicas.reduce((a, r) => a + r.admitted!.length, 0));
});

t("4 replica processes with leases: $1 a day is never overspent", async ({ stack, api, apiKey }) => {
  // A call is estimated at $0.002 and costs $0.0015: about 666 calls fit.
  const user = await windowedUser(api, [{ name: "daily", metric: "spend", max: 1, window: "day" }], 0.001);
  const run = await runReplicas(api, { baseUrl: stack.apiUrl, apiKey, userId: user, replicas: 4, concurrency: 10, leases: true, together: true, callCost: 0.0015 });
  const spent = Math.max(run.spend, run.calls * 0.0015);
  assert.ok(spent <= 1 + 1e-9, `spent $${spent} of a $1 day (${run.calls} calls)`);
  assert.ok(spent >= 0.5, `the replicas spent most of it: $${spent}`);
  const daily = (await api.get(`/users/${user}/limits`)).body.limits.find((l: { reason: string }) => l.reason === "limit:daily");
  assert.ok(daily.used <= 1 + 1e-9, `the service counted $${daily.used}`);
  const reasons = new Set(run.replicas.flatMap((r) => r.reasons!.map((x) => x.split(" ")[0])));
  assert.equal([...reasons], ["limit:daily"]);
});

t.run();
