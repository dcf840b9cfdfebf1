import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { MongoClient } from "mongodb";
import type { Test } from "uvu";
import { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcClient } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";
import type { StackOptions } from "../../../cmd/stack.ts";
import type { Api } from "../../../test/support/http.ts";
import { withTestStack, type TestStack } from "../../../test/support/stack.ts";

/** A suite calling the ingestion service over gRPC (`ctx.ingestion`) in a whole stack, for its users and plans. */
export interface IngestionSuite {
  stack: TestStack;
  mongo: MongoClient;
  ingestion: Client<typeof IngestionService>;
}

export function withIngestion<C extends IngestionSuite>(t: Test<C>, opts: Partial<StackOptions> = {}): void {
  withTestStack(t, opts);
  t.before((ctx) => {
    ctx.ingestion = rpcClient(IngestionService, ctx.stack.rpcUrl);
  });
}

/** A product with one registered user (on a plan when `plan` is given, for `days` days from yesterday). */
export async function productWithUser(stack: TestStack, plan?: Record<string, unknown>): Promise<{ api: Api; productId: string; userId: string }> {
  const { api, productId } = await stack.newProduct();
  const userId = `u-${randomUUID()}`;
  const created = await api.post("/users", { external_user_id: userId });
  if (created.status !== 201) throw new Error(`creating a user failed: ${created.status}`);
  if (plan) {
    const plans = await api.post("/config/plans", { plans: [{ name: `p-${randomUUID()}`, ...plan }] });
    if (plans.status !== 201) throw new Error(`creating a plan failed: ${JSON.stringify(plans.body)}`);
    const day = 86_400_000;
    const sub = await api.post(`/users/${userId}/subscription`, {
      plan_id: plans.body.plans[0].id,
      period_start: new Date(Date.now() - day).toISOString(),
      period_end: new Date(Date.now() + 20 * day).toISOString(),
    });
    if (sub.status !== 200) throw new Error(`subscribing failed: ${JSON.stringify(sub.body)}`);
  }
  return { api, productId, userId };
}

/** A usage event of `userId` stamped now (fields as the proto message has them). */
export function usageEvent(userId: string, fields: Record<string, unknown> = {}) {
  return { id: randomUUID(), userId, timestamp: toTimestamp(new Date()), model: "gpt-4o", inputTokens: 10n, outputTokens: 5n, costTotal: 1, ...fields };
}
