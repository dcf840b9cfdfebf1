import { toNano } from "@meter/rules";
import { encodeKey } from "./field-keys.ts";
import { outstanding, type LeaseEntry } from "./lease-policy.ts";
import type { Countable } from "./totals.ts";

/** Usage spent from one lease: nano-dollars, and tokens by field-key encoded model. */
export interface LeaseSpend {
  cost: number;
  tokens: Record<string, number>;
}

/** What of a counter's share was spent from budget leases (period counters only). */
export interface LeaseShare {
  /** What was spent from each budget lease. */
  leases?: Record<string, LeaseSpend>;
  /** Some of the events were not spent from a lease, or spent more than their lease held outstanding. */
  unleased?: boolean;
}

/** The leases the events name, each once. */
export function namedLeases(events: readonly { lease_id?: string | null }[]): string[] {
  return [...new Set(events.flatMap((e) => (e.lease_id ? [e.lease_id] : [])))];
}

/**
 * What the events spent from each lease in `held` (the leases the counter holds, by id), and
 * whether some lower what remains for every holder: spent from none (an event naming a lease
 * the counter does not hold, granted for another period or never), or more than a lease holds
 * outstanding in a dimension (a call that cost more than the slice had left, a lapsed lease).
 * Either must bump the version, so that a grant computed before it does not land.
 */
export function spendsByLease(
  events: readonly (Countable & { lease_id?: string | null })[],
  held: Readonly<Record<string, LeaseEntry>>,
  now: number,
  graceMs: number,
): Required<LeaseShare> {
  // Maps, not plain objects: lease ids and model names are the caller's ("__proto__" is a valid id).
  const leases = new Map<string, { cost: number; tokens: Map<string, number> }>();
  let unleased = false;
  for (const e of events) {
    if (!e.lease_id || !Object.hasOwn(held, e.lease_id)) {
      unleased = true;
      continue;
    }
    let l = leases.get(e.lease_id);
    if (!l) leases.set(e.lease_id, (l = { cost: 0, tokens: new Map() }));
    l.cost += toNano(e.cost_total);
    const model = e.counted_model ?? e.model;
    const slices = held[e.lease_id]!.tokens;
    // Tokens settle against the model's slice; a model the lease holds none of is one the
    // holder's plan does not cap (a client asks a slice of every capped model a call uses), so
    // its tokens lower nothing any holder is granted and bump nothing.
    if (model !== null && slices && Object.hasOwn(slices, encodeKey(model))) {
      const key = encodeKey(model);
      l.tokens.set(key, (l.tokens.get(key) ?? 0) + e.total_tokens);
    }
  }
  for (const [id, l] of leases) {
    const entry = held[id]!;
    if (l.cost > outstanding(entry, now, graceMs)) unleased = true;
    for (const [key, n] of l.tokens) if (n > outstanding(entry, now, graceMs, key)) unleased = true;
  }
  const spends = [...leases].map(([id, l]): [string, LeaseSpend] => [id, { cost: l.cost, tokens: Object.fromEntries(l.tokens) }]);
  return { leases: Object.fromEntries(spends), unleased };
}

/**
 * Whether counting a share bumps the counter's version. Leases settle in the same update that
 * counts the usage: usage spent from a lease raises the counter and that lease's `spent` alike,
 * so cap - settled - outstanding stays as it was. Any other usage lowers it, so it bumps the
 * version a grant is conditional on (a grant computed before it must not land).
 */
export function bumpsVersion(d: LeaseShare): boolean {
  return d.leases === undefined || d.unleased === true;
}
