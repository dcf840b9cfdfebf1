/**
 * The slice policy of budget leases (pure; see the README, "Budget leases"). A lease is one
 * holder's (client replica's) slice of a user's period caps, kept in the period counter: a
 * slice of the spend cap in whole nano-dollars, and per model a slice of that model's token cap.
 * Both are whole numbers: a lease's money is added and compared exactly.
 */
export interface Budget {
  granted: number;
  /** Usage settled against the lease (added with the counter's $inc). */
  spent: number;
}

export interface LeaseEntry extends Budget {
  expires_at?: Date;
  /** Token slices, by field-key encoded model name. */
  tokens?: Record<string, Budget>;
  /** A team's period counter: slices of the team's windows within its period, by window field (windows/slices.ts). */
  s?: Record<string, Budget & { e?: number }>;
}

/** Which budget of a lease: the nano-dollars of the spend cap (null) or a model's tokens (its field key). */
export type Dimension = string | null;

export function budgetOf(l: LeaseEntry, dim: Dimension): Budget | undefined {
  return dim === null ? l : l.tokens && Object.hasOwn(l.tokens, dim) ? l.tokens[dim] : undefined;
}

/** A lease holds something back until expiry + grace; after that it counts as returned. */
export function isLive(l: LeaseEntry, now: number, graceMs: number): boolean {
  return l.expires_at !== undefined && l.expires_at.getTime() + graceMs > now;
}

/** What a lease still holds back from others in one dimension: granted but not settled, while live. */
export function outstanding(l: LeaseEntry, now: number, graceMs: number, dim: Dimension = null): number {
  const b = budgetOf(l, dim);
  if (!b || !isLive(l, now, graceMs)) return 0;
  const o = (b.granted ?? 0) - (b.spent ?? 0);
  return o > 0 ? o : 0;
}

export interface GrantInput {
  /** The cap of the dimension (nano-dollars or tokens). */
  cap: number;
  /** Settled usage of the period in that dimension (the counter's cost, or its tokens of the model). */
  settled: number;
  leases: Record<string, LeaseEntry>;
  holder: string;
  need: number;
  want: number;
  now: number;
  graceMs: number;
  dim?: Dimension;
  /** Grants are whole numbers (nano-dollars, tokens). */
  whole?: boolean;
  /**
   * Requests granted in the same write that ask for this dimension: their holders (`holders`,
   * this one's among them or not), and how many come after this one (`later`). The share is
   * counted against the holders outside the write and those later ones, each as if it held a slice
   * already (those before took theirs out of what is free): requests that arrive together split
   * what is free equally, where one after the other the first would take the most.
   */
  together?: { holders: ReadonlySet<string>; later: number };
}

export interface Grant {
  /** Added to the holder's lease (0: refused). */
  added: number;
  /** Taken back from the holder's lease (of what it offered to spare: takeBack()). */
  returned?: number;
  /** What remains for everyone after the grant. */
  remaining: number;
  /** Holders with an outstanding slice, the caller included once granted. */
  holders: number;
}

/**
 * slice = clamp(remaining / (others + 2), min = need, max = want), never more than remaining;
 * refused when remaining < need. A grant takes at most an equal share of what remains among
 * the holders and one more, so what it leaves covers as much for every other holder and for
 * a newcomer (a holder alone takes at most half). Far from the cap a holder gets `want` and
 * asks rarely; near it the slices shrink with every grant until they cover single calls.
 */
export function grant(g: GrantInput): Grant {
  const { held, others, outside } = holdings(g, g.together?.holders);
  const sharers = g.together ? outside + g.together.later : others;
  return sliceOf({ free: g.cap - g.settled - held, others, sharers, need: g.need, want: g.want, whole: g.whole });
}

/**
 * What the live leases hold in a dimension: in all, by `holder`, how many others hold some, and
 * how many of those are not in `write` (the holders asking in the same write: GrantInput.together).
 */
function holdings(
  g: { leases: Record<string, LeaseEntry>; holder: string; now: number; graceMs: number; dim?: Dimension },
  write?: ReadonlySet<string>,
): { held: number; mine: number; others: number; outside: number } {
  const dim = g.dim ?? null;
  let held = 0;
  let mine = 0;
  let others = 0;
  let outside = 0;
  for (const [id, l] of Object.entries(g.leases)) {
    const o = outstanding(l, g.now, g.graceMs, dim);
    held += o;
    if (id === g.holder) mine = o;
    else if (o > 0) {
      others++;
      if (!write?.has(id)) outside++;
    }
  }
  return { held, mine, others, outside };
}

export interface SliceInput {
  /** cap - settled - what every live lease holds. */
  free: number;
  /** Holders other than the asking one with something outstanding. */
  others: number;
  /** Whom the share is counted against (default `others`): see GrantInput.together. */
  sharers?: number;
  need: number;
  want: number;
  whole?: boolean;
}

/** The slice rule of grant(), from what is free and how many others hold some (window slices count these themselves). */
export function sliceOf(g: SliceInput): Grant {
  const others = g.others;
  const remaining = Math.max(0, g.free);
  if (remaining < g.need || remaining <= 0) return { added: 0, remaining, holders: others };
  const share = remaining / ((g.sharers ?? others) + 2);
  const slice = Math.min(remaining, Math.min(g.want, Math.max(g.need, share)));
  // need is whole for tokens and at most remaining, so the floor still covers it.
  const added = g.whole ? Math.floor(slice) : slice;
  if (added <= 0) return { added: 0, remaining, holders: others };
  return { added, remaining: remaining - added, holders: others + 1 };
}

export interface TakeBackInput {
  cap: number;
  settled: number;
  leases: Record<string, LeaseEntry>;
  holder: string;
  /** What the holder offers: unused, and not to be spent before the answer comes. */
  spare: number;
  now: number;
  graceMs: number;
  dim?: Dimension;
}

/**
 * What goes back from a holder that offers `spare`: what its lease holds beyond an equal share
 * of the cap's unsettled part among the holders and one more (the slice rule's share had every
 * slice been granted at once), at most `spare`, whole. Holders that asked first were granted
 * from a cap nobody else held yet; this is how what they hold comes back to the ones that came
 * after them and run short, without a holder ever losing what it may still spend.
 */
export function takeBack(g: TakeBackInput): Grant {
  const { held, mine, others } = holdings(g);
  const share = Math.max(0, g.cap - g.settled) / (others + 2);
  const returned = Math.max(0, Math.floor(Math.min(g.spare, mine - share)));
  const free = Math.max(0, g.cap - g.settled - held) + returned;
  return { added: 0, returned, remaining: free, holders: others + (mine - returned > 0 ? 1 : 0) };
}
