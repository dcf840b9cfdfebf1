import { toNano } from "@meter/rules";
import { encodeKey } from "./field-keys.ts";
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
  /** Some of the events were not spent from a lease. */
  unleased?: boolean;
}

/** The leases the events name, each once. */
export function namedLeases(events: readonly { lease_id?: string | null }[]): string[] {
  return [...new Set(events.flatMap((e) => (e.lease_id ? [e.lease_id] : [])))];
}

/**
 * What the events spent from each lease in `held` (the leases the counter holds), and whether
 * some were spent from none. An event naming a lease the counter does not hold (granted for
 * another period, or never) counts as spent from none: it lowers what remains, so it must bump
 * the version.
 */
export function spendsByLease(events: readonly (Countable & { lease_id?: string | null })[], held: ReadonlySet<string>): Required<LeaseShare> {
  // Maps, not plain objects: lease ids and model names are the caller's ("__proto__" is a valid id).
  const leases = new Map<string, { cost: number; tokens: Map<string, number> }>();
  let unleased = false;
  for (const e of events) {
    if (!e.lease_id || !held.has(e.lease_id)) {
      unleased = true;
      continue;
    }
    let l = leases.get(e.lease_id);
    if (!l) leases.set(e.lease_id, (l = { cost: 0, tokens: new Map() }));
    l.cost += toNano(e.cost_total);
    const model = e.counted_model ?? e.model;
    if (model !== null) {
      const key = encodeKey(model);
      l.tokens.set(key, (l.tokens.get(key) ?? 0) + e.total_tokens);
    }
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
