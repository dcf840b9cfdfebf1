// IngestUsageEvents over gRPC: what the handler refuses before anything is stored, and how it
// counts first occurrences, repeats and events of unregistered users.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, usageEvent, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("IngestUsageEvents");
const MAX = 5;
withIngestion(t, { services: { ingestion: { maxBatchEvents: MAX } } });

const DAY = 86_400_000;

t("refuses a batch whole, naming each event: too many events, a field out of bounds, a timestamp out of reach", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  const events = (n: number) => Array.from({ length: n }, () => usageEvent(userId));
  assert.is((await rpcFailure(ingestion.ingestUsageEvents({ productId, events: events(MAX + 1) })))?.code, Code.ResourceExhausted);

  const bad = [usageEvent(userId), usageEvent(userId, { costTotal: -1, leaseId: "no spaces" }), usageEvent(userId, { source: "robot" })];
  const fields = await rpcFailure(ingestion.ingestUsageEvents({ productId, events: bad }));
  assert.is(fields?.code, Code.InvalidArgument);
  for (const named of ["/1/lease_id", "/1/cost_total", "/2/source"]) assert.ok(fields!.rawMessage.includes(named), fields!.rawMessage);

  // Lengths are characters (code points), as the gateway counts them: 255 emoji are a user id, 256 are not.
  const long = [usageEvent("😀".repeat(255)), usageEvent("😀".repeat(256))];
  const tooLong = await rpcFailure(ingestion.ingestUsageEvents({ productId, events: long }));
  assert.ok(tooLong!.rawMessage.includes("/1/user_id") && !tooLong!.rawMessage.includes("/0/"), tooLong!.rawMessage);

  const old = [usageEvent(userId), usageEvent(userId, { timestamp: toTimestamp(new Date(Date.now() + DAY)) })];
  const stamped = await rpcFailure(ingestion.ingestUsageEvents({ productId, events: old }));
  assert.is(stamped?.code, Code.InvalidArgument);
  assert.ok(stamped!.rawMessage.includes("/1/timestamp"), stamped!.rawMessage);

  // Nothing of the refused batches was counted.
  assert.is((await ingestion.getUsage({ productId, userId })).totalCost, 0);
});

t("counts first occurrences once: repeats in the batch and resends are duplicates; unregistered users are counted too", async ({ stack, ingestion, mongo }) => {
  const { productId, userId } = await productWithUser(stack);
  const first = usageEvent(userId, { costTotal: 2, totalTokens: 0n });
  const stranger = usageEvent("not-registered", { costTotal: 3 });
  const batch = [first, first, stranger, usageEvent(userId, { costTotal: 0, costTokens: 0.25, costTools: 0.5 })];
  assert.equal(await pick(ingestion.ingestUsageEvents({ productId, events: batch })), { accepted: 3, duplicates: 1 });
  assert.equal(await pick(ingestion.ingestUsageEvents({ productId, events: batch })), { accepted: 0, duplicates: 4 });
  const usage = await ingestion.getUsage({ productId, userId });
  // cost_total defaults to cost_tokens + cost_tools, total_tokens to input + output.
  assert.is(usage.totalCost, 2.75);
  assert.is(usage.totalTokens, 30n);
  const stored = await mongo.db(`${stack.dbPrefix}_ingestion`).collection("usage_events").findOne({ _id: `${productId}/${stranger.id}` as never });
  assert.is(stored?.user_known, false);
});

async function pick(p: Promise<{ accepted: number; duplicates: number }>) {
  const { accepted, duplicates } = await p;
  return { accepted, duplicates };
}

t.run();
