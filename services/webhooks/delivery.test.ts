import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MongoNetworkError, type Db, type MongoClient } from "mongodb";
import { create } from "@bufbuild/protobuf";
import { ThresholdCrossingSchema, type ThresholdCrossing } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { connectMongo } from "@meter/lib/mongo";
import { toTimestamp } from "@meter/lib/time";
import { testMongoUrl } from "../../test/support/database.ts";
import { API_VERSION, USER_AGENT } from "./domain/events.ts";
import { startInstance, type Instance } from "./testing/instance.ts";
import { laterEventDelivered } from "./testing/later-event.ts";
import { Receiver, signatureValid } from "./testing/receiver.ts";
import { eventually } from "../../test/support/eventually.ts";

const t = suite<{ mongo: MongoClient; db: Db; svc: Instance }>("webhooks delivery over gRPC");

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.db = ctx.mongo.db(`webhooks_delivery_${Date.now()}`);
  ctx.svc = await startInstance(ctx.db);
});

t.after(async (ctx) => {
  await ctx.svc.close();
  await ctx.mongo.close();
});

const periodStart = new Date("2026-11-01T00:00:00Z");

function crossing(productId: string, pct: number, over: Partial<ThresholdCrossing> = {}): ThresholdCrossing {
  return create(ThresholdCrossingSchema, {
    id: randomUUID(),
    productId,
    userId: "user-1",
    thresholdPct: pct,
    currentSpend: pct / 10,
    spendLimit: 10,
    planName: "pro",
    tokensTotal: 1234n,
    costByModel: { "gpt-4o": pct / 10 },
    periodStart: toTimestamp(periodStart),
    periodEnd: toTimestamp(new Date("2026-12-01T00:00:00Z")),
    crossedAt: toTimestamp(new Date()),
    ...over,
  });
}

async function endpointFor(svc: Instance, productId: string, url: string, events = ["usage.threshold.50", "usage.threshold.80", "usage.threshold.100"]) {
  const res = await svc.client.createEndpoint({ productId, url, subscribedEvents: events });
  return { id: res.endpoint!.id, secret: res.secret };
}

/** Runs `body` with a receiver answering by `behaviour` and an endpoint of a new product sending to it. */
async function withEndpoint(
  svc: Instance,
  behaviour: ConstructorParameters<typeof Receiver>[0],
  body: (s: { rx: Receiver; productId: string; ep: { id: string; secret: string } }) => Promise<void>,
): Promise<void> {
  const rx = await new Receiver(behaviour).start();
  try {
    const productId = randomUUID();
    await body({ rx, productId, ep: await endpointFor(svc, productId, rx.url) });
  } finally {
    await rx.stop();
  }
}

/** As withEndpoint, on an instance of its own on `db`; stops both after. */
async function withOwnInstance(
  db: Db,
  opts: Parameters<typeof startInstance>[1],
  behaviour: ConstructorParameters<typeof Receiver>[0],
  body: (s: { svc: Instance; rx: Receiver; productId: string; ep: { id: string; secret: string } }) => Promise<void>,
): Promise<void> {
  const svc = await startInstance(db, opts);
  const rx = await new Receiver(behaviour).start();
  try {
    const productId = randomUUID();
    await body({ svc, rx, productId, ep: await endpointFor(svc, productId, rx.url) });
  } finally {
    await svc.close();
    await rx.stop();
  }
}

async function deliveries(svc: Instance, productId: string, endpointId: string) {
  return (await svc.client.listDeliveries({ productId, endpointId, limit: 200 })).deliveries;
}

/** Waits until the endpoint's only (newest) delivery reaches the status, and returns it. */
function settled(svc: Instance, productId: string, endpointId: string, status: "success" | "failed", timeoutMs = 30_000) {
  return eventually(async () => {
    const d = (await deliveries(svc, productId, endpointId))[0];
    return d?.status === status ? d : undefined;
  }, timeoutMs, `a ${status} delivery`);
}

