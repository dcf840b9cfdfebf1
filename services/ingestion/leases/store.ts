import type { Collection } from "mongodb";
import { GroupCommit } from "@meter/lib/group-commit";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { own, setOwn } from "@meter/lib/own";
import { rpcError } from "@meter/lib/errors";
import { budgetOf, grant, isLive, takeBack, type Budget, type Dimension, type Grant, type LeaseEntry } from "../domain/lease-policy.ts";
import { readTotals, type StoredCounterDoc } from "../store/counters.ts";

/** Most leases (holders) one user's period may have at once. */
export const MAX_LEASES = 1_000;
/** A counter asked for a slice through this process within this long (ms), or up to twice as long, is granted from at once (LeaseStore.acquire). */
const WARM_MS = 60_000;
/** A gathering lasts at most this many quiet periods (LeaseStore.acquire). */
const GATHER_MAX_QUIETS = 4;
/** Conditional writes tried before a grant gives up (each miss means another writer won). */
const ATTEMPTS = 50;

/** A counter as the lease store sees it: the counter plus its leases and a version. */
export type LeasedCounter = StoredCounterDoc & {
  leases?: Record<string, LeaseEntry>;
  version?: number;
};

export interface CounterRef {
  id: string;
  productId: string;
  userId: string;
  start: Date;
  end: Date;
}

/** One dimension asked for: the spend cap in nano-dollars (dim null) or a model's token cap. */
export interface Ask {
  dim: Dimension;
  cap: number;
  need: number;
  want: number;
  /** What the holder offers back of this dimension (takeBack()): taken instead of granting when it holds more than its share. */
  spare?: number;
}

export interface AcquireInput {
  holder: string;
  asks: readonly Ask[];
  ttlMs: number;
  graceMs: number;
  now: Date;
}

export interface LeaseView {
  /** One grant per ask, in the order asked. */
  grants: Grant[];
  lease: LeaseEntry;
}

/** One acquire waiting for its counter's next write. */
export interface Pending {
  ref: CounterRef;
  a: AcquireInput;
}

/** First requests for a counter waiting for each other, and the timers that end the wait. */
interface Gathering {
  items: { p: Pending; resolve: (v: LeaseView) => void; reject: (e: unknown) => void }[];
  quiet: NodeJS.Timeout;
  cutoff: NodeJS.Timeout;
}

/** What a group's write does for one of its requests: its answer, or why it is refused. */
type Outcome = { view: LeaseView } | { error: Error };

/**
 * Leases live in the period counter they draw on (`leases.<holder>`), so one single-document
 * write grants against cap - settled - outstanding in every dimension asked: read, compute,
 * write conditionally on `version`, retry on a miss. Every counter change that lowers what
 * remains without settling a lease bumps `version` (usage not spent from a lease, see
 * store/counters.ts), so a grant computed from a stale read never lands.
 *
 * Requests for one counter are granted in groups, one write at a time per counter in this
 * process: the requests that arrive while a write is on its way are granted together by the
 * next, in arrival order, each seeing the slices granted before it. Replicas that ask at once
 * (they run low together) would otherwise each read, lose the conditional write to another and
 * retry, one round trip of the database per holder ahead of them, on the busiest counter.
 *
 * Those granted in one write share what is free equally (GrantInput.together). Replicas that
 * start together ask within tens of milliseconds of each other: granted in arrival order, the
 * first would take up to half the cap and the eighth a fiftieth of it, and run dry within its
 * first round trip (`npm run bench:leases`, sprint case). So the first requests for a counter
 * not asked for through this process within WARM_MS (or up to twice that) wait until none has
 * arrived for `gatherMs` (at most GATHER_MAX_QUIETS times that), and are granted in one write.
 */
