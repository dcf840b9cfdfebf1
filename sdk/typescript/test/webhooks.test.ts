// verifyWebhook against real deliveries of the running service: test, threshold and gate
// events, a rotated secret, a replayed old delivery and a tampered body.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import type { Api } from "../../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../../test/support/stack.ts";
import { FAST } from "../../../services/webhooks/testing/instance.ts";
import { Receiver, type Received } from "../../../services/webhooks/testing/receiver.ts";
import { verifyWebhook, WebhookVerificationError, type WebhookEvent, type WebhookVerificationReason } from "../src/index.ts";

const t = suite<{ stack: TestStack; rx: Receiver; api: Api; endpointId: string; secret: string }>("sdk: verifyWebhook");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { webhooks: FAST, ingestion: { relayIntervalMs: 50 } } });
  ctx.rx = await new Receiver().start();
  ctx.api = (await ctx.stack.newProduct()).api;
  const ep = await ctx.api.post("/webhooks/endpoints", {
    url: ctx.rx.url,
    subscribed_events: ["usage.threshold.50", "gate_event.soft_gate", "gate_event.hard_gate", "gate_event.blocked"],
  });
  assert.is(ep.status, 201, JSON.stringify(ep.body));
  ctx.endpointId = ep.body.id;
  ctx.secret = ep.body.secret;
});
t.after(async (ctx) => {
  await ctx.rx.stop();
  await ctx.stack.close();
});