t("delivers a threshold event once, signed, with every header of the contract", async ({ svc }) => {
  await withEndpoint(svc, undefined, async ({ rx, productId, ep }) => {
    const c = crossing(productId, 50);
    await svc.client.publishThresholdCrossings({ crossings: [c] });
    // handed over again, and again under another crossing id for the same user/period/threshold
    await svc.client.publishThresholdCrossings({ crossings: [c, crossing(productId, 50)] });
    await eventually(() => rx.received.length >= 1, 20_000, "delivery");
    const d = await eventually(async () => {
      const list = await deliveries(svc, productId, ep.id);
      return list.length === 1 && list[0]!.status === "success" ? list[0] : undefined;
    });
    await laterEventDelivered(svc.client, productId, "gate");
    assert.is(rx.received.length, 1, "delivered exactly once");
    assert.is((await deliveries(svc, productId, ep.id)).length, 1, "one delivery logged");
    const r = rx.received[0]!;
    assert.is(r.headers["content-type"], "application/json");
    assert.is(r.headers["user-agent"], USER_AGENT);
    assert.match(USER_AGENT, /1\.0$/);
    assert.is(r.headers["x-service-event"], "usage.threshold.50");
    assert.match(r.json.id, /^whevt_[0-9a-f-]{36}$/);
    assert.is(r.headers["x-service-delivery"], r.json.id);
    assert.match(String(r.headers["x-service-signature"]), /^sha256=[0-9a-f]{64}$/);
    const ts = Number(r.headers["x-service-timestamp"]);
    assert.ok(Math.abs(ts - Date.now() / 1000) < 60, "timestamp is Unix seconds, now");
    assert.ok(signatureValid(ep.secret, r), "signature verifies with the endpoint secret");
    assert.not.ok(signatureValid("whsec_other", r));
    assert.equal(Object.keys(r.json), ["id", "type", "api_version", "created_at", "product_id", "data"]);
    assert.is(r.json.type, "usage.threshold.50");
    assert.is(r.json.api_version, API_VERSION);
    assert.is(r.json.product_id, productId);
    assert.ok(!Number.isNaN(Date.parse(r.json.created_at)));
    assert.equal(r.json.data, {
      user_id: "user-1",
      threshold_pct: 50,
      current_spend: 5,
      spend_limit: 10,
      plan_name: "pro",
      tokens_total: 1234,
      cost_by_model: { "gpt-4o": 5 },
    });
    assert.match(d!.id, /^whdel_[0-9a-f-]{36}$/);
    assert.is(d!.eventType, "usage.threshold.50");
    assert.is(d!.statusCode, 200);
    assert.is(d!.attempt, 1);
    assert.ok(d!.completedAt);
  });
});

t("retries on non-2xx and succeeds on the third attempt; the log says so", async ({ svc }) => {
  await withEndpoint(svc, (n) => (n <= 2 ? 503 : 204), async ({ rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 80)] });
    const d = await settled(svc, productId, ep.id, "success");
    assert.is(d!.attempt, 3);
    assert.is(d!.statusCode, 204);
    assert.is(rx.received.length, 3);
    assert.is(new Set(rx.received.map((r) => r.headers["x-service-delivery"])).size, 1, "same envelope id on every attempt");
    assert.is(new Set(rx.received.map((r) => r.body)).size, 1, "same body on every attempt");
    for (const r of rx.received) assert.ok(signatureValid(ep.secret, r));
  });
});

t("six failed attempts end in failed, spaced by the (scaled) retry table", async ({ svc }) => {
  await withEndpoint(svc, () => 500, async ({ rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 100)] });
    const first = await eventually(async () => (await deliveries(svc, productId, ep.id))[0]);
    assert.ok(first.status === "pending" || first.status === "failed");
    const d = await settled(svc, productId, ep.id, "failed", 60_000);
    assert.is(d!.attempt, 6);
    assert.is(d!.statusCode, 500);
    assert.ok(d!.completedAt);
    await laterEventDelivered(svc.client, productId, "gate");
    assert.is(rx.received.length, 6, "no seventh attempt");
    // attempt 6 waits 8 h * scale = 4.8 s; attempt 5 waits 1.2 s
    const gap = (i: number) => rx.received[i]!.at - rx.received[i - 1]!.at;
    assert.ok(gap(5) >= 4_000, `gap before attempt 6 was ${gap(5)} ms`);
    assert.ok(gap(4) >= 1_000, `gap before attempt 5 was ${gap(4)} ms`);
  });
});