export class LeaseStore {
  /** Requests for one counter, granted a group per write (lib's GroupCommit, keyed by the counter's id). */
  private readonly groups = new GroupCommit<Pending, LeaseView>(
    async (group) => (await this.grantGroup(group)).map((o) => ("view" in o ? o.view : o.error)),
    // The requests a gathering hands over at once go in one round (acquire).
    () => Promise.resolve(),
  );
  /**
   * The counters asked for a slice through this process since `since` (asked) and in the
   * WARM_MS before (before): two generations, so that remembering them costs a request O(1)
   * and memory only for the counters of the last two minutes.
   */
  private asked = new Set<string>();
  private before = new Set<string>();
  private since = Date.now();
  /** The first requests for a counter not asked for lately, waiting for each other. */
  private readonly gathering = new Map<string, Gathering>();

  /**
   * `owner`: the counters' owner field (a team's counters in team_counters are keyed by "team_id", store/counters.ts).
   * `gatherMs`: the quiet period that ends a gathering of first requests (0: none gather).
   */
  constructor(
    private readonly counters: Collection<LeasedCounter>,
    private readonly owner: "user_id" | "team_id" = "user_id",
    private readonly gatherMs = 0,
  ) {}

  acquire(ref: CounterRef, a: AcquireInput): Promise<LeaseView> {
    // A request asking for nothing (a renewal, a probe) neither waits nor counts.
    if (this.gatherMs <= 0 || !a.asks.some((ask) => ask.want > 0)) return this.groups.run({ ref, a }, ref.id);
    const now = Date.now();
    if (now - this.since >= WARM_MS) {
      this.before = now - this.since >= 2 * WARM_MS ? new Set() : this.asked;
      this.asked = new Set();
      this.since = now;
    }
    const warm = this.asked.has(ref.id) || this.before.has(ref.id);
    this.asked.add(ref.id);
    const batch = this.gathering.get(ref.id);
    if (warm && !batch) return this.groups.run({ ref, a }, ref.id);
    return new Promise((resolve, reject) => {
      const item = { p: { ref, a }, resolve, reject };
      if (batch) {
        batch.items.push(item);
        // Each request arriving gives the others another quiet period.
        batch.quiet.refresh();
        return;
      }
      this.gathering.set(ref.id, {
        items: [item],
        quiet: setTimeout(() => this.handOver(ref.id), this.gatherMs),
        cutoff: setTimeout(() => this.handOver(ref.id), GATHER_MAX_QUIETS * this.gatherMs),
      });
    });
  }

  /** The requests gathered for a counter go in one round (the GroupCommit's gather lets them all join it). */
  private handOver(id: string): void {
    const gathered = this.gathering.get(id);
    if (!gathered) return;
    this.gathering.delete(id);
    clearTimeout(gathered.quiet);
    clearTimeout(gathered.cutoff);
    for (const w of gathered.items) this.groups.run(w.p, id).then(w.resolve, w.reject);
  }

  private async grantGroup(group: readonly Pending[]): Promise<Outcome[]> {
    for (let i = 0; i < ATTEMPTS; i++) {
      const doc = (await this.counters.findOne({ _id: group[0]!.ref.id })) ?? (await this.create(group[0]!.ref));
      const { outcomes, update } = planGroup(doc, group);
      if (update === null) return outcomes;
      const res = await this.counters.updateOne(versioned(doc), update);
      if (res.modifiedCount === 1) return outcomes;
    }
    throw rpcError.unavailable(`the ${this.owner === "team_id" ? "team's" : "user's"} budget is changing too fast to lease from; retry`);
  }

  /**
   * Sets the lease to what its holder spent in all, in nano-dollars and in tokens of each model
   * named: its outstanding part becomes spent-but-unsettled. A model not named keeps its slice
   * until the lease lapses.
   */
  async release(counterId: string, holder: string, used: number | undefined, usedTokens: Record<string, number>): Promise<LeaseEntry | null> {
    const set: Record<string, number> = used === undefined ? {} : { [`leases.${holder}.granted`]: used };
    for (const [dim, n] of Object.entries(usedTokens)) set[`${path(holder, dim)}.granted`] = n;
    const doc = await this.counters.findOneAndUpdate(
      { _id: counterId, [`leases.${holder}.expires_at`]: { $exists: true } },
      { $set: set, $inc: { version: 1 } },
      { returnDocument: "after" },
    );
    return own(doc?.leases, holder) ?? null;
  }

