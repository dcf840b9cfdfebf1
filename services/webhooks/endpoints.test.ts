import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Db, MongoClient } from "mongodb";
import { Code } from "@connectrpc/connect";
import { connectMongo } from "@meter/lib/mongo";
import { toTimestamp } from "@meter/lib/time";
import { freshDbName, testMongoUrl } from "../../test/support/database.ts";
import { EVENT_TYPES, TEST_EVENT_TYPE } from "./domain/events.ts";
import { startInstance, type Instance } from "./testing/instance.ts";
import { laterEventDelivered } from "./testing/later-event.ts";
import { Receiver, signatureValid } from "./testing/receiver.ts";
import { eventually } from "../../test/support/eventually.ts";
import { rpcCode } from "../../test/support/rpc.ts";

const t = suite<{ mongo: MongoClient; db: Db; svc: Instance; strict: Instance }>("webhooks endpoints over gRPC");

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.db = ctx.mongo.db(`webhooks_endpoints_${Date.now()}`);
  ctx.svc = await startInstance(ctx.db);
  // the production URL policy: https only, public addresses only
  ctx.strict = await startInstance(ctx.db, { allowInsecureUrls: false, runJobs: false });
});

t.after(async (ctx) => {
  await ctx.svc.close();
  await ctx.strict.close();
  await ctx.mongo.close();
});