t("an attempt without an answer in time fails and the next one succeeds", async ({ svc }) => {
  await withEndpoint(svc, (n) => (n === 1 ? "hang" : 200), async ({ rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    const d = await settled(svc, productId, ep.id, "success");
    assert.is(d!.attempt, 2);
    assert.is(d!.statusCode, 200);
    assert.is(rx.received.length, 2);
  });
});

t("a signing secret that cannot be opened fails the attempt, which is retried by the table", async ({ mongo }) => {
  // Slower scale (attempt 2 after 2 s) and a database of its own, to look between attempts.
  const db = mongo.db(`webhooks_secret_${Date.now()}`);
  await withOwnInstance(db, { timeScale: 1 / 30 }, () => 200, async ({ svc, rx, productId, ep }) => {
    const endpoints = db.collection<{ _id: string; secret_sealed: string }>("endpoints");
    const { secret_sealed: sealed } = (await endpoints.findOne({ _id: ep.id }))!;
    // As if sealed under another WEBHOOKS_SECRET_KEY: it does not open.
    await endpoints.updateOne({ _id: ep.id }, { $set: { secret_sealed: `v1.${Buffer.alloc(48, 7).toString("base64url")}` } });
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    const failed = await eventually(async () => {
      const d = await db.collection("deliveries").findOne({ endpoint_id: ep.id });
      return d?.attempt === 1 ? d : undefined;
    }, 20_000, "attempt 1 recorded");
    assert.is(failed.status, "pending");
    assert.is(failed.status_code, 0);
    assert.match(failed.last_error, /signing secret could not be opened/);
    assert.ok(failed.next_attempt_at > failed.created_at, "a next attempt is scheduled");
    assert.is(rx.received.length, 0, "nothing sent unsigned");
    await endpoints.updateOne({ _id: ep.id }, { $set: { secret_sealed: sealed } });
    const d = await settled(svc, productId, ep.id, "success", 30_000);
    assert.is(d!.attempt, 2);
    assert.is(rx.received.length, 1);
    assert.ok(signatureValid(ep.secret, rx.received[0]!));
  });
});

t("an attempt whose claim a dead runner holds is sent once the claim's lease runs out, not a back-off step later", async ({ mongo }) => {
  // Attempt 2 comes 2 s after attempt 1: time to plant the claim of a runner that died.
  const db = mongo.db(`webhooks_claimed_${Date.now()}`);
  await withOwnInstance(db, { timeScale: 1 / 30 }, (n) => (n === 1 ? 500 : 200), async ({ svc, rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 100)] });
    const first = await eventually(async () => {
      const d = await db.collection<{ _id: string; attempt: number }>("deliveries").findOne({ endpoint_id: ep.id });
      return d?.attempt === 1 ? d : undefined;
    }, 20_000, "attempt 1 recorded");
    // The busy retries back off 5 s doubling (scaled: 0.17 s, 0.33 s, ... from attempt 2's due
    // time, 2 s on): tries at about 23 s and 34 s, so one that waited for its next step would
    // come about 9 s after a lease ending at 25 s.
    const lease = new Date(Date.now() + 25_000);
    await db.collection<{ _id: string; token: string; expires_at: Date }>("job_claims").insertOne({ _id: `deliver:${first._id}:2`, token: "dead-runner", expires_at: lease });
    const d = await settled(svc, productId, ep.id, "success", 60_000);
    assert.is(d!.attempt, 2);
    assert.is(rx.received.length, 2);
    assert.ok(rx.received[1]!.at >= lease.getTime() - 50, "not before the dead runner's lease ended");
    assert.ok(rx.received[1]!.at <= lease.getTime() + 4_000, `sent ${rx.received[1]!.at - lease.getTime()} ms after the lease ended`);
  });
});

