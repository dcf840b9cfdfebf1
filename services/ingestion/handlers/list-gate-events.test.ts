// ListGateEvents over gRPC: its checks, filters and pages.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("ListGateEvents");
withIngestion(t);

const gate = (userId: string, ago: number, status: "soft_gate" | "hard_gate") => ({
  id: randomUUID(),
  userId,
  timestamp: toTimestamp(new Date(Date.now() - ago)),
  status,
  gateReason: "total_spend",
  usagePct: 1,
  currentValue: 1,
  limitValue: 1,
  blocked: status === "hard_gate",
});

t("pages newest first by cursor, filters by status and blocked, and refuses a bad limit, status or cursor", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  const events = [gate(userId, 1_000, "soft_gate"), gate(userId, 2_000, "hard_gate"), gate(userId, 3_000, "soft_gate"), gate(userId, 4_000, "hard_gate"), gate(userId, 5_000, "soft_gate")];
  await ingestion.ingestGateEvents({ productId, events });
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await ingestion.listGateEvents({ productId, userId, limit: 2, cursor });
    assert.ok(page.events.length <= 2);
    seen.push(...page.events.map((e) => e.id));
    cursor = page.nextCursor;
  } while (cursor);
  assert.equal(seen, events.map((e) => e.id));
  const hard = await ingestion.listGateEvents({ productId, userId, status: "hard_gate" });
  assert.equal(hard.events.map((e) => e.id), [events[1]!.id, events[3]!.id]);
  assert.equal((await ingestion.listGateEvents({ productId, userId, blockedOnly: true })).events.length, 2);
  for (const req of [{ limit: 501 }, { status: "open" }, { cursor: "not-a-cursor" }]) {
    assert.is((await rpcFailure(ingestion.listGateEvents({ productId, userId, ...req })))?.code, Code.InvalidArgument, JSON.stringify(req));
  }
  // Another product's cursor names none of this product's events.
  const foreign = Buffer.from(JSON.stringify([Date.now(), "other-product/x"])).toString("base64url");
  assert.is((await rpcFailure(ingestion.listGateEvents({ productId, userId, cursor: foreign })))?.code, Code.InvalidArgument);
  assert.is((await rpcFailure(ingestion.listGateEvents({ productId, userId: "nobody" })))?.code, Code.NotFound);
});

t.run();
