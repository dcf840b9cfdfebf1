// Gate-event batches whose timestamps spread over many hours: refused outside the accepted
// window, bounded in write cost inside it, and listed a bounded number of hours per page,
// while the service stays healthy for every product.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Api } from "./support/http.ts";
import { withStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack }>("gate-event timestamps and listing bounds");

withStack(t);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function gate(userId: string, at: number, over: Record<string, unknown> = {}) {
  return {
    id: randomUUID(),
    user_id: userId,
    timestamp: new Date(at).toISOString(),
    status: "soft_gate",
    gate_reason: "total_spend",
    usage_pct: 0.9,
    current_value: 9,
    limit_value: 10,
    ...over,
  };
}

async function newUser(api: Api): Promise<string> {
  const id = `g-${randomUUID()}`;
  assert.is((await api.post("/users", { external_user_id: id })).status, 201);
  return id;
}

/**
 * Runs `work` while asking /health over and over; every answer must be "ok". At least one
 * answer comes after the work ended, so a degraded database would show.
 */
async function healthyThroughout<T>(api: Api, work: Promise<T>): Promise<T> {
  let done = false;
  const answers: string[] = [];
  const poll = (async () => {
    do {
      const h = await api.get("/health");
      answers.push(`${h.status} ${h.body.status}`);
    } while (!done);
    const h = await api.get("/health");
    answers.push(`${h.status} ${h.body.status}`);
  })();
  try {
    return await work;
  } finally {
    done = true;
    await poll;
    assert.ok(answers.length >= 2);
    assert.equal([...new Set(answers)], ["200 ok"], "health throughout");
  }
}

/** A neighbour product's gate event, accepted and listed. */
async function neighbourServed(stack: TestStack): Promise<void> {
  const { api } = await stack.newProduct("neighbour");
  const user = await newUser(api);
  const e = gate(user, Date.now());
  assert.equal((await api.post("/gate-events/batch", [e])).body, { accepted: 1, duplicates: 0 });
  const listed = await api.get(`/users/${user}/gate-events`);
  assert.equal(listed.body.events.map((x: { id: string }) => x.id), [e.id]);
}

t("10,000 gate events in 10,000 future hours: 422 naming the events, the service healthy", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const user = await newUser(api);
  const now = Date.now();
  const batch = Array.from({ length: 10_000 }, (_, i) => gate(user, now + (i + 1) * HOUR));
  const res = await healthyThroughout(stack.api, api.post("/gate-events/batch", batch));
  assert.is(res.status, 422, JSON.stringify(res.body).slice(0, 500));
  assert.equal(res.body.issues[0], { location: "body", path: "/0/timestamp", message: "is more than 15 minutes ahead of the service's clock" });
  assert.is(res.body.issues[1].path, "/1/timestamp");
  assert.match(res.body.detail, /body\/0\/timestamp is more than 15 minutes ahead/);
  assert.is((await api.get(`/users/${user}/gate-events`)).body.events.length, 0, "nothing of a refused batch is stored");
  await neighbourServed(stack);
});

t("the window: the last 90 days and 15 minutes ahead", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const user = await newUser(api);
  const now = Date.now();
  const old = await api.post("/gate-events/batch", [gate(user, now - HOUR), gate(user, now - 91 * DAY)]);
  assert.is(old.status, 422);
  assert.equal(old.body.issues, [{ location: "body", path: "/1/timestamp", message: "is more than 90 days ago; gate events are kept 90 days" }]);
  const ok = await api.post("/gate-events/batch", [gate(user, now - 89 * DAY), gate(user, now + 60_000)]);
  assert.equal(ok.body, { accepted: 2, duplicates: 0 });
});

t("a batch spread over every hour of the window is stored, and listed a bounded number of hours per page", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const user = await newUser(api);
  const now = Date.now();
  const hours = 89 * 24;
  // One event per hour back to 89 days ago; only the oldest is a hard gate.
  const batch = Array.from({ length: hours }, (_, i) => gate(user, now - i * HOUR, i === hours - 1 ? { status: "hard_gate" } : {}));
  const res = await healthyThroughout(stack.api, api.post("/gate-events/batch", batch));
  assert.equal(res.body, { accepted: hours, duplicates: 0 });
  await neighbourServed(stack);

  // Unfiltered: full pages, every event once.
  const seen = new Set<string>();
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: { status: number; body: any } = await api.get(`/users/${user}/gate-events?limit=500${cursor ? `&cursor=${cursor}` : ""}`);
    assert.is(page.status, 200);
    for (const e of page.body.events) seen.add(e.id);
    cursor = page.body.next_cursor;
    pages++;
  } while (cursor);
  assert.is(seen.size, hours);
  assert.is(pages, Math.ceil(hours / 500));

  // A filter matching only the oldest event: a page reads at most about as many hours as it
  // may hold events, so the first pages come back empty with a cursor, and following them
  // finds the event once.
  const first = await api.get(`/users/${user}/gate-events?status=hard_gate`);
  assert.is(first.body.events.length, 0);
  assert.type(first.body.next_cursor, "string");
  const found: string[] = [];
  cursor = first.body.next_cursor;
  pages = 1;
  while (cursor) {
    const page: { status: number; body: any } = await api.get(`/users/${user}/gate-events?status=hard_gate&cursor=${cursor}`);
    assert.is(page.status, 200);
    found.push(...page.body.events.map((e: { id: string }) => e.id));
    cursor = page.body.next_cursor;
    pages++;
  }
  assert.equal(found, [batch[hours - 1]!.id]);
  assert.ok(pages >= Math.floor(hours / 101), `${pages} pages of up to 100 events read up to 101 hours each`);
});

t.run();
