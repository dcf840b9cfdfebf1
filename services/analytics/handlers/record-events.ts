import { characters } from "@meter/lib/characters";
import { roundDollars } from "@meter/rules";
import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService, GateFact, UsageFact } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { rpcError } from "@meter/lib/errors";
import { uncountedFacts } from "@meter/lib/metrics";
import { fromTimestamp } from "@meter/lib/time";
import { SOURCES, type Source } from "../domain/rollup.ts";
import type { Bucket } from "../store/dirty.ts";
import type { LedgerFact } from "../store/ledger.ts";
import { kickRoll } from "../jobs/roll.ts";
import { firstOpenDay, firstRollupDay } from "../domain/retention-policy.ts";
import { dayOf } from "../domain/windows.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** Largest batch accepted in one call; the sender splits bigger ones. */
export const RECORD_MAX_FACTS = 10_000;

function common(f: UsageFact | GateFact, where: string): Date {
  if (!f.productId) throw rpcError.invalid(`${where}: product_id is required`);
  if (!f.eventId || characters(f.eventId) > 255) throw rpcError.invalid(`${where}: event_id must be 1-255 characters`);
  if (!f.userId) throw rpcError.invalid(`${where}: user_id is required`);
  const ts = fromTimestamp(f.timestamp);
  if (!ts || Number.isNaN(ts.getTime())) throw rpcError.invalid(`${where}: timestamp is required`);
  return ts;
}

/** The fact's team when it has one (`tm` of the ledger entry). */
function teamOf(f: UsageFact | GateFact, where: string): { tm?: string } {
  if (f.teamId === undefined) return {};
  if (f.teamId === "" || characters(f.teamId) > 255) throw rpcError.invalid(`${where}: team_id must be 1-255 characters when set`);
  return { tm: f.teamId };
}

function usageFact(f: UsageFact, i: number): LedgerFact {
  const where = `usage[${i}]`;
  const timestamp = common(f, where);
  if (!(SOURCES as readonly string[]).includes(f.source)) throw rpcError.invalid(`${where}: source must be auto or manual`);
  if (!Number.isFinite(f.cost)) throw rpcError.invalid(`${where}: cost must be a finite number`);
  if (f.tokens < 0n || f.tokens > BigInt(Number.MAX_SAFE_INTEGER)) throw rpcError.invalid(`${where}: tokens must be a whole number >= 0`);
  return {
    productId: f.productId,
    eventId: f.eventId,
    timestamp,
    kind: "u",
    entry: { u: f.userId, m: f.model || null, s: f.source as Source, t: Number(f.tokens), c: roundDollars(f.cost), ...teamOf(f, where) },
  };
}

function gateFact(f: GateFact, i: number): LedgerFact {
  const where = `gates[${i}]`;
  const timestamp = common(f, where);
  if (f.status !== "soft_gate" && f.status !== "hard_gate") throw rpcError.invalid(`${where}: status must be soft_gate or hard_gate`);
  return { productId: f.productId, eventId: f.eventId, timestamp, kind: "g", entry: { u: f.userId, st: f.status, b: f.blocked, ...teamOf(f, where) } };
}

/**
 * Stores facts in the ledger, or with the late facts for days before its window (idempotent
 * on product and event id), and marks their days
 * dirty, before and after storing: before, so that a crash right after storing still leaves
 * the days to be recomputed; after, so that a recompute that listed the marks before these
 * facts were stored is always followed by another one. Acknowledged means durably stored; the roll
 * job (jobs/roll.ts), enqueued here, brings the rollups up to date within about a second.
 */
export function recordEvents(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["recordEvents"] {
  return async (req) => {
    const total = req.usage.length + req.gates.length;
    if (total > RECORD_MAX_FACTS) throw rpcError.tooLarge(`at most ${RECORD_MAX_FACTS} facts per call; got ${total}`);
    const all = [...req.usage.map(usageFact), ...req.gates.map(gateFact)];
    // Facts for days whose rollup is no longer kept are acknowledged and counted nowhere
    // (ingestion refuses such events; one still in an outbox may cross the line at midnight).
    const now = deps.now();
    const kept = firstRollupDay(now, deps.retention);
    // Each fact's day, found once (a date's ISO text is a tenth of a call's CPU time at 1,000 facts).
    const days = new Map(all.map((f) => [f, dayOf(f.timestamp)]));
    const facts = all.filter((f) => days.get(f)! >= kept);
    const dropped = all.length - facts.length;
    if (dropped > 0) {
      uncountedFacts.inc({ reason: "before_rollup_retention" }, dropped);
      deps.logger.warn({ dropped, firstRollupDay: kept }, "facts for days past the rollup retention are not counted");
    }
    if (facts.length === 0) return { recorded: 0, duplicates: dropped };
    // Days before the ledger window are final: their facts are kept with the late facts,
    // which the roller adds to the day's base (README, "Late facts").
    const open = firstOpenDay(now, deps.retention);
    const current = facts.filter((f) => days.get(f)! >= open);
    const late = facts.filter((f) => days.get(f)! < open);
    const buckets: Bucket[] = facts.map((f) => ({ productId: f.productId, day: days.get(f)! }));
    await deps.dirty.mark(buckets);
    const [a, b] = await Promise.all([deps.ledger.write(current), deps.late.write(late)]);
    const res = { recorded: a.recorded + b.recorded, duplicates: a.duplicates + b.duplicates };
    await deps.faults?.afterLedgerWrite?.();
    await deps.dirty.mark(buckets);
    if (deps.rollJobs) kickRoll(deps);
    return { recorded: res.recorded, duplicates: res.duplicates + dropped };
  };
}