t("create, list, reveal, update, rotate and delete", async ({ svc }) => {
  const productId = randomUUID();
  const created = await svc.client.createEndpoint({
    productId,
    url: "http://127.0.0.1:1/hook",
    subscribedEvents: ["usage.threshold.50", "usage.threshold.50", "gate_event.blocked"],
    description: "ops",
  });
  assert.match(created.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
  const ep = created.endpoint!;
  assert.equal(ep.subscribedEvents, ["usage.threshold.50", "gate_event.blocked"], "duplicates dropped");
  assert.is(ep.enabled, true);
  assert.is(ep.description, "ops");
  const list = await svc.client.listEndpoints({ productId });
  assert.equal(list.endpoints.map((e) => e.id), [ep.id]);
  assert.not.ok(JSON.stringify(list, (_k, v) => (typeof v === "bigint" ? String(v) : v)).includes(created.secret));
  assert.is((await svc.client.getEndpointSecret({ productId, endpointId: ep.id })).secret, created.secret);

  const upd = await svc.client.updateEndpoint({
    productId,
    endpointId: ep.id,
    endpoint: { enabled: false, subscribedEvents: ["usage.summary.daily"] },
    updateMask: { paths: ["enabled", "subscribed_events", "description"] },
  });
  assert.is(upd.endpoint!.enabled, false);
  assert.equal(upd.endpoint!.subscribedEvents, ["usage.summary.daily"]);
  assert.is(upd.endpoint!.description, undefined, "named and unset clears it");
  assert.is(upd.endpoint!.url, "http://127.0.0.1:1/hook", "unnamed fields unchanged");

  const rotated = await svc.client.rotateEndpointSecret({ productId, endpointId: ep.id });
  assert.is.not(rotated.secret, created.secret);
  assert.is((await svc.client.getEndpointSecret({ productId, endpointId: ep.id })).secret, rotated.secret);

  await svc.client.deleteEndpoint({ productId, endpointId: ep.id });
  assert.equal((await svc.client.listEndpoints({ productId })).endpoints, []);
  assert.is(await rpcCode(svc.client.deleteEndpoint({ productId, endpointId: ep.id })), Code.NotFound);
});

t("another product's endpoint reads as not found everywhere", async ({ svc }) => {
  const owner = randomUUID();
  const other = randomUUID();
  const ep = (await svc.client.createEndpoint({ productId: owner, url: "http://127.0.0.1:1/", subscribedEvents: ["usage.threshold.80"] })).endpoint!;
  const ids = { productId: other, endpointId: ep.id };
  assert.is(await rpcCode(svc.client.getEndpointSecret(ids)), Code.NotFound);
  assert.is(await rpcCode(svc.client.rotateEndpointSecret(ids)), Code.NotFound);
  assert.is(await rpcCode(svc.client.testEndpoint(ids)), Code.NotFound);
  assert.is(await rpcCode(svc.client.deleteEndpoint(ids)), Code.NotFound);
  assert.is(await rpcCode(svc.client.listDeliveries({ ...ids, limit: 10 })), Code.NotFound);
  assert.is(await rpcCode(svc.client.updateEndpoint({ ...ids, endpoint: { enabled: false }, updateMask: { paths: ["enabled"] } })), Code.NotFound);
  assert.equal((await svc.client.listEndpoints({ productId: other })).endpoints, []);
  assert.is(await rpcCode(svc.client.getEndpointSecret({ productId: owner, endpointId: "not-a-uuid" })), Code.NotFound);
});

t("subscribed events are checked against the contract's list", async ({ svc }) => {
  const productId = randomUUID();
  const url = "http://127.0.0.1:1/";
  assert.is(await rpcCode(svc.client.createEndpoint({ productId, url, subscribedEvents: [] })), Code.InvalidArgument);
  assert.is(await rpcCode(svc.client.createEndpoint({ productId, url, subscribedEvents: ["usage.threshold.90"] })), Code.InvalidArgument);
  assert.is(await rpcCode(svc.client.createEndpoint({ productId, url, subscribedEvents: [TEST_EVENT_TYPE] })), Code.InvalidArgument);
  const all = await svc.client.createEndpoint({ productId, url, subscribedEvents: [...EVENT_TYPES] });
  assert.equal(all.endpoint!.subscribedEvents, [...EVENT_TYPES]);
  const id = all.endpoint!.id;
  assert.is(await rpcCode(svc.client.updateEndpoint({ productId, endpointId: id, endpoint: {}, updateMask: { paths: ["subscribed_events"] } })), Code.InvalidArgument);
  assert.is(await rpcCode(svc.client.updateEndpoint({ productId, endpointId: id, endpoint: {}, updateMask: { paths: ["secret"] } })), Code.InvalidArgument);
});

t("URLs: https only, no private, loopback or link-local targets by default", async ({ strict, svc }) => {
  const productId = randomUUID();
  const ev = ["usage.threshold.50"];
  for (const url of [
    "http://93.184.215.14/",
    "https://127.0.0.1/",
    "https://localhost/",
    "https://10.1.2.3/",
    "https://192.168.0.10/",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/",
    "https://[fe80::1]/",
    "https://[fd00::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://0.0.0.0/",
    "https://user:pw@93.184.215.14/",
    "ftp://93.184.215.14/",
    "not a url",
  ]) {
    assert.is(await rpcCode(strict.client.createEndpoint({ productId, url, subscribedEvents: ev })), Code.InvalidArgument, url);
  }
  const ok = await strict.client.createEndpoint({ productId, url: "https://93.184.215.14/hooks", subscribedEvents: ev });
  assert.is(ok.endpoint!.url, "https://93.184.215.14/hooks");
  assert.is(
    await rpcCode(strict.client.updateEndpoint({ productId, endpointId: ok.endpoint!.id, endpoint: { url: "https://10.0.0.1/" }, updateMask: { paths: ["url"] } })),
    Code.InvalidArgument,
  );
  // the insecure switch allows http and loopback, still not private ranges
  assert.ok(await svc.client.createEndpoint({ productId, url: "http://localhost:9/", subscribedEvents: ev }));
  assert.is(await rpcCode(svc.client.createEndpoint({ productId, url: "http://10.0.0.1/", subscribedEvents: ev })), Code.InvalidArgument);
});

t("a target that became private is refused when sent too, not only when saved: a replica that allows only public targets sends no test to it", async ({ svc, strict }) => {
  const rx = await new Receiver().start();
  try {
    const productId = randomUUID();
    const ep = (await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["usage.threshold.50"] })).endpoint!;
    // the strict replica shares the database: it must not reach the loopback receiver
    const res = await strict.client.testEndpoint({ productId, endpointId: ep.id });
    assert.is(res.success, false);
    assert.is(res.statusCode, 0);
    assert.is(rx.received.length, 0);
    // The permissive replica reaches it: the refusal above was the target's, not the receiver's.
    assert.is((await svc.client.testEndpoint({ productId, endpointId: ep.id })).success, true);
    assert.is(rx.received.length, 1);
  } finally {
    await rx.stop();
  }
});

