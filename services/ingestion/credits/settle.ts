/**
 * Drawing credits, exactly once because it is derived from the counters: what a billing period
 * needs is what its spend went beyond the allowance, less what of that was spent while its plan
 * drew no credits (allocate.ts needed), and a settle draws what it needs beyond what that
 * period drew already (`drawn`). A counter counts every event once, so repeating a settle (a
 * retried, replayed or recovered job, a late event) draws nothing twice and misses nothing.
 */
import { rpcError } from "@meter/lib/errors";
import { toNano } from "@meter/rules";
import type { RetentionPolicy } from "../domain/retention-policy.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";
import { needed } from "./allocate.ts";
import { AccountChange, accountId, settledOp, teamOwner, userOwner, type CreditAccountDoc, type PeriodNeed, type Settled } from "./account.ts";
import { writeSettled, type FlushDeps } from "./ledger.ts";
import { poolCounterId } from "../teams/shares.ts";
import type { PeriodSpend } from "../store/counters.ts";

/** What changing accounts needs: their store, the outbox their webhooks go to, the clock. */
export type AccountDeps = FlushDeps;

/** What adding, voiding and expiring grants needs: the accounts, and how long periods' draws are kept. */
export interface CreditDeps extends AccountDeps {
  retention: RetentionPolicy;
}

/** Rounds of read, compute, conditional write before giving up (503, retryable). */
const MAX_ATTEMPTS = 50;

export interface AccountTarget {
  productId: string;
  owner: string;
  /** The plan's credits_low_at in dollars, when the caller knows the plan. */
  lowAt?: number | null;
  /** Whether the plan has credits enabled, when the caller knows the plan. */
  enabled?: boolean;
}

/**
 * What a change computes from beside the accounts (counters' spends): read after the copies of
 * the accounts it computes from were taken, so that every move of draws (moveDrawn) a copy holds
 * is in what was read too (a move changes its counters before the account). Read before, a
 * period's spend may predate a move the copy holds: its need is then counted with the moved
 * events still in it, and what it drew for them is drawn again.
 */
export interface ReadBeside {
  /** Copies of the accounts this process held before the caller's first read (CreditStore.held): a first try computes from them and that read. */
  held?: ReadonlyMap<string, CreditAccountDoc>;
  /** Reads again what these accounts' changes need: their copies were taken after the last read. */
  reload(ids: readonly string[]): Promise<void>;
}

/**
 * Changes accounts: reads them (one read by `_id` list), computes each one's change from what
 * it read (`make`), first writes elsewhere what the accounts held that no longer changes
 * (writeSettled), then writes the accounts conditionally on their versions (one command per
 * 200); those that met another writer are read and computed again. What a change computes from
 * beside the accounts (`beside`) is read again for each account whose copy changed since it was
 * read. What a change decided that goes elsewhere (webhooks, final grants, grant/void/expiry
 * entries) goes by one more such round for those accounts. Returns every account as it is after.
 */
export async function changeAccounts(
  deps: AccountDeps,
  targets: ReadonlyMap<string, AccountTarget>,
  make: (id: string, change: AccountChange) => void,
  beside?: ReadBeside,
): Promise<Map<string, CreditAccountDoc | null>> {
  const out = await round(deps, targets, make, beside);
  const now = deps.now().getTime();
  const more = new Map([...targets].filter(([id]) => {
    const a = out.get(id);
    return a && (Object.keys(a.notices).length > 0 || Object.values(a.grants).some((g) => g.final) || Object.values(a.ops).some((op) => settledOp(op, now)));
  }));
  if (more.size > 0) for (const [id, a] of await round(deps, more, () => {})) out.set(id, a);
  return out;
}

