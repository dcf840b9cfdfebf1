/**
 * The window part of AcquireLease and ReleaseLease: which window of which limit each ask is of,
 * its hard mark, and the answer in the limit's unit (dollars for spend).
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { WindowLeaseSchema, type WindowAsk, type WindowLease, type WindowUse } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { toTimestamp } from "@meter/lib/time";
import { dimensionKey, toDollars, toNano, type BillingPeriod } from "@meter/rules";
import type { PlanInfo } from "../adapters/plans.ts";
import { windowAt, windowDocId, windowField, type WindowLimit } from "./shares.ts";
import { rollingSliceKey, settledIn, type SliceAsk, type SliceGrant } from "./slices.ts";
import type { SliceDocRef, WindowLeaseStore } from "./lease-store.ts";

/** Windows one request may ask for (a plan has at most 16 limits; a call may sit at a window's end). */
export const MAX_WINDOW_ASKS = 64;
/** How far ahead of the service's clock a window asked for may start (usage timestamps reach as far). */
const AHEAD_MS = 5 * 60_000;

/** The limits of a plan by dimension key; two limits of one dimension share its counts, the stricter hard mark applies. */
function byDimension(plan: PlanInfo | null): Map<string, WindowLimit[]> {
  const out = new Map<string, WindowLimit[]>();
  for (const l of plan?.limits ?? []) {
    const k = dimensionKey({ metric: l.metric, window: l.window, duration_minutes: l.duration_minutes, model: l.model });
    out.set(k, [...(out.get(k) ?? []), l]);
  }
  return out;
}

const fromUnit = (l: WindowLimit, n: number) => (l.metric === "spend" ? toDollars(n) : n);

function hardMark(limits: readonly WindowLimit[], plan: PlanInfo): number {
  let cap = Infinity;
  for (const l of limits) {
    const hard = l.hard_gate_at ?? plan.hardGateAt;
    cap = Math.min(cap, l.metric === "spend" ? Math.round(hard * toNano(l.max)) : Math.floor(hard * l.max + 1e-9));
  }
  return cap;
}

function amount(field: string, l: WindowLimit, x: number, round: (n: number) => number): number {
  const max = l.metric === "spend" ? 1e12 : Number.MAX_SAFE_INTEGER;
  if (!Number.isFinite(x) || x < 0 || x > max) throw rpcError.invalid(`${field} must be between 0 and ${max} (${l.metric === "spend" ? "dollars" : l.metric})`);
  return l.metric === "spend" ? toNano(x) : round(x);
}

interface Resolved {
  limits: WindowLimit[];
  key: string;
  rolling: { duration: number } | null;
  start: number | null;
  end: number | null;
}

/** The window an ask (or a use) names: the one holding window_start (now when absent); null when the plan has no limit of that dimension. */
function resolve(
  field: string,
  dims: Map<string, WindowLimit[]>,
  plan: PlanInfo | null,
  period: BillingPeriod,
  dimension: string,
  at: Timestamp | undefined,
  now: number,
  prefix = "",
): Resolved | null {
  const limits = dims.get(dimension);
  if (!plan || !limits) return null;
  const l = limits[0]!;
  if (l.window === "rolling") return { limits, key: prefix + rollingSliceKey(dimension), rolling: { duration: l.duration_minutes ?? 1 }, start: null, end: null };
  const t = at ? timestampDate(at).getTime() : now;
  if (t > now + AHEAD_MS) throw rpcError.invalid(`${field}.window_start is more than 5 minutes ahead of the service's clock`);
  const w = windowAt(l, t, plan.timeZone, period);
  return { limits, key: prefix + windowField(dimension, w.start), rolling: null, start: w.start, end: w.end };
}

/** Where a window's slices are kept: the document its window is counted in. */
export interface SliceHome {
  store: WindowLeaseStore;
  id: string;
  ref: SliceDocRef;
}

/** A user's window slices: all in its window document. */
export function userWindowHome(store: WindowLeaseStore, productId: string, userId: string): () => SliceHome {
  const home = { store, id: windowDocId(productId, userId), ref: { productId, userId } };
  return () => home;
}

export interface WindowGrantInput {
  /** The home of a window's slices by its slice key and end (null: rolling); a user's are all in its window document. */
  home: (slice: { key: string; end: number | null }) => SliceHome;
  /** Put before every slice key: a team plan's member-scope windows in the member's document (teams/shares.ts memberPrefix). */
  keyPrefix?: string;
  plan: PlanInfo | null;
  period: BillingPeriod;
  holder: string;
  asks: readonly WindowAsk[];
  ttlMs: number;
  graceMs: number;
  now: Date;
}

