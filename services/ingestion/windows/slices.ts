/**
 * Lease slices of the windows of a plan's `limits` (pure; ingestion README, "Budget leases"):
 * a holder's slice of one window is kept in the user's window document beside the window's
 * count, `leases.<holder>.s.<slice key>` = `{granted, spent, e}` (the limit's unit: nano-dollars,
 * tokens or requests; `e` the end of a calendar or period window). A calendar window's slice key
 * is the window's count key (windowField), so a share of an event settles against the slice of
 * the window it is counted in; a rolling window has one slice per dimension (`<dimension>|r`),
 * drawn against the sum of its live buckets.
 */
import { own } from "@meter/lib/own";
import { bucketCounts } from "@meter/rules";
import { encodeKey } from "../domain/field-keys.ts";
import { sliceOf, type Grant } from "../domain/lease-policy.ts";
import type { WindowDelta } from "./shares.ts";

export interface SliceEntry {
  granted: number;
  /** Usage settled against the slice (added with the window's own $inc). */
  spent: number;
  /** Calendar and period windows: the window's end (epoch ms); the slice is worth nothing from then on. */
  e?: number;
}

export interface WindowLeaseEntry {
  expires_at?: Date;
  s?: Record<string, SliceEntry>;
  /** In a team's period counter the lease also holds the period's spend slice (leases/store.ts). */
  granted?: number;
  spent?: number;
}

/** The slice key of a rolling window's dimension. */
export function rollingSliceKey(dimension: string): string {
  return `${encodeKey(dimension)}|r`;
}

/** The slice an event's share (its window count key) settles against. */
export function sliceKeyOfShare(shareKey: string): string {
  const dim = shareKey.slice(0, shareKey.lastIndexOf("|"));
  // dimensionKey is `<metric>:<window>:...`; neither part is changed by encodeKey. A team plan's
  // member-scope window is prefixed `team:<service team id>:` (teams/shares.ts memberPrefix).
  const bare = dim.startsWith("team:") ? dim.slice(dim.indexOf(":", "team:".length) + 1) : dim;
  return bare.split(":", 2)[1] === "rolling" ? `${dim}|r` : shareKey;
}

/** A lease holds something back until expiry + grace (as period leases do). */
export function isLeaseLive(l: WindowLeaseEntry, now: number, graceMs: number): boolean {
  return l.expires_at !== undefined && new Date(l.expires_at).getTime() + graceMs > now;
}

/** What a lease still holds back of one window: granted but not settled, while the lease is live and the window has not ended. */
export function sliceOutstanding(l: WindowLeaseEntry, key: string, now: number, graceMs: number): number {
  const s = own(l.s, key);
  if (!s || !isLeaseLive(l, now, graceMs)) return 0;
  if (s.e !== undefined && Number(s.e) <= now) return 0;
  const o = Number(s.granted ?? 0) - Number(s.spent ?? 0);
  return o > 0 ? o : 0;
}

/** Counted in a window now: a calendar window's entry, or the sum of a rolling window's live buckets. */
export function settledIn(w: Record<string, { n: number; e: number }> | undefined, key: string, rolling: { duration: number } | null, now: number): number {
  if (!rolling) {
    const v = own(w, key);
    return v && Number(v.e) > now ? Number(v.n) : 0;
  }
  const prefix = key.slice(0, key.length - 1); // "<dimension>|"
  let sum = 0;
  for (const [k, v] of Object.entries(w ?? {})) {
    if (!k.startsWith(prefix)) continue;
    const start = Number(k.slice(prefix.length));
    if (Number.isFinite(start) && bucketCounts({ start, used: 0 }, rolling.duration, now)) sum += Number(v.n);
  }
  return sum;
}

/** One window slice asked for, in the limit's unit, with what its window has counted. */
export interface SliceAsk {
  key: string;
  /** The hard mark of the dimension (the strictest of the plan's limits of it). */
  cap: number;
  settled: number;
  /** Calendar and period windows: the window's end. */
  end: number | null;
  need: number;
  want: number;
}

export interface SliceGrant extends Grant {
  /** The holder's slice after the grant (granted in all, settled against it). */
  slice: SliceEntry;
}

/**
 * The grants of one holder's asks against one read of the document, and the update writing
 * them (null: nothing granted). A live lease grows; a lapsed one restarts every slice from what
 * was settled against it. Lapsed leases of others and the holder's slices of ended windows go.
 */