type Method = (...args: unknown[]) => unknown;

/** The database as the service sees it, where the `methods` of one collection are replaced by their wrapping of the original. */
function interceptedDb(db: Db, collection: string, methods: Record<string, (original: Method) => Method>): Db {
  const passThrough = <T extends object>(target: T, override: (prop: string | symbol) => unknown) =>
    new Proxy(target, {
      get(t, prop) {
        const own = override(prop);
        if (own !== undefined) return own;
        const v = Reflect.get(t, prop, t);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
  return passThrough(db, (prop) =>
    prop !== "collection"
      ? undefined
      : (name: string, opts?: object) => {
          const col = db.collection(name, opts);
          if (name !== collection) return col;
          const own = col as unknown as Record<string, Method>;
          return passThrough(col, (p) => (typeof p === "string" && Object.hasOwn(methods, p) ? methods[p]!((...a) => own[p]!.apply(col, a)) : undefined));
        },
  );
}

/** The database as the service sees it, where `method` of one collection fails while `faults.left` > 0. */
function flakyDb(db: Db, collection: string, method: string, faults: { left: number }): Db {
  return interceptedDb(db, collection, {
    [method]: (original) => (...args) => {
      if (faults.left > 0) {
        faults.left--;
        return Promise.reject(new MongoNetworkError("connection reset (injected)"));
      }
      return original(...args);
    },
  });
}

t("an attempt the database fails mid-way is run again, and sends once", async ({ mongo }) => {
  const faults = { left: 0 };
  const db = flakyDb(mongo.db(`webhooks_flaky_${Date.now()}`), "endpoints", "findOne", faults);
  await withOwnInstance(db, {}, () => 200, async ({ svc, rx, productId, ep }) => {
    // The attempt's read of its endpoint fails three times in a row.
    faults.left = 3;
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 80)] });
    const d = await settled(svc, productId, ep.id, "success", 30_000);
    assert.is(faults.left, 0);
    assert.is(d!.attempt, 1);
    assert.is(rx.received.length, 1);
  });
});

t("a fan-out interrupted after its deliveries were stored is completed once", async ({ mongo }) => {
  const raw = mongo.db(`webhooks_fanout_${Date.now()}`);
  const rx = await new Receiver(() => 200).start();
  // The hand-over on a replica without a dispatcher: the event is stored and its fan-out queued.
  const recorder = await startInstance(raw, { runJobs: false });
  const productId = randomUUID();
  const eps = [];
  for (let i = 0; i < 3; i++) eps.push(await endpointFor(recorder, productId, `${rx.url}?n=${i}`));
  await recorder.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
  await recorder.close();
  assert.is(await raw.collection("deliveries").countDocuments({ product_id: productId }), 0, "the hand-over creates no delivery");
  // The dispatcher's first fan-out stores the deliveries, then fails to queue their attempts.
  const faults = { left: 1 };
  const svc = await startInstance(flakyDb(raw, "delivery_queue", "insertMany", faults));
  try {
    await eventually(() => rx.received.length === 3, 20_000, "one delivery per endpoint");
    assert.is(faults.left, 0, "the fan-out was interrupted once");
    for (const ep of eps) {
      const d = await settled(svc, productId, ep.id, "success");
      assert.is(d!.attempt, 1);
    }
    await laterEventDelivered(svc.client, productId, "gate");
    assert.is(rx.received.length, 3, "nothing sent twice");
    assert.is(new Set(rx.received.map((r) => r.headers["x-service-delivery"])).size, 1, "one event");
    assert.is(await raw.collection("delivery_queue").countDocuments({ product_id: productId }), 0, "nothing left queued");
  } finally {
    await svc.close();
    await rx.stop();
  }
});