/** Grants the window slices asked for in one conditional write of each document they are kept in; one answer per ask, in order. */
export async function acquireWindows(i: WindowGrantInput): Promise<WindowLease[]> {
  if (i.asks.length === 0) return [];
  if (i.asks.length > MAX_WINDOW_ASKS) throw rpcError.invalid(`windows may name at most ${MAX_WINDOW_ASKS} windows`);
  const now = i.now.getTime();
  const dims = byDimension(i.plan);
  const resolved = i.asks.map((a, k) => {
    const r = resolve(`windows[${k}]`, dims, i.plan, i.period, a.dimension, a.windowStart, now, i.keyPrefix);
    if (!r) return null;
    const l = r.limits[0]!;
    const need = amount(`windows[${k}].need`, l, a.need, Math.ceil);
    const want = amount(`windows[${k}].want`, l, a.want, Math.floor);
    if (want < need) throw rpcError.invalid(`windows[${k}].want must be at least need`);
    return { ...r, need, want };
  });
  // One slice a window: two asks of one would each be answered while only the last is kept.
  const asked = new Map<string, number>();
  resolved.forEach((r, k) => {
    if (!r) return;
    const first = asked.get(r.key);
    if (first !== undefined) throw rpcError.invalid(`windows[${k}] names the same window as windows[${first}]; ask each window once`);
    asked.set(r.key, k);
  });
  const live = resolved.filter((r): r is NonNullable<typeof r> => r !== null && (r.end === null || r.end > now));
  const homes = new Map<string, { home: SliceHome; rs: typeof live }>();
  for (const r of live) {
    const home = i.home(r);
    const group = homes.get(home.id);
    if (group) group.rs.push(r);
    else homes.set(home.id, { home, rs: [r] });
  }
  const grantOf = new Map<(typeof live)[number], SliceGrant>();
  await Promise.all(
    [...homes.values()].map(async ({ home, rs }) => {
      const grants = await home.store.acquire(home.id, home.ref, {
        holder: i.holder,
        ttlMs: i.ttlMs,
        graceMs: i.graceMs,
        now: i.now,
        asks: (doc): SliceAsk[] =>
          rs.map((r) => ({ key: r.key, cap: hardMark(r.limits, i.plan!), settled: settledIn(doc.w, r.key, r.rolling, now), end: r.end, need: r.need, want: r.want })),
      });
      rs.forEach((r, k) => grantOf.set(r, grants[k]!));
    }),
  );
  return i.asks.map((a, k) => {
    const r = resolved[k];
    if (!r) return create(WindowLeaseSchema, { dimension: a.dimension, limited: false });
    const l = r.limits[0]!;
    const bounds = r.start === null ? {} : { windowStart: toTimestamp(new Date(r.start)), windowEnd: toTimestamp(new Date(r.end!)) };
    const g = grantOf.get(r);
    // A window that has ended: nothing to grant, nothing remains of it.
    if (!g) return create(WindowLeaseSchema, { dimension: a.dimension, limited: true, ...bounds });
    return create(WindowLeaseSchema, {
      dimension: a.dimension,
      limited: true,
      ...bounds,
      granted: fromUnit(l, g.slice.granted),
      added: fromUnit(l, g.added),
      spent: fromUnit(l, g.slice.spent),
      remaining: fromUnit(l, g.remaining),
      holders: g.holders,
    });
  });
}

/**
 * The slices a release names, keyed as stored, in the limit's unit, by the id of the document
 * they are kept in (`home`, as for acquireWindows); windows the plan no longer limits are left out.
 */
export function releasedWindows(
  field: string,
  uses: readonly WindowUse[],
  plan: PlanInfo | null,
  period: BillingPeriod,
  now: Date,
  home: (slice: { key: string; end: number | null }) => SliceHome,
  keyPrefix = "",
): Map<string, { home: SliceHome; used: Record<string, number> }> {
  if (uses.length > MAX_WINDOW_ASKS) throw rpcError.invalid(`${field} may name at most ${MAX_WINDOW_ASKS} windows`);
  const dims = byDimension(plan);
  const out = new Map<string, { home: SliceHome; used: Record<string, number> }>();
  uses.forEach((u, k) => {
    const r = resolve(`${field}[${k}]`, dims, plan, period, u.dimension, u.windowStart, now.getTime(), keyPrefix);
    if (!r) return;
    const h = home(r);
    const entry = out.get(h.id) ?? { home: h, used: {} };
    entry.used[r.key] = amount(`${field}[${k}].used`, r.limits[0]!, u.used, Math.ceil);
    out.set(h.id, entry);
  });
  return out;
}