async function round(
  deps: AccountDeps,
  targets: ReadonlyMap<string, AccountTarget>,
  make: (id: string, change: AccountChange) => void,
  beside?: ReadBeside,
): Promise<Map<string, CreditAccountDoc | null>> {
  const out = new Map<string, CreditAccountDoc | null>();
  // The version of the copy each account's `beside` was read after (0: none stored): a copy of
  // the same version holds nothing that read missed.
  const readAfter = new Map<string, number>();
  let ids = [...targets.keys()];
  for (let attempt = 0; ids.length > 0; attempt++) {
    if (attempt === MAX_ATTEMPTS) throw rpcError.unavailable("credit accounts are being changed by many writers at once; retry");
    const now = deps.now();
    // The first try computes from the accounts as this process last saw them (those it held
    // before `beside` was read, when told); a miss reads them.
    const cached = attempt === 0;
    const held = cached ? beside?.held : undefined;
    const taken = held ? ids.filter((id) => !held.has(id)) : ids;
    const accounts = await deps.credits.accountsOf(taken, cached);
    if (held) {
      for (const id of ids) {
        const a = held.get(id);
        if (!a) continue;
        accounts.set(id, a);
        readAfter.set(id, a.version);
      }
    }
    if (beside) {
      const version = (id: string) => accounts.get(id)?.version ?? 0;
      const stale = taken.filter((id) => readAfter.get(id) !== version(id));
      if (stale.length > 0) await beside.reload(stale);
      for (const id of stale) readAfter.set(id, version(id));
    }
    const writes = [];
    const settled = [];
    const again: string[] = [];
    for (const id of ids) {
      const t = targets.get(id)!;
      const base = accounts.get(id) ?? null;
      const change = new AccountChange(base, t.productId, t.owner, now, t.lowAt, t.enabled);
      make(id, change);
      const s = change.takeSettled();
      const w = change.write();
      // A copy another replica has changed since can only be trusted where its conditional write
      // would catch that: finding nothing to do (a grant added elsewhere that expires now) and
      // writing out what it holds (entries another replica wrote out and summed further since)
      // are decided on the account as stored.
      if (cached && (!w || hasSettled(s))) again.push(id);
      else if (w) {
        writes.push(w);
        settled.push({ account: w.after, settled: s });
      } else out.set(id, base);
    }
    if (writes.length > 0) {
      await writeSettled(deps, settled);
      if (await deps.credits.apply(writes)) for (const w of writes) out.set(w.id, w.after);
      // Those that applied find nothing left to do when computed again.
      else again.push(...writes.map((w) => w.id));
    }
    ids = again;
  }
  return out;
}

function hasSettled(s: Settled): boolean {
  return s.ops.length + s.notices.length + s.finals.length > 0;
}

/** One billing period of one user a usage job added to, whose plan (or whose team's plan) draws credits. */
export interface CreditPeriod {
  productId: string;
  userId: string;
  counterId: string;
  start: Date;
  end: Date;
  /** The plan's max_spend_per_period (dollars); 0 when only the team's plan draws credits. */
  allowance: number;
  lowAt: number | null;
  /** Whether the user's own plan draws credits (its own grants are drawn first). */
  own: boolean;
  /** The member's team when the team plan draws credits: what its own grants leave goes to the team's pool. */
  team?: TeamPool;
}

/** A team's pool as a member's events name it (the last event's, when a period's events name several). */
export interface TeamPool {
  /** The external team id (the pool's owner). */
  teamId: string;
  /** The team's period counter of that period (its pool counter is teams/shares.ts poolCounterId of it). */
  counterId: string;
  start: Date;
  end: Date;
  /** The team plan's max_spend_per_period (dollars): what the spend handed to the team uses before the pool. */
  allowance: number;
  lowAt: number | null;
}

/** Whether a stored event's own plan drew credits when it arrived (its `credits`, set with an allowance: domain/attribution.ts). */
export function drawsOwnCredits(e: UsageEventDoc): boolean {
  return e.credits !== undefined && e.spend_limit !== null;
}

/** The credit periods among a job's period counters: those whose events say their plan, or their team's, draws credits. */
export function creditPeriods(periods: readonly { delta: { id: string; productId: string; userId: string; start: Date; end: Date }; events: readonly UsageEventDoc[] }[]): CreditPeriod[] {
  const out: CreditPeriod[] = [];
  for (const p of periods) {
    const e = p.events.find(drawsOwnCredits);
    const t = p.events.findLast((x) => x.team?.credits !== undefined)?.team;
    if (!e && !t) continue;
    out.push({
      productId: p.delta.productId,
      userId: p.delta.userId,
      counterId: p.delta.id,
      start: p.delta.start,
      end: p.delta.end,
      allowance: e ? e.spend_limit! : 0,
      lowAt: e ? e.credits!.low_at : null,
      own: e !== undefined,
      ...(t && { team: { teamId: t.credits!.team_id, counterId: t.counter_id, start: t.period_start, end: t.period_end, allowance: t.credits!.allowance, lowAt: t.credits!.low_at } }),
    });
  }
  return out;
}

/**
 * What events whose own plan draws credits spent (nano-dollars): their period counter keeps it
 * (CounterDelta.credited), so that credits never pay for the rest (allocate.ts needed).
 */
