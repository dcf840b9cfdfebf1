import { spendsByLease, type LeaseShare } from "../domain/lease-settlement.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";

/** The leases a counter holds (leases/store.ts). */
export interface LeaseHoldings {
  held(counterId: string, ids: readonly string[]): Promise<Set<string>>;
}

/**
 * What the events spent from each budget lease of the counter, and whether some were spent
 * from none (domain/lease-settlement.ts); the counter's own `$inc` settles it (store/counters.ts).
 */
export async function leaseSpend(leases: LeaseHoldings, counterId: string, events: readonly UsageEventDoc[]): Promise<Required<LeaseShare>> {
  const named = new Set(events.flatMap((e) => (e.lease_id ? [e.lease_id] : [])));
  const held = named.size === 0 ? new Set<string>() : await leases.held(counterId, [...named]);
  return spendsByLease(events, held);
}
