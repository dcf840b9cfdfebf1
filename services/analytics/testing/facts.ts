// Facts and checks the analytics suites share: a pinned clock, replicas on it, usage and gate
// facts of one product, and comparisons that print bigints readably.
import { randomUUID } from "node:crypto";
import * as assert from "uvu/assert";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GateFactSchema, UsageFactSchema } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { toTimestamp } from "@meter/lib/time";
import type { AnalyticsServiceOptions } from "../index.ts";
import { replica, type Replicas } from "./instance.ts";

export type UsageInit = MessageInitShape<typeof UsageFactSchema>;
export type GateInit = MessageInitShape<typeof GateFactSchema>;

/** A pinned "now": one second before midnight UTC. */
export const NOW = new Date("2026-03-10T23:59:59.000Z");

/** One analytics process at NOW: its own module and gRPC server over the suite's database. */
export const instance = (ctx: Replicas, opts: Partial<AnalyticsServiceOptions> = {}) => replica(ctx, { now: () => NOW, ...opts });

export function usage(productId: string, ts: string, f: Partial<UsageInit> = {}): UsageInit {
  return {
    productId,
    eventId: randomUUID(),
    userId: "u1",
    timestamp: toTimestamp(new Date(ts)),
    model: "gpt-4o",
    tokens: 100n,
    cost: 0.1,
    source: "auto",
    toolCalls: 0n,
    ...f,
  };
}

export function gate(productId: string, ts: string, status: "soft_gate" | "hard_gate"): GateInit {
  return { productId, eventId: randomUUID(), userId: "u1", timestamp: toTimestamp(new Date(ts)), status, blocked: status === "hard_gate" };
}

/** Deep equality with bigints compared as numbers (so that failures print readably). */
export const plain = (x: unknown): unknown => JSON.parse(JSON.stringify(x ?? null, (_k, v) => (typeof v === "bigint" ? Number(v) : v)));
export const eq = (a: unknown, b: unknown, msg?: string) => assert.equal(plain(a), plain(b), msg);
export const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} != ${b}`);

/** A seeded pseudo-random generator, so that failures can be replayed. */
export function rng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

/**
 * A replica at NOW with the facts `of` a new product recorded and rolled up: what a query
 * handler's test reads. `p` is the product.
 */
export async function rolledUp(ctx: Replicas, of: (p: string) => { usage?: UsageInit[]; gates?: GateInit[] }) {
  const a = await instance(ctx);
  const p = randomUUID();
  await a.client.recordEvents(of(p));
  await a.module.rollPending();
  return { a, p };
}