t("secrets are sealed at rest", async ({ svc, db }) => {
  const productId = randomUUID();
  const res = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/", subscribedEvents: ["usage.threshold.50"] });
  const raw = JSON.stringify(await db.collection("endpoints").findOne({ _id: res.endpoint!.id as any }));
  assert.not.ok(raw.includes(res.secret));
  assert.not.ok(raw.includes(res.secret.slice(6, 30)));
  assert.match(raw, /"secret_sealed":"v1\./);
});

t("test endpoint sends a signed webhook.test synchronously and does not log or retry it", async ({ svc }) => {
  const rx = await new Receiver((n) => (n === 1 ? 200 : n === 2 ? 418 : "hang")).start();
  try {
    const productId = randomUUID();
    const created = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["usage.threshold.50"] });
    const ids = { productId, endpointId: created.endpoint!.id };
    const ok = await svc.client.testEndpoint(ids);
    assert.equal([ok.success, ok.statusCode], [true, 200]);
    assert.ok(ok.responseTimeMs >= 0);
    const r = rx.received[0]!;
    assert.is(r.json.type, TEST_EVENT_TYPE);
    assert.is(r.headers["x-service-event"], TEST_EVENT_TYPE);
    assert.is(r.headers["x-service-delivery"], r.json.id);
    assert.equal(Object.keys(r.json.data), ["endpoint_id", "message"]);
    assert.ok(signatureValid(created.secret, r));
    const teapot = await svc.client.testEndpoint(ids);
    assert.equal([teapot.success, teapot.statusCode], [false, 418]);
    const hung = await svc.client.testEndpoint(ids); // attempt timeout is 1 s in tests
    assert.equal([hung.success, hung.statusCode], [false, 0]);
    assert.ok(hung.responseTimeMs >= 900);
    await laterEventDelivered(svc.client, ids.productId, "gate");
    assert.is(rx.received.length, 3, "never retried");
    assert.equal((await svc.client.listDeliveries({ ...ids, limit: 50 })).deliveries, []);
  } finally {
    await rx.stop();
  }
});