t("a fan-out picked between the hand-over's queue entry and its event waits for the event: delivered once", async ({ mongo }) => {
  // The hand-over's insert of the event is held until the dispatcher, which read the queue
  // meanwhile, has looked the event up for its fan-out entry (and found nothing yet).
  let held: { id: string; release: () => void } | undefined;
  const db = interceptedDb(mongo.db(`webhooks_early_fanout_${Date.now()}`), "events", {
    insertMany: (original) => async (...args) => {
      const [docs] = args as [{ _id: string }[]];
      if (!held && docs.length > 0) await new Promise<void>((release) => (held = { id: docs[0]!._id, release }));
      return original(...args);
    },
    find: (original) => (...args) => {
      const cursor = original(...args) as { toArray(): Promise<unknown[]> };
      const [filter] = args as [{ _id?: { $in?: string[] } }];
      const h = held;
      if (h && filter?._id?.$in?.includes(h.id)) {
        const toArray = cursor.toArray.bind(cursor);
        cursor.toArray = async () => {
          const found = await toArray();
          h.release();
          return found;
        };
      }
      return cursor;
    },
  });
  await withOwnInstance(db, {}, () => 200, async ({ svc, rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    assert.ok(held, "the event's insert was held until the fan-out had looked for it");
    const d = await settled(svc, productId, ep.id, "success", 30_000);
    assert.is(d!.attempt, 1);
    await laterEventDelivered(svc.client, productId, "gate");
    assert.is(rx.received.length, 1, "sent once");
  });
});

t("a hand-over cut off between its queue entry and its event, picked by the dispatcher, then repeated: delivered once", async ({ mongo }) => {
  const raw = mongo.db(`webhooks_cut_handover_${Date.now()}`);
  const rx = await new Receiver(() => 200).start();
  // The hand-over on a replica without a dispatcher: its fan-out entry is queued, then the
  // database fails the event's insert (the call fails; ingestion repeats it later).
  const recorder = await startInstance(flakyDb(raw, "events", "insertMany", { left: 1 }), { runJobs: false });
  const productId = randomUUID();
  const ep = await endpointFor(recorder, productId, rx.url);
  const c = crossing(productId, 50);
  await recorder.client.publishThresholdCrossings({ crossings: [c] }).then(
    () => assert.unreachable("the hand-over should fail"),
    () => {},
  );
  await recorder.close();
  const svc = await startInstance(raw);
  try {
    // The dispatcher has passed the entry (its event not stored yet) once a later event of the
    // product, queued behind it, is delivered; the entry is still queued for the repeat.
    await laterEventDelivered(svc.client, productId, "gate");
    assert.is(await raw.collection("delivery_queue").countDocuments({ product_id: productId, kind: "fanout" }), 1, "the fan-out entry is kept");
    await svc.client.publishThresholdCrossings({ crossings: [c] });
    const d = await settled(svc, productId, ep.id, "success", 30_000);
    assert.is(d!.attempt, 1);
    assert.is(rx.received.length, 1, "sent once");
  } finally {
    await svc.close();
    await rx.stop();
  }
});

t("a restart in the middle of a retry sequence loses nothing and duplicates nothing", async ({ mongo }) => {
  // Slower scale here: attempt 2 after 2 s, attempt 3 after 10 s, leaving time to restart. A
  // database of its own: the suite's fast replica must not run this sequence's attempts.
  const db = mongo.db(`webhooks_restart_${Date.now()}`);
  const slow = { timeScale: 1 / 30 };
  let first: Instance | undefined = await startInstance(db, slow);
  const rx = await new Receiver((n) => (n <= 2 ? 500 : 200)).start();
  let second: Instance | undefined;
  try {
    const productId = randomUUID();
    const ep = await endpointFor(first, productId, rx.url);
    await first.client.publishThresholdCrossings({ crossings: [crossing(productId, 80)] });
    await eventually(async () => (await deliveries(first!, productId, ep.id))[0]?.attempt === 2, 20_000, "attempt 2");
    await first.close();
    first = undefined;
    assert.is(rx.received.length, 2);
    second = await startInstance(db, slow);
    const d = await settled(second!, productId, ep.id, "success", 30_000);
    await laterEventDelivered(second!.client, productId, "gate");
    assert.is(d!.attempt, 3);
    assert.is(rx.received.length, 3, "attempt 3 sent once, after the restart");
  } finally {
    await first?.close();
    await second?.close();
    await rx.stop();
  }
});

t("two replicas on one database deliver every event exactly once", async ({ db, svc }) => {
  const other = await startInstance(db);
  const rx = await new Receiver((n) => (n % 3 === 0 ? 500 : 200)).start();
  try {
    const productId = randomUUID();
    const ep = await endpointFor(svc, productId, rx.url);
    const users = Array.from({ length: 8 }, (_, i) => `u${i}`);
    await Promise.all(
      users.map((u, i) => (i % 2 ? svc : other).client.publishThresholdCrossings({ crossings: [crossing(productId, 50, { userId: u })] })),
    );
    // and every crossing handed over again to the other replica
    await Promise.all(
      users.map((u, i) => (i % 2 ? other : svc).client.publishThresholdCrossings({ crossings: [crossing(productId, 50, { userId: u })] })),
    );
    const list = await eventually(async () => {
      const l = await deliveries(svc, productId, ep.id);
      return l.length === users.length && l.every((d) => d.status === "success") ? l : undefined;
    }, 40_000);
    await laterEventDelivered(svc.client, productId, "gate");
    const ok = rx.received.filter((_, i) => (i + 1) % 3 !== 0);
    const okIds = ok.map((r) => r.headers["x-service-delivery"]);
    assert.is(new Set(okIds).size, users.length, "every event acknowledged");
    assert.is(okIds.length, users.length, "no event acknowledged twice");
    const attempts = list.reduce((s, d) => s + d.attempt, 0);
    assert.is(rx.received.length, attempts, "the log counts every request sent");
  } finally {
    await other.close();
    await rx.stop();
  }
});

t("only subscribed types go out, and only while the endpoint is enabled", async ({ svc }) => {
  const a = await new Receiver().start();
  const b = await new Receiver().start();
  try {
    const productId = randomUUID();
    const epA = await endpointFor(svc, productId, a.url, ["usage.threshold.80"]);
    const epB = await endpointFor(svc, productId, b.url, ["usage.threshold.50", "usage.threshold.80"]);
    await svc.client.updateEndpoint({ productId, endpointId: epB.id, endpoint: { enabled: false }, updateMask: { paths: ["enabled"] } });
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50), crossing(productId, 80)] });
    await eventually(() => a.received.length === 1, 20_000);
    await laterEventDelivered(svc.client, productId, "gate");
    assert.equal(a.received.map((r) => r.json.type), ["usage.threshold.80"]);
    assert.is(b.received.length, 0);
    assert.is((await deliveries(svc, productId, epB.id)).length, 0);
    assert.is((await deliveries(svc, productId, epA.id)).length, 1);
  } finally {
    await a.stop();
    await b.stop();
  }
});