export function planSlices(
  leases: Record<string, WindowLeaseEntry>,
  holder: string,
  asks: readonly SliceAsk[],
  now: number,
  ttlMs: number,
  graceMs: number,
): { grants: SliceGrant[]; update: Record<string, unknown> | null } {
  const mine = own(leases, holder);
  const mineLive = mine !== undefined && isLeaseLive(mine, now, graceMs);
  const grants = asks.map((a): SliceGrant => {
    let held = 0;
    let others = 0;
    for (const [id, l] of Object.entries(leases)) {
      const o = sliceOutstanding(l, a.key, now, graceMs);
      held += o;
      if (id !== holder && o > 0) others++;
    }
    const g = sliceOf({ free: a.cap - a.settled - held, others, need: a.need, want: a.want, whole: true });
    const s = own(mine?.s, a.key);
    const spent = Number(s?.spent ?? 0);
    const base = mineLive && s ? Math.max(Number(s.granted), spent) : spent;
    return { ...g, slice: { granted: base + g.added, spent, ...(a.end === null ? {} : { e: a.end }) } };
  });
  // Nothing more, but a live lease's slices stay held for the calls that run on them (a call
  // outlasting the lifetime): a renewal (asking no need) keeps them from lapsing; a refused
  // need renews nothing.
  if (grants.every((g) => g.added === 0)) {
    const renewal = mineLive && asks.every((a) => a.need === 0);
    return { grants, update: renewal ? { $set: { [`leases.${holder}.expires_at`]: new Date(now + ttlMs) }, $inc: { version: 1 } } : null };
  }
  const set: Record<string, unknown> = { [`leases.${holder}.expires_at`]: new Date(now + ttlMs) };
  // spent is only ever $inc'ed (settlements run beside this write); +0 creates it.
  const inc: Record<string, number> = { version: 1 };
  const unset: Record<string, ""> = {};
  const asked = new Set(asks.map((a) => a.key));
  // A lapsed lease restarts from what was settled against it: its period spend slice too, where it has one.
  if (mine !== undefined && !mineLive && mine.granted !== undefined) set[`leases.${holder}.granted`] = Number(mine.spent ?? 0);
  for (const [key, s] of Object.entries(mine?.s ?? {})) {
    if (asked.has(key)) continue;
    if (s.e !== undefined && Number(s.e) <= now) unset[`leases.${holder}.s.${key}`] = "";
    else if (!mineLive) set[`leases.${holder}.s.${key}.granted`] = Number(s.spent ?? 0);
  }
  asks.forEach((a, k) => {
    const g = grants[k]!;
    set[`leases.${holder}.s.${a.key}.granted`] = g.slice.granted;
    if (a.end !== null) set[`leases.${holder}.s.${a.key}.e`] = a.end;
    inc[`leases.${holder}.s.${a.key}.spent`] = 0;
  });
  for (const [id, l] of Object.entries(leases)) if (id !== holder && !isLeaseLive(l, now, graceMs)) unset[`leases.${id}`] = "";
  const update: Record<string, unknown> = { $set: set, $inc: inc };
  if (Object.keys(unset).length > 0) update.$unset = unset;
  return { grants, update };
}

/**
 * What a job's window shares settle against the leases the events name, and whether the job
 * must bump the document's version: any share not spent from a live slice that covers it lowers
 * what remains for every holder, so a grant computed before it must not land (as usage not
 * from a lease bumps a period counter's version).
 */
export function windowSettlement(d: Pick<WindowDelta, "byLease" | "unleased">, leases: Record<string, WindowLeaseEntry>, now: number, graceMs: number): { spent: Record<string, number>; bump: boolean } {
  const spent: Record<string, number> = {};
  let bump = d.unleased === true;
  for (const [lease, shares] of d.byLease ?? []) {
    const l = own(leases, lease);
    // A rolling window's buckets all settle against its one slice.
    const bySlice = new Map<string, number>();
    for (const [shareKey, n] of shares) bySlice.set(sliceKeyOfShare(shareKey), (bySlice.get(sliceKeyOfShare(shareKey)) ?? 0) + n);
    for (const [key, n] of bySlice) {
      // Settled against the slice only when it still holds all of it; else (a lapsed lease, a
      // slice never granted, a holder spending past its slice) the usage lowers what remains.
      if (!l || sliceOutstanding(l, key, now, graceMs) < n) {
        bump = true;
        if (!l || !own(l.s, key)) continue;
      }
      spent[`leases.${lease}.s.${key}.spent`] = (spent[`leases.${lease}.s.${key}.spent`] ?? 0) + n;
    }
  }
  return { spent, bump };
}
