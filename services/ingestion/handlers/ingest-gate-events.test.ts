// IngestGateEvents over gRPC: its refusals (size, fields, the listing's window) and how it
// stores first occurrences once, with a client's figures rounded.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("IngestGateEvents");
const MAX = 4;
withIngestion(t, { services: { ingestion: { maxBatchEvents: MAX } } });

const DAY = 86_400_000;
const gate = (userId: string, fields: Record<string, unknown> = {}) => ({
  id: randomUUID(),
  userId,
  timestamp: toTimestamp(new Date()),
  status: "hard_gate",
  gateReason: "total_spend",
  usagePct: 1.0499999999999998,
  currentValue: 10.5,
  limitValue: 10,
  blocked: true,
  ...fields,
});

t("refuses a batch whole: too many events, a status or reason it does not know, a timestamp outside the listing's window", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  assert.is((await rpcFailure(ingestion.ingestGateEvents({ productId, events: Array.from({ length: MAX + 1 }, () => gate(userId)) })))?.code, Code.ResourceExhausted);
  const fields = await rpcFailure(ingestion.ingestGateEvents({ productId, events: [gate(userId), gate(userId, { status: "open", gateReason: "mood" })] }));
  assert.is(fields?.code, Code.InvalidArgument);
  assert.ok(fields!.rawMessage.includes("/1/status") && fields!.rawMessage.includes("/1/gate_reason"), fields!.rawMessage);
  const softBlocked = await rpcFailure(ingestion.ingestGateEvents({ productId, events: [gate(userId, { status: "soft_gate", blocked: true })] }));
  assert.is(softBlocked?.code, Code.InvalidArgument);
  assert.ok(softBlocked!.rawMessage.includes("/0/blocked"), softBlocked!.rawMessage);
  const old = await rpcFailure(ingestion.ingestGateEvents({ productId, events: [gate(userId, { timestamp: toTimestamp(new Date(Date.now() - 91 * DAY)) })] }));
  assert.is(old?.code, Code.InvalidArgument);
  assert.ok(old!.rawMessage.includes("/0/timestamp"), old!.rawMessage);
  // Finite, but past what rounding keeps finite (and JSON can carry): refused, not stored as Infinity.
  const huge = await rpcFailure(ingestion.ingestGateEvents({ productId, events: [gate(userId, { usagePct: 1e303, currentValue: 1e300 })] }));
  assert.is(huge?.code, Code.InvalidArgument);
  assert.ok(huge!.rawMessage.includes("/0/usage_pct") && huge!.rawMessage.includes("/0/current_value"), huge!.rawMessage);
  assert.equal((await ingestion.listGateEvents({ productId, userId })).events, []);
});

t("stores first occurrences once, repeats and resends as duplicates, figures rounded", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  const first = gate(userId);
  const batch = [first, first, gate(userId, { status: "soft_gate", blocked: false, usagePct: 0.8 })];
  const once = await ingestion.ingestGateEvents({ productId, events: batch });
  assert.equal([once.accepted, once.duplicates], [2, 1]);
  const again = await ingestion.ingestGateEvents({ productId, events: batch });
  assert.equal([again.accepted, again.duplicates], [0, 3]);
  const listed = (await ingestion.listGateEvents({ productId, userId })).events;
  assert.is(listed.length, 2);
  assert.is(listed.find((e) => e.id === first.id)?.usagePct, 1.05);

  // A team's spend cap is money too: its amounts are kept to the nano-dollar.
  const team = gate(userId, { gateReason: "team:total_spend", currentValue: 0.1 + 0.2, limitValue: 0.30000000000000004 });
  await ingestion.ingestGateEvents({ productId, events: [team] });
  const stored = (await ingestion.listGateEvents({ productId, userId })).events.find((e) => e.id === team.id);
  assert.equal([stored?.currentValue, stored?.limitValue], [0.3, 0.3]);
});

t("a plan limit's figures are rounded as money when the plan in force counts it in spend (the user's, or its team's), kept as sent otherwise", async ({ stack, ingestion }) => {
  const limits = [
    { name: "daily", metric: "spend", max: 5, window: "day" },
    { name: "calls", metric: "requests", max: 10, window: "minute" },
  ];
  const { api, productId, userId } = await productWithUser(stack, { max_spend_per_period: 100, limits });
  const teamPlan = await api.post("/config/plans", { plans: [{ name: "team", limits: [{ name: "seat", metric: "spend", max: 1, window: "day", scope: "member" }] }] });
  assert.is(teamPlan.status, 201, JSON.stringify(teamPlan.body));
  assert.is((await api.post("/teams", { external_team_id: "acme", name: "Acme" })).status, 201);
  assert.is((await api.post("/teams/acme/subscription", { plan_id: teamPlan.body.plans[0].id })).status, 200);
  assert.is((await api.put(`/users/${userId}/team`, { team_id: "acme" })).status, 200);
  const noisy = { currentValue: 0.1 + 0.2, limitValue: 0.30000000000000004 };
  const events = {
    daily: gate(userId, { gateReason: "limit:daily", ...noisy }),
    calls: gate(userId, { gateReason: "limit:calls", ...noisy }),
    seat: gate(userId, { gateReason: "team:limit:seat", ...noisy }),
    gone: gate(userId, { gateReason: "limit:gone", ...noisy }),
  };
  assert.is((await ingestion.ingestGateEvents({ productId, events: Object.values(events) })).accepted, 4);
  const listed = (await ingestion.listGateEvents({ productId, userId })).events;
  const figures = (e: { id: string }) => {
    const x = listed.find((l) => l.id === e.id)!;
    return [x.currentValue, x.limitValue];
  };
  assert.equal(figures(events.daily), [0.3, 0.3]);
  assert.equal(figures(events.seat), [0.3, 0.3]);
  assert.equal(figures(events.calls), [0.30000000000000004, 0.30000000000000004]);
  assert.equal(figures(events.gone), [0.30000000000000004, 0.30000000000000004]);
});

t.run();