t("disabling an endpoint ends its pending deliveries as failed without sending again", async ({ svc }) => {
  await withEndpoint(svc, () => 500, async ({ rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    await eventually(() => rx.received.length >= 1, 20_000);
    await svc.client.updateEndpoint({ productId, endpointId: ep.id, endpoint: { enabled: false }, updateMask: { paths: ["enabled"] } });
    const d = await settled(svc, productId, ep.id, "failed", 30_000);
    const sent = rx.received.length;
    assert.ok(d.attempt < 6 && d.attempt === sent, `stopped after ${d.attempt} attempts`);
    assert.ok(d.completedAt);
    await laterEventDelivered(svc.client, productId, "gate");
    assert.is(rx.received.length, sent);
  });
});

t("unsubscribing an endpoint from a type ends that type's pending deliveries as failed without sending again", async ({ svc }) => {
  await withEndpoint(svc, () => 500, async ({ rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    await eventually(() => rx.received.length >= 1, 20_000);
    await svc.client.updateEndpoint({ productId, endpointId: ep.id, endpoint: { subscribedEvents: ["usage.threshold.80"] }, updateMask: { paths: ["subscribed_events"] } });
    const d = await settled(svc, productId, ep.id, "failed", 30_000);
    assert.ok(d.attempt < 6, `stopped after ${d.attempt} attempts`);
    assert.is(d.eventType, "usage.threshold.50");
    // The type still subscribed goes on arriving; by then no attempt of the other was sent again.
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 80)] });
    await eventually(() => rx.received.some((r) => r.json.type === "usage.threshold.80"), 20_000);
    assert.is(rx.received.filter((r) => r.json.type === "usage.threshold.50").length, d.attempt);
  });
});