t("deliveries: newest first, status filter, limit bounds, cursor pages", async ({ mongo }) => {
  const rx = await new Receiver((_n, r) => (r.json?.data?.user_id?.endsWith("odd") ? 500 : 200)).start();
  // The retry table at its real pace: a failed delivery stays pending for a minute after its
  // first attempt, however slow the machine (at the suite's fast pace it fails for good in ~6 s).
  const svc = await startInstance(mongo.db(freshDbName("webhooks_deliveries_list")), { timeScale: 1 });
  try {
    const productId = randomUUID();
    const ep = (await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["usage.threshold.50"] })).endpoint!;
    const users = Array.from({ length: 7 }, (_, i) => `user-${i}-${i % 2 ? "odd" : "even"}`);
    for (const u of users) {
      await svc.client.publishThresholdCrossings({
        crossings: [{ id: randomUUID(), productId, userId: u, thresholdPct: 50, spendLimit: 10, currentSpend: 5, planName: "p", periodStart: toTimestamp(new Date("2026-11-01T00:00:00Z")) }],
      });
      await new Promise((r) => setTimeout(r, 5));
    }
    const ids = { productId, endpointId: ep.id };
    // Every delivery has had its first attempt: the even users' succeeded, the odd users' failed
    // and wait for their retry (a minute away at this pace).
    const attempted = await eventually(async () => {
      const l = (await svc.client.listDeliveries({ ...ids, limit: 200 })).deliveries;
      return l.length === 7 && l.every((d) => d.attempt >= 1) ? l : undefined;
    }, 60_000, "all 7 deliveries attempted once");
    const outcome = (d: (typeof attempted)[number]) => `${d.status}/${d.statusCode}`;
    assert.equal(attempted.map(outcome).sort(), [...Array(3).fill("pending/500"), ...Array(4).fill("success/200")], JSON.stringify(attempted.map(outcome)));
    assert.is((await svc.client.listDeliveries({ ...ids, limit: 200, status: "success" })).deliveries.length, 4);
    const all = (await svc.client.listDeliveries({ ...ids, limit: 0 })).deliveries;
    assert.is(all.length, 7, "limit 0 means the default (50)");
    const created = all.map((d) => Number(d.createdAt!.seconds) * 1000 + d.createdAt!.nanos / 1e6);
    assert.equal(created, [...created].sort((a, b) => b - a), "newest first");
    const pending = (await svc.client.listDeliveries({ ...ids, limit: 200, status: "pending" })).deliveries;
    assert.is(pending.length, 3);
    assert.ok(pending.every((d) => d.status === "pending" && d.statusCode === 500 && d.attempt >= 1 && !d.completedAt));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await svc.client.listDeliveries({ ...ids, limit: 3, cursor });
      assert.ok(page.deliveries.length <= 3);
      seen.push(...page.deliveries.map((d) => d.id));
      cursor = page.nextCursor;
    } while (cursor);
    assert.equal(seen, all.map((d) => d.id), "pages cover the list once, in order");
    assert.is(await rpcCode(svc.client.listDeliveries({ ...ids, limit: 201 })), Code.InvalidArgument);
    assert.is(await rpcCode(svc.client.listDeliveries({ ...ids, limit: -1 })), Code.InvalidArgument);
    assert.is(await rpcCode(svc.client.listDeliveries({ ...ids, limit: 10, status: "done" })), Code.InvalidArgument);
    assert.is(await rpcCode(svc.client.listDeliveries({ ...ids, limit: 10, cursor: "garbage" })), Code.InvalidArgument);
  } finally {
    await svc.close();
    await rx.stop();
  }
});

t("a product has at most 20 endpoints: the 21st is refused (422 at the gateway), and a delete makes room", async ({ svc }) => {
  const productId = randomUUID();
  const create = (n: number) => svc.client.createEndpoint({ productId, url: `http://127.0.0.1:9/hook?n=${n}`, subscribedEvents: ["usage.threshold.50"] });
  // Created concurrently: racing creates never end above the limit.
  const results = await Promise.allSettled(Array.from({ length: 24 }, (_, i) => create(i)));
  const created = results.filter((r) => r.status === "fulfilled").length;
  assert.ok(created <= 20, `${created} created`);
  for (const r of results) if (r.status === "rejected") assert.is(await rpcCode(Promise.reject(r.reason)), Code.InvalidArgument);
  for (let i = created; i < 20; i++) await create(100 + i);
  assert.is((await svc.client.listEndpoints({ productId })).endpoints.length, 20);
  const err = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:9/hook", subscribedEvents: ["usage.threshold.50"] }).catch((e) => e);
  assert.is(err.code, Code.InvalidArgument);
  assert.match(err.rawMessage, /at most 20 webhook endpoints; delete one to add another/);
  assert.is((await svc.client.listEndpoints({ productId })).endpoints.length, 20, "the refused one is not kept");
  // Another product is not affected by this one's endpoints.
  await svc.client.createEndpoint({ productId: randomUUID(), url: "http://127.0.0.1:9/hook", subscribedEvents: ["usage.threshold.50"] });
  const [first] = (await svc.client.listEndpoints({ productId })).endpoints;
  await svc.client.deleteEndpoint({ productId, endpointId: first!.id });
  await create(999);
  assert.is((await svc.client.listEndpoints({ productId })).endpoints.length, 20);
});

t.run();
