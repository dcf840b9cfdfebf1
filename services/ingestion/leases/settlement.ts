import { toNano } from "@meter/rules";
import type { IngestionDeps } from "../deps.ts";
import { encodeKey } from "../domain/field-keys.ts";
import type { Double } from "mongodb";
import { wide, type CounterDelta } from "../store/counters.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";

/** Usage spent from one lease: nano-dollars, and tokens by field-key encoded model. */
export interface LeaseSpend {
  cost: number;
  tokens: Record<string, number>;
}

/**
 * What the events spent from each budget lease of the counter, and whether some were spent
 * from none. An event naming a lease the counter does not hold (granted for another period,
 * or never) counts as spent from none: it lowers what remains, so it must bump the version.
 */
export async function leaseSpend(deps: IngestionDeps, counterId: string, events: readonly UsageEventDoc[]): Promise<Pick<CounterDelta, "leases" | "unleased">> {
  const named = new Set(events.flatMap((e) => (e.lease_id ? [e.lease_id] : [])));
  const held = named.size === 0 ? new Set<string>() : await deps.leases.store.held(counterId, [...named]);
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
 * The lease fields of a counter's `$inc` for delta `d`. Settles against the leases in the
 * same update that counts the usage: usage spent from a lease raises the counter and that
 * lease's `spent` alike, so cap - settled - outstanding stays as it was. Any other usage
 * lowers it, so it bumps the version a grant is conditional on (a grant computed before it
 * must not land).
 */
export function settlementInc(d: Pick<CounterDelta, "leases" | "unleased">): Record<string, number | Double> {
  const inc: Record<string, number | Double> = {};
  for (const [id, l] of Object.entries(d.leases ?? {})) {
    inc[`leases.${id}.spent`] = wide(l.cost);
    for (const [k, v] of Object.entries(l.tokens)) inc[`leases.${id}.tokens.${k}.spent`] = wide(v);
  }
  if (d.leases === undefined || d.unleased) inc.version = 1;
  return inc;
}