export function creditedNano(events: readonly UsageEventDoc[]): number {
  let n = 0;
  for (const e of events) if (drawsOwnCredits(e)) n += toNano(e.cost_total);
  return n;
}

/** What settling a usage job's periods needs. */
export interface SettleDeps {
  /** The period spend (nano-dollars) of counters by id, in one read. */
  spends(counterIds: readonly string[]): Promise<Map<string, PeriodSpend>>;
  /** The same of teams' counters (their pool counters). */
  teamSpends(counterIds: readonly string[]): Promise<Map<string, PeriodSpend>>;
  /** Periods that ended before this draw nothing: their `drawn` entry goes, as their crossings do. */
  closedBefore: Date;
  accounts: AccountDeps;
}

/**
 * Counters' spends read beside accounts (ReadBeside): by `first` before changeAccounts (the
 * copies this process holds taken before that read), or by changeAccounts alone once it has the
 * copies; again for accounts whose copies changed since.
 */
class SpendsBeside implements ReadBeside {
  private readonly spends = new Map<string, PeriodSpend>();
  private copies?: ReadonlyMap<string, CreditAccountDoc>;

  constructor(
    private readonly read: (counterIds: readonly string[]) => Promise<Map<string, PeriodSpend>>,
    /** The counters whose spends an account's change needs. */
    private readonly countersOf: (accountId: string) => readonly string[],
  ) {}

  /** The first read, of these accounts' counters; the copies of them this process holds are taken first. */
  async first(deps: AccountDeps, accountIds: readonly string[]): Promise<void> {
    this.copies = deps.credits.held(accountIds);
    await this.reload(accountIds);
  }

  get held(): ReadonlyMap<string, CreditAccountDoc> | undefined {
    return this.copies;
  }

  async reload(accountIds: readonly string[]): Promise<void> {
    const ids = accountIds.flatMap((id) => this.countersOf(id));
    if (ids.length === 0) return;
    const got = await this.read(ids);
    for (const id of ids) this.spends.set(id, got.get(id) ?? { spend: 0, uncredited: 0 });
  }

  of(counterId: string): PeriodSpend {
    return this.spends.get(counterId) ?? { spend: 0, uncredited: 0 };
  }
}

/**
 * Settles the periods a usage job added to (after its counters): one read of their counters,
 * then changeAccounts; then the teams' pools take what their members handed over (teams'
 * credits, BUDGETS.md §4). A constant number of commands per job, whatever its users.
 */
export async function settlePeriods(deps: SettleDeps, periods: readonly CreditPeriod[]): Promise<void> {
  if (periods.length === 0) return;
  // A member whose own plan draws no credits hands its whole spend to the team: counted in the
  // team's pool counter, no account of its own to change.
  const own = periods.filter((p) => p.own);
  const targets = new Map<string, AccountTarget & { periods: CreditPeriod[]; toTeam: boolean; teams: CreditPeriod[] }>();
  for (const p of own) {
    const owner = userOwner(p.userId);
    const id = accountId(p.productId, owner);
    const t = targets.get(id);
    if (t) {
      t.periods.push(p);
      if (p.team) t.teams.push(p);
    } else {
      targets.set(id, { productId: p.productId, owner, lowAt: p.lowAt, enabled: true, periods: [p], toTeam: p.team !== undefined, teams: p.team ? [p] : [] });
    }
  }
  const spends = new SpendsBeside(deps.spends, (id) => targets.get(id)!.periods.map((p) => p.counterId));
  await spends.first(deps.accounts, [...targets.keys()]);
  const needsOf = (t: { periods: readonly CreditPeriod[] }) =>
    t.periods.map((p): PeriodNeed => {
      const spend = spends.of(p.counterId);
      const allowance = toNano(p.allowance);
      const need: PeriodNeed = { key: String(p.start.getTime()), end: p.end, needed: needed(spend.spend, allowance, spend.uncredited) };
      if (spend.uncredited > allowance) need.legacy = needed(spend.spend, allowance);
      return need;
    });
  // An account that draws nothing and holds nothing to copy out is not even read.
  for (const [id, t] of targets) if (needsOf(t).every((n) => n.needed === 0)) targets.delete(id);
  const after = await changeAccounts(
    deps.accounts,
    targets,
    (id, c) => {
      const t = targets.get(id)!;
      c.settle(needsOf(t), deps.closedBefore, t.toTeam);
    },
    spends,
  );
  const handed = [...targets.values()].flatMap((t) => t.teams.map((p) => ({ p, account: after.get(accountId(p.productId, userOwner(p.userId))) ?? null })));
  await settlePools(deps, handed, periods.filter((p) => !p.own && p.team));
}