  /** The entries of the leases `ids` the counter holds (granted there, not yet removed as lapsed), window slices included (a team's counter: leases/team.ts). */
  async entries(counterId: string, ids: readonly string[]): Promise<Record<string, LeaseEntry>> {
    const projection = Object.fromEntries(ids.map((id) => [`leases.${id}`, 1]));
    const doc = await this.counters.findOne({ _id: counterId }, { projection });
    return Object.fromEntries(ids.flatMap((id) => (own(doc?.leases, id)?.expires_at !== undefined ? [[id, own(doc!.leases, id)!]] : [])));
  }

  /** An empty counter to lease from (usage creates counters too; whoever is first wins). */
  private async create(ref: CounterRef): Promise<LeasedCounter> {
    try {
      const doc = await this.counters.findOneAndUpdate({ _id: ref.id }, { $setOnInsert: emptyCounter(ref, this.owner) }, { upsert: true, returnDocument: "after" });
      if (doc) return doc;
    } catch (err) {
      // Two upserts at once: the other created it.
      if (!isDuplicateKeyError(err)) throw err;
    }
    return (await this.counters.findOne({ _id: ref.id }))!;
  }
}

/** The fields of a period counter nothing was counted in yet, as a lease creates it (`owner` as LeaseStore's). */
export function emptyCounter(ref: Omit<CounterRef, "id">, owner: "user_id" | "team_id") {
  return {
    product_id: ref.productId,
    [owner]: ref.userId,
    period_start: ref.start,
    period_end: ref.end,
    cost_nano: 0,
    tokens: 0,
    tool_calls: 0,
    events: 0,
    tokens_by_model: {},
    cost_nano_by_model: {},
    jobs: {},
    version: 0,
  };
}

/**
 * The grants of a group of requests against one read of the counter, in order, each counting
 * the slices granted before it, and the one update that writes them (null: nothing granted).
 */