t("rotation: the next attempt is signed with the new secret only", async ({ svc }) => {
  // The first attempt is held open until the secret is rotated, then fails: the retry that
  // follows is the first attempt after the rotation, whatever the machine's speed.
  let release!: (status: number) => void;
  const held = new Promise<number>((resolve) => (release = resolve));
  await withEndpoint(svc, (n) => (n === 1 ? held : 200), async ({ rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    await eventually(() => rx.received.length === 1, 20_000, "attempt 1");
    const rotated = (await svc.client.rotateEndpointSecret({ productId, endpointId: ep.id })).secret;
    assert.is.not(rotated, ep.secret);
    release(500);
    await settled(svc, productId, ep.id, "success");
    assert.is(rx.received.length, 2);
    assert.ok(signatureValid(ep.secret, rx.received[0]!), "attempt 1 was signed with the secret of its time");
    assert.ok(signatureValid(rotated, rx.received[1]!), "attempt 2 is signed with the new secret");
    assert.not.ok(signatureValid(ep.secret, rx.received[1]!), "old secret no longer signs");
  });
});

t("deleting an endpoint removes its delivery log and cancels its pending attempts", async ({ svc, db }) => {
  await withEndpoint(svc, () => 500, async ({ rx, productId, ep }) => {
    await svc.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    await eventually(() => rx.received.length >= 2, 20_000);
    await svc.client.deleteEndpoint({ productId, endpointId: ep.id });
    assert.is(await db.collection("deliveries").countDocuments({ endpoint_id: ep.id }), 0);
    const seen = rx.received.length;
    // An attempt in flight during the delete may leave its entry; its next pick drops it.
    const queued = () => db.collection("delivery_queue").countDocuments({ endpoint_id: ep.id });
    await eventually(async () => (await queued()) === 0, 20_000, "no attempt left queued");
    await laterEventDelivered(svc.client, productId, "gate");
    assert.is(await queued(), 0);
    assert.is(await db.collection("deliveries").countDocuments({ endpoint_id: ep.id }), 0, "no delivery re-created");
    assert.ok(rx.received.length <= seen + 1, "at most an attempt already in flight");
  });
});


t("an attempt cut off by a stopping process is not counted as a failed attempt: the next process sends it again", async ({ mongo }) => {
  const db = mongo.db(`webhooks_stop_cut_${Date.now()}`);
  // The first request is held past the stop's grace (the attempt's own timeout is longer), the next answered.
  const rx = await new Receiver((n) => (n === 1 ? "hang" : 200)).start();
  const first = await startInstance(db, { attemptTimeoutMs: 30_000 });
  let second: Instance | undefined;
  try {
    const productId = randomUUID();
    const ep = await endpointFor(first, productId, rx.url);
    await first.client.publishThresholdCrossings({ crossings: [crossing(productId, 50)] });
    await eventually(() => rx.received.length === 1, 20_000, "the first attempt in flight");
    await first.close();
    const [cut] = await db.collection("deliveries").find({ product_id: productId }).toArray();
    assert.is(cut!.status, "pending", "still pending after the stop");
    assert.is(cut!.attempt, 0, "the cut attempt is not recorded");
    second = await startInstance(db);
    const d = await settled(second, productId, ep.id, "success", 30_000);
    assert.is(d!.attempt, 1, "delivered on its first recorded attempt");
    assert.is(rx.received.length, 2);
    assert.is(new Set(rx.received.map((r) => r.headers["x-service-delivery"])).size, 1, "the same delivery");
  } finally {
    await second?.close();
    await rx.stop();
  }
});

t.run();
