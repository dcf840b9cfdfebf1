/**
 * The slice policy of budget leases (pure; see the README, "Budget leases"). A lease is one
 * holder's (client replica's) slice of a user's period spend cap, kept in the period counter.
 */
export interface LeaseEntry {
  granted: number;
  /** Dollars of usage events settled against the lease (added with the counter's $inc). */
  spent: number;
  expires_at?: Date;
}

/** Dollars a lease still holds back from others: granted but not settled, until expiry + grace. */
export function outstanding(l: LeaseEntry, now: number, graceMs: number): number {
  if (!l.expires_at || l.expires_at.getTime() + graceMs <= now) return 0;
  // Sums of the same costs added in another order differ in the last bits: below a micro-cent is nothing.
  const o = l.granted - (l.spent ?? 0);
  return o > 1e-9 ? o : 0;
}

export interface GrantInput {
  cap: number;
  /** Settled spend of the period (the counter's cost). */
  settled: number;
  leases: Record<string, LeaseEntry>;
  holder: string;
  need: number;
  want: number;
  now: number;
  graceMs: number;
}

export interface Grant {
  /** Dollars added to the holder's lease (0: refused). */
  added: number;
  /** What remains for everyone after the grant. */
  remaining: number;
  /** Holders with an outstanding slice, the caller included once granted. */
  holders: number;
}

/**
 * slice = clamp(remaining / (2 * (others + 1)), min = need, max = want), never more than
 * remaining; refused when remaining < need. Far from the cap a holder gets `want` and asks
 * rarely; near it the slices halve with every holder until they cover single calls.
 */
export function grant(g: GrantInput): Grant {
  let held = 0;
  let others = 0;
  for (const [id, l] of Object.entries(g.leases)) {
    const o = outstanding(l, g.now, g.graceMs);
    held += o;
    if (id !== g.holder && o > 0) others++;
  }
  const remaining = Math.max(0, g.cap - g.settled - held);
  if (remaining < g.need || remaining <= 0) return { added: 0, remaining, holders: others };
  const share = remaining / (2 * (others + 1));
  const added = Math.min(remaining, Math.min(g.want, Math.max(g.need, share)));
  return { added, remaining: remaining - added, holders: others + 1 };
}