export function planGroup(doc: LeasedCounter, group: readonly Pending[]): { outcomes: Outcome[]; update: Record<string, unknown> | null } {
  const leases: Record<string, LeaseEntry> = { ...(doc.leases ?? {}) };
  const set: Record<string, unknown> = {};
  // spent is only ever $inc'ed (settlements run beside this write); +0 creates it.
  const inc: Record<string, number> = { version: 1 };
  const written = new Set<string>();
  const lapsed = new Set<string>();
  // The requests asking for a slice of each dimension in this write: they share what is free equally (GrantInput.together).
  const asking = new Map<Dimension, { holders: Set<string>; count: number; seen: number }>();
  if (group.length > 1) {
    for (const { a } of group) {
      for (const ask of a.asks) {
        if (ask.want <= 0) continue;
        const d = asking.get(ask.dim) ?? asking.set(ask.dim, { holders: new Set(), count: 0, seen: 0 }).get(ask.dim)!;
        d.holders.add(a.holder);
        d.count++;
      }
    }
  }
  const outcomes = group.map(({ a }): Outcome => {
    const now = a.now.getTime();
    const mine = own(leases, a.holder);
    const grants = a.asks.map((ask) => {
      const facts = { cap: ask.cap, settled: settledOf(doc, ask.dim), leases, holder: a.holder, now, graceMs: a.graceMs, dim: ask.dim };
      const d = ask.want > 0 ? asking.get(ask.dim) : undefined;
      const later = d ? d.count - 1 - d.seen++ : 0;
      // A holder holding more than its share gives back instead of being granted more.
      const back = ask.spare ? takeBack({ ...facts, spare: ask.spare }) : null;
      if (back?.returned) return back;
      const together = d && d.count > 1 ? { holders: d.holders, later } : undefined;
      return grant({ ...facts, need: ask.need, want: ask.want, whole: true, together });
    });
    if (grants.every((g) => g.added === 0 && !g.returned)) {
      // Nothing more, but a live lease's holder still holds what it was granted for calls that
      // run on (a call outlasting the lifetime): a renewal (asking no need) keeps it from
      // lapsing under them. A call's refused need renews nothing: what the holder keeps unused
      // goes back when the lease lapses, as before.
      if (mine === undefined || !isLive(mine, now, a.graceMs) || a.asks.some((ask) => ask.need > 0)) return { view: { grants, lease: mine ?? { granted: 0, spent: 0 } } };
      const expires_at = new Date(now + a.ttlMs);
      set[`leases.${a.holder}.expires_at`] = expires_at;
      written.add(a.holder);
      const lease = { ...mine, expires_at };
      setOwn(leases, a.holder, lease);
      return { view: { grants, lease } };
    }
    let live = 0;
    for (const [id, l] of Object.entries(leases)) {
      if (id === a.holder) continue;
      if (isLive(l, now, a.graceMs)) live++;
      else lapsed.add(id);
    }
    if (!mine && live >= MAX_LEASES) {
      return { error: rpcError.tooLarge(`user has ${MAX_LEASES} leases outstanding; release some or wait for them to expire`) };
    }
    // A live lease grows; a lapsed one restarts, in every dimension, from what was settled against it.
    const isMineLive = mine !== undefined && isLive(mine, now, a.graceMs);
    const next = new Map<Dimension, Budget>();
    for (const dim of [null, ...Object.keys(mine?.tokens ?? {})]) {
      const b = mine ? budgetOf(mine, dim) : undefined;
      // A lease holding only token slices has no dollar budget written (granted absent): it holds none.
      if (b) next.set(dim, { granted: isMineLive ? (b.granted ?? 0) : (b.spent ?? 0), spent: b.spent ?? 0 });
    }
    a.asks.forEach((ask, k) => {
      const b = mine ? budgetOf(mine, ask.dim) : undefined;
      const spent = b?.spent ?? 0;
      const base = isMineLive && b ? Math.max(b.granted ?? 0, spent) : spent;
      next.set(ask.dim, { granted: base + grants[k]!.added - (grants[k]!.returned ?? 0), spent });
    });
    const expires = new Date(now + a.ttlMs);
    set[`leases.${a.holder}.expires_at`] = expires;
    for (const [dim, b] of next) {
      set[`${path(a.holder, dim)}.granted`] = b.granted;
      inc[`${path(a.holder, dim)}.spent`] = 0;
    }
    // A team's counter also holds window slices (windows/slices.ts): a lapsed lease restarts them too.
    if (!isMineLive) for (const [key, s] of Object.entries(mine?.s ?? {})) set[`leases.${a.holder}.s.${key}.granted`] = Number(s.spent ?? 0);
    written.add(a.holder);
    const lease: LeaseEntry = { ...(next.get(null) ?? { granted: 0, spent: 0 }), expires_at: expires };
    const tokens = [...next].filter(([dim]) => dim !== null);
    if (tokens.length > 0) lease.tokens = Object.fromEntries(tokens);
    // The requests after this one in the group count it (a holder may be called "__proto__").
    setOwn(leases, a.holder, lease);
    return { view: { grants, lease } };
  });
  if (written.size === 0) return { outcomes, update: null };
  const unset = Object.fromEntries([...lapsed].filter((id) => !written.has(id)).map((id) => [`leases.${id}`, ""]));
  const update: Record<string, unknown> = { $set: set, $inc: inc };
  if (Object.keys(unset).length > 0) update.$unset = unset;
  return { outcomes, update };
}

/** Settled usage of the period in a dimension: the counter's cost (nano-dollars), or its tokens of the model. */
function settledOf(doc: LeasedCounter, dim: Dimension): number {
  return dim === null ? readTotals(doc).cost : (own(doc.tokens_by_model, dim) ?? 0);
}

/** Field path of a lease's budget in a dimension. */
function path(holder: string, dim: Dimension): string {
  return dim === null ? `leases.${holder}` : `leases.${holder}.tokens.${dim}`;
}

/** The filter that matches the document only as it was read. */
function versioned(doc: LeasedCounter) {
  return doc.version === undefined ? { _id: doc._id, version: { $exists: false } } : { _id: doc._id, version: doc.version };
}