/**
 * The teams' pools take what each member's period handed over in all (`spilled`, kept in the
 * member's account, written before this), then draw what each team period needs beyond the team
 * plan's allowance: the members' handed-over spend plus the pool counter's (members whose own
 * plans draw none). Whole values all: a repeat after a crash takes and draws nothing twice.
 */
async function settlePools(deps: SettleDeps, handed: readonly { p: CreditPeriod; account: CreditAccountDoc | null }[], direct: readonly CreditPeriod[]): Promise<void> {
  const pools = new Map<string, AccountTarget & { from: { key: string; total: number; end: Date; team: TeamPool }[]; periods: Map<string, TeamPool> }>();
  const poolOf = (p: CreditPeriod) => {
    const team = p.team!;
    const owner = teamOwner(team.teamId);
    const id = accountId(p.productId, owner);
    let pool = pools.get(id);
    if (!pool) pools.set(id, (pool = { productId: p.productId, owner, lowAt: team.lowAt, enabled: true, from: [], periods: new Map() }));
    pool.periods.set(String(team.start.getTime()), team);
    return pool;
  };
  for (const { p, account } of handed) {
    const total = account?.spilled?.[String(p.start.getTime())]?.n ?? 0;
    if (total > 0) poolOf(p).from.push({ key: `${userOwner(p.userId)}|${p.start.getTime()}`, total, end: p.end, team: p.team! });
  }
  for (const p of direct) poolOf(p);
  if (pools.size === 0) return;
  // Read by changeAccounts once it has the pools' copies: nothing here is decided before.
  const counted = new SpendsBeside(deps.teamSpends, (id) => [...pools.get(id)!.periods.values()].map((t) => poolCounterId(t.counterId)));
  await changeAccounts(
    deps.accounts,
    pools,
    (id, c) => {
      const pool = pools.get(id)!;
      for (const f of pool.from) c.receive(f.key, f.total, f.end, String(f.team.start.getTime()), f.team.end);
      const needs = [...pool.periods].map(([key, t]) => ({
        key,
        end: t.end,
        needed: needed(counted.of(poolCounterId(t.counterId)).spend + (c.doc.pooled?.[key]?.n ?? 0), toNano(t.allowance)),
      }));
      c.settle(needs, deps.closedBefore);
    },
    counted,
  );
}

/** A late change's move of events out of a billing period that drew credits for them (a user's, or a team pool's). */
export interface DrawnMove {
  productId: string;
  /** The account's owner: a user's (`userOwner`) or a team's pool (`teamOwner`). */
  owner: string;
  /** The move's job id (late-changes/move.ts): the account takes each move once. */
  job: string;
  /**
   * The period the events left: its start (ms, the `drawn` key) and end, its counter (whose spend after
   * the move decides its need), whether that counter keeps its credited spend apart (a user's
   * period counter; a pool counter is all the pool's to pay), and its plan's allowance (nano-dollars).
   */
  from: { key: string; end: Date; counterId: string; credited: boolean; allowance: number };
  /** The periods they went to: start (ms), end, and what the moved events cost there (nano-dollars). */
  to: { key: string; end: Date; cost: number; credited: number }[];
}

/**
 * What a period drew for events a late change moved elsewhere counts as drawn by their new
 * periods (AccountChange.moveDrawn): without it, the new period's next settle drew their cost
 * again while the old period kept what it drew (draws never go back). The old period's spend is
 * read after the account's copy (ReadBeside): moves of its lists that run together each hand
 * over what the spend read beside the draws it finds leaves. One conditional write, made even
 * when nothing is handed over (AccountChange.moveDrawn).
 */
export async function moveDrawn(deps: AccountDeps, spends: (counterIds: readonly string[]) => Promise<Map<string, PeriodSpend>>, move: DrawnMove): Promise<void> {
  const { owner, from } = move;
  const id = accountId(move.productId, owner);
  const spent = new SpendsBeside(spends, () => [from.counterId]);
  await changeAccounts(
    deps,
    new Map([[id, { productId: move.productId, owner }]]),
    (_, c) => {
      const s = spent.of(from.counterId);
      c.moveDrawn(move.job, { key: from.key, end: from.end, spend: s.spend, uncredited: from.credited ? s.uncredited : 0, allowance: from.allowance }, move.to);
    },
    spent,
  );
}