async function refusal(p: Promise<unknown>): Promise<WebhookVerificationReason | "verified"> {
  try {
    await p;
    return "verified";
  } catch (err) {
    assert.instance(err, WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
}

const timestampOf = (r: Received) => Number(r.headers["x-service-timestamp"]);

t("test, threshold and gate deliveries verify and come back typed by type", async ({ api, rx, secret, endpointId }) => {
  assert.is((await api.post(`/webhooks/endpoints/${endpointId}/test`)).body.success, true);
  const plan = await api.post("/config/plans", { plans: [{ name: "ten", max_spend_per_period: 10 }] });
  await api.post("/users", { external_user_id: "w-user" });
  const now = new Date();
  await api.post("/users/w-user/subscription", {
    plan_id: plan.body.plans[0].id,
    period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    period_end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
  });
  await api.post("/events/batch", [{ id: randomUUID(), user_id: "w-user", timestamp: now.toISOString(), cost_total: 6 }]);
  await api.post("/gate-events/batch", [
    {
      id: randomUUID(), user_id: "w-user", timestamp: now.toISOString(), status: "hard_gate", gate_reason: "total_spend",
      usage_pct: 1, current_value: 10, limit_value: 10, blocked: true, message: "limit reached",
    },
  ]);
  await eventually(() => rx.of("webhook.test").length > 0 && rx.of("usage.threshold.50").length > 0 && rx.of("gate_event.blocked").length > 0, 30_000, "deliveries");

  const seen: string[] = [];
  for (const r of rx.received) {
    // Node gives the raw body as text or bytes; both verify, with headers as Node or Fetch gives them.
    const event: WebhookEvent = await verifyWebhook(r.body, r.headers, secret);
    const again = await verifyWebhook(Buffer.from(r.body), new Headers(r.headers as Record<string, string>), secret);
    assert.equal(again, event);
    assert.is(event.id, r.headers["x-service-delivery"]);
    seen.push(event.type);
    switch (event.type) {
      case "usage.threshold.50":
        assert.is(event.data.threshold_pct, 50);
        assert.is(event.data.current_spend, 6);
        assert.is(event.data.spend_limit, 10);
        break;
      case "gate_event.blocked":
      case "gate_event.hard_gate":
        assert.is(event.data.gate_reason, "total_spend");
        assert.is(event.data.blocked, true);
        break;
      case "webhook.test":
        assert.is(event.data.endpoint_id, endpointId);
        break;
    }
  }
  for (const type of ["webhook.test", "usage.threshold.50", "gate_event.blocked"]) assert.ok(seen.includes(type), `${type} in ${seen}`);
});

t("a replayed old delivery is too old; a tampered body, a wrong secret or a forged signature is a bad signature", async ({ rx, secret }) => {
  const r = rx.received[0]!;
  const signedAt = timestampOf(r) * 1000;
  assert.is(await refusal(verifyWebhook(r.body, r.headers, secret, { now: signedAt + 300_000 })), "verified");
  assert.is(await refusal(verifyWebhook(r.body, r.headers, secret, { now: signedAt + 301_000 })), "too_old");
  assert.is(await refusal(verifyWebhook(r.body, r.headers, secret, { now: signedAt + 3_600_000, toleranceSeconds: 7200 })), "verified");
  assert.is(await refusal(verifyWebhook(r.body, r.headers, secret, { now: new Date(signedAt - 301_000) })), "too_old");

  const tampered = r.body.replace(/"product_id":"/, '"product_id":"x');
  assert.is.not(tampered, r.body);
  assert.is(await refusal(verifyWebhook(tampered, r.headers, secret)), "bad_signature");
  assert.is(await refusal(verifyWebhook(r.body, { ...r.headers, "x-service-timestamp": String(timestampOf(r) + 1) }, secret)), "bad_signature");
  assert.is(await refusal(verifyWebhook(r.body, r.headers, `${secret}x`)), "bad_signature");
  assert.is(await refusal(verifyWebhook(r.body, { ...r.headers, "x-service-signature": `sha256=${"0".repeat(64)}` }, secret)), "bad_signature");

  const { ["x-service-signature"]: _s, ...noSignature } = r.headers;
  assert.is(await refusal(verifyWebhook(r.body, noSignature, secret)), "missing_header");
  const { ["x-service-timestamp"]: _t, ...noTimestamp } = r.headers;
  assert.is(await refusal(verifyWebhook(r.body, noTimestamp, secret)), "missing_header");
  assert.is(await refusal(verifyWebhook(r.body, { ...r.headers, "x-service-signature": "md5=abc" }, secret)), "malformed");
  assert.is(await refusal(verifyWebhook(r.body, { ...r.headers, "x-service-timestamp": "yesterday" }, secret)), "malformed");

  // Mistakes at the call site are said as they are: an unset secret variable, a body a framework parsed.
  const said = (p: Promise<unknown>) => p.then(() => "verified", (e: Error) => `${e.name}: ${e.message}`);
  assert.match(await said(verifyWebhook(r.body, r.headers, process.env.NO_SUCH_VARIABLE as unknown as string)), /^TypeError: verifyWebhook needs the endpoint's signing secret/);
  assert.match(await said(verifyWebhook(JSON.parse(r.body), r.headers, secret)), /^TypeError: verifyWebhook needs the body exactly as received/);
});

t("after a rotation: the new secret verifies, a list of old and new verifies both, the old one alone no longer does", async ({ api, rx, secret: oldSecret, endpointId }) => {
  const before = rx.received[0]!;
  const rotated = await api.post(`/webhooks/endpoints/${endpointId}/rotate-secret`);
  const newSecret = rotated.body.secret as string;
  const count = rx.of("webhook.test").length;
  await api.post(`/webhooks/endpoints/${endpointId}/test`);
  const after = await eventually(() => rx.of("webhook.test")[count], 10_000, "a delivery signed with the new secret");

  assert.is((await verifyWebhook(after.body, after.headers, newSecret)).type, "webhook.test");
  assert.is((await verifyWebhook(after.body, after.headers, [oldSecret, newSecret])).type, "webhook.test");
  assert.is((await verifyWebhook(before.body, before.headers, [oldSecret, newSecret], { now: timestampOf(before) * 1000 })).id, before.json.id);
  assert.is(await refusal(verifyWebhook(after.body, after.headers, oldSecret)), "bad_signature");
});

t.run();
