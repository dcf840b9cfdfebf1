/**
 * One owner's credit account (`credit_accounts`) and the changes a write makes to it: drawing a
 * billing period's needs, adding, voiding and expiring grants. Each change is computed from the
 * document read and written as one update conditional on its `version`, so what it decides (the
 * draws, the ledger entries, the webhooks) is decided once. Pure: no I/O.
 */
import { cloneDated } from "@meter/lib/dated-json";
import { own, setOwn } from "@meter/lib/own";
import { toNano } from "@meter/rules";
import { encodeGrantKey } from "../domain/field-keys.ts";
import {
  balanceNotices,
  balanceOf,
  draw,
  hourOf,
  latePayment,
  needed,
  statusAt,
  type GrantState,
  type LedgerType,
  type NoticeType,
} from "./allocate.ts";

/** When an account's overdraft arose, while grants may pay it (not while credits are disabled: they are never drawn then). */
export function overdraftSince(doc: CreditAccountDoc): number | undefined {
  return doc.credits_enabled === false ? undefined : doc.overdraft_since;
}

/**
 * A ledger entry not yet copied to `credit_ledger`. Keyed by hour, type and grant: usage of one
 * grant in one hour is summed in one entry (`amount_nano` is the entry's whole amount, so copying
 * it again writes the same value).
 */
export interface LedgerOp {
  hour: number;
  type: LedgerType;
  grant_id: string | null;
  amount_nano: number;
  balance_after_nano: number;
  /**
   * The moment of the entry's last change, where the ledger lists it (usage and overdraft are
   * answered with their `hour`); entries written before 2026-12-07 hold their hour here.
   */
  at: Date;
}

/** A webhook decided by a write, not yet in the outbox towards the webhooks service. */
export interface Notice {
  id: string;
  type: NoticeType;
  product_id: string;
  owner: string;
  balance_nano: number;
  low_at: number | null;
  grant_id: string | null;
  amount_nano: number | null;
  at: Date;
}

export interface CreditAccountDoc {
  /** "<product>|<owner>" */
  _id: string;
  product_id: string;
  /** "user:<external user id>", or "team:<external team id>" for a team's shared pool: the prefixes keep the two apart. */
  owner: string;
  /** Grants not final, and final ones not yet copied to `credit_grants`, by encoded grant id. */
  grants: Record<string, GrantState>;
  overdraft_nano: number;
  /** When the overdraft arose (ms), while there is one: grants effective since pay it (allocate.ts latePayment). */
  overdraft_since?: number;
  /**
   * Nano-dollars drawn per billing period (key: the period start in ms), with the period's end.
   * `c`: drawn since the period's counter kept its credited spend apart (CounterDoc.credited_nano),
   * so what the period spent without credits is never drawn; an entry without it was written
   * before and goes on by the rule then (all the spend beyond the allowance) to its period's end.
   */
  drawn: Record<string, { n: number; end: Date; c?: 1 }>;
  /** A member's account in a team whose plan draws credits: per billing period, what its own grants did not cover, handed to the pool. */
  spilled?: Record<string, { n: number; end: Date }>;
  /**
   * What late changes moved from one billing period's draws to the periods its events went to
   * (late-changes/move.ts), by move job: written once per move, so a move applied again moves
   * nothing more.
   */
  moved?: Record<string, { n: number; end: Date }>;
  /** A team's pool: what each member's period handed over so far (key "<owner>|<period start ms>"). */
  got?: Record<string, { n: number; end: Date }>;
  /** A team's pool: per team billing period, the sum handed over by its members (what the team allowance, then the pool, pays). */
  pooled?: Record<string, { n: number; end: Date }>;
  low_armed: boolean;
  /** The plan's credits_low_at (dollars) as last known; what the expiry job announces with. */
  low_at: number | null;
  /**
   * Whether the owner's plan had credits enabled, as last known (absent: enabled): a balance
   * that crosses credits_low_at or 0 while they are off announces nothing (BUDGETS.md §3).
   */
  credits_enabled?: boolean;
  version: number;
  ops: Record<string, LedgerOp>;
  /**
   * The end (ms) of the latest UTC day whose usage entries were written out to the ledger: usage a
   * replica with a lagging clock adds later goes into the first hour after it, since an entry of a
   * day written out would be written again with only what came since, replacing the sum.
   */
  ops_out?: number;
  notices: Record<string, Notice>;
  /**
   * Grants that left the account (final, their records written), by encoded grant id, with when
   * (ms); kept a day. A request that read a grant's record before it was made final finds it here
   * and neither adds it again nor pays with it (grants.ts).
   */
  gone?: Record<string, number>;
}

/** How long an account remembers a grant that left it: far longer than any request that read its record before. */
const GONE_KEPT_MS = 86_400_000;

export function accountId(productId: string, owner: string): string {
  return `${productId}|${owner}`;
}

export function userOwner(userId: string): string {
  return `user:${userId}`;
}

/** A team's shared pool (BUDGETS.md §4). */
export function teamOwner(teamId: string): string {
  return `team:${teamId}`;
}

/** The external team id of a team owner, null for a user's. */
export function ownerTeamId(owner: string): string | null {
  return owner.startsWith("team:") ? owner.slice(5) : null;
}

/** The external id of a user owner (what webhooks carry as user_id). */
export function ownerUserId(owner: string): string {
  return owner.startsWith("user:") ? owner.slice(5) : owner;
}

export function emptyAccount(productId: string, owner: string): CreditAccountDoc {
  return {
    _id: accountId(productId, owner),
    product_id: productId,
    owner,
    grants: {},
    overdraft_nano: 0,
    drawn: {},
    low_armed: true,
    low_at: null,
    version: 0,
    ops: {},
    notices: {},
  };
}

/** Whether the grant (encoded id) left the account lately (CreditAccountDoc.gone). */
export function grantGone(a: CreditAccountDoc, key: string): boolean {
  return own(a.gone, key) !== undefined;
}

/** What one billing period needs from credits now. */
export interface PeriodNeed {
  /** The period start in ms. */
  key: string;
  end: Date;
  needed: number;
  /** What it needs by the rule before credited spend was kept apart, where that differs (CreditAccountDoc.drawn `c`). */
  legacy?: number;
}

/** Whether a period's draws leave out what it spent without credits (CreditAccountDoc.drawn `c`): yes unless drawn before that. */
export function tracksCredited(entry: { c?: 1 } | undefined): boolean {
  return entry === undefined || entry.c === 1;
}

type Amounts = Record<string, { n: number; end: Date }>;

/** Drops the entries of periods ended before `closedBefore`; true when some went. */
function dropClosed(m: Amounts | undefined, closedBefore: Date): boolean {
  let dropped = false;
  for (const [k, d] of Object.entries(m ?? {})) {
    if (d.end < closedBefore) {
      delete m![k];
      dropped = true;
    }
  }
  return dropped;
}

/** The write that takes an account from the state read to the next one (the whole account: credits/store.ts). */
export interface AccountWrite {
  id: string;
  /** The version read; 0 for an account not yet stored (then inserted). */
  version: number;
  /** The account after the write. */
  after: CreditAccountDoc;
}

/** What an account held that is written elsewhere before the write that drops it from the account. */
export interface Settled {
  ops: LedgerOp[];
  notices: Notice[];
  finals: GrantState[];
}

const DAY_MS = 86_400_000;

/**
 * How long after its UTC day usage entries leave the account for the ledger. Until then usage
 * of that hour is still added to its entry (a replica's clock may lag); an entry is written as
 * its whole amount, never as an increment, so writing it again writes the right sum.
 */
export const SETTLED_AFTER_MS = 5 * 60_000;

export const isHourly = (op: LedgerOp) => op.type === "usage" || op.type === "overdraft";

const dayEnd = (hour: number) => hour - (hour % DAY_MS) + DAY_MS;

/** An entry that no longer changes: not a usage sum, or one whose day is over. */
export function settledOp(op: LedgerOp, now: number): boolean {
  return !isHourly(op) || dayEnd(op.hour) + SETTLED_AFTER_MS <= now;
}

/**
 * Accumulates changes to an account; `write()` gives the conditional write (or null when
 * nothing changed). The balance before is taken when it starts, so the webhooks compare the
 * balance before and after the whole write.
 */
export class AccountChange {
  readonly doc: CreditAccountDoc;
  private changed = false;
  private before: number;

  constructor(
    private readonly base: CreditAccountDoc | null,
    productId: string,
    owner: string,
    private readonly now: Date,
    /** The plan's credits_low_at in dollars (null: never), when the caller knows the plan. */
    lowAt?: number | null,
    /** Whether the plan has credits enabled, when the caller knows the plan. */
    enabled?: boolean,
  ) {
    this.doc = base ? cloneDated(base) : emptyAccount(productId, owner);
    // What grants paid of the overdraft up to now, they paid under the account's state as last
    // written (credits enabled or not): the balance before, and payLate(), read it so.
    this.lateSince = this.since();
    this.before = this.balance(this.lateSince);
    // Written with the next change, not on its own.
    if (lowAt !== undefined) this.doc.low_at = lowAt;
    if (enabled !== undefined) this.doc.credits_enabled = enabled;
    if (this.doc.overdraft_nano > 0 && (this.doc.overdraft_since === undefined || (base?.credits_enabled === false && enabled === true))) {
      // From now on grants that take effect pay it: an account from before the moment was kept,
      // or credits enabled again (grants that took effect while they were off paid nothing).
      this.doc.overdraft_since = this.t;
    }
  }

  private readonly lateSince: number | undefined;

  private get t(): number {
    return this.now.getTime();
  }

  /** The balance at this change's time (balanceOf, an overdraft paid by the grants effective since). */
  private balance(since = this.since()): number {
    return balanceOf(Object.values(this.doc.grants), this.doc.overdraft_nano, this.t, since).balance;
  }

  private since(): number | undefined {
    return overdraftSince(this.doc);
  }

  /** Takes `n` from a grant, which is final (depleted) once nothing is left of it. */
  private take(id: string, n: number): void {
    const key = encodeGrantKey(id);
    const g = this.doc.grants[key]!;
    g.remaining_nano -= n;
    if (g.remaining_nano <= 0) {
      g.final = "depleted";
      g.final_at = this.now;
      this.finalsNow.add(key);
    }
    this.putGrant(key);
  }

  /**
   * Writes down what grants that took effect since the overdraft arose paid of it (latePayment):
   * before anything else changes the grants, so that an expiry, a void or a draw meets them as
   * they were left.
   */
  private payLate(): void {
    const { taken, left } = latePayment(Object.values(this.doc.grants), this.doc.overdraft_nano, this.lateSince, this.t);
    if (taken.size === 0) return;
    for (const [id, n] of taken) this.take(id, n);
    this.doc.overdraft_nano = left;
    if (left === 0) delete this.doc.overdraft_since;
    this.put();
  }

  private put(): void {
    this.changed = true;
  }

  private putGrant(_key: string): void {
    this.changed = true;
  }

  /**
   * Takes out what the account read holds that no longer changes (entries settled, webhooks,
   * final grants), for the caller to write elsewhere before this write drops them.
   */
  takeSettled(): Settled {
    const out: Settled = { ops: [], notices: [], finals: [] };
    for (const [key, op] of Object.entries(this.doc.ops)) {
      if (this.pendingOps.has(key) || !settledOp(op, this.t)) continue;
      out.ops.push(op);
      delete this.doc.ops[key];
      if (isHourly(op)) this.doc.ops_out = Math.max(this.doc.ops_out ?? 0, dayEnd(op.hour));
    }
    for (const [key, n] of Object.entries(this.doc.notices)) {
      if (this.pendingNotices.has(key)) continue;
      out.notices.push(n);
      delete this.doc.notices[key];
    }
    for (const [key, g] of Object.entries(this.doc.grants)) {
      if (!g.final || this.finalsNow.has(key)) continue;
      out.finals.push(g);
      delete this.doc.grants[key];
      this.doc.gone ??= {};
      setOwn(this.doc.gone, key, this.t);
    }
    for (const [key, at] of Object.entries(this.doc.gone ?? {})) if (at < this.t - GONE_KEPT_MS) delete this.doc.gone![key];
    if (out.ops.length + out.notices.length + out.finals.length > 0) this.changed = true;
    return out;
  }
  private readonly finalsNow = new Set<string>();

  /** Adds `amount` (signed) to the ledger entry of this hour, type and grant. */
  private ledger(type: LedgerType, grantId: string | null, amount: number): void {
    const hourly = type === "usage" || type === "overdraft";
    const hour = hourly ? Math.max(hourOf(this.t), this.doc.ops_out ?? 0) : hourOf(this.t);
    const key = `${hour}|${type}|${encodeGrantKey(grantId ?? "-")}`;
    const prev = this.doc.ops[key];
    this.doc.ops[key] = {
      hour,
      type,
      grant_id: grantId,
      amount_nano: (prev?.amount_nano ?? 0) + amount,
      balance_after_nano: 0,
      // Usage and overdraft are answered with their hour; `at` places the entry in the listing
      // where its balance_after was true, after what else that hour held (a grant made before the
      // hour's last draw is listed below it).
      at: new Date(Math.max(this.t, hour)),
    };
    this.pendingOps.add(key);
    this.changed = true;
  }
  private readonly pendingOps = new Set<string>();

  /**
   * Draws what each period needs beyond what it drew already, then pays any overdraft, from the
   * active grants in draw order; what no grant covers is overdraft, or with `toTeam` (a member of
   * a team whose plan draws credits, BUDGETS.md §4) handed to the team's pool (`spilled`).
   * Periods ended before `closedBefore` draw nothing (their entry may have been dropped).
   */
  settle(needs: readonly PeriodNeed[], closedBefore: Date, toTeam = false): void {
    this.payLate();
    let amount = 0;
    let last: PeriodNeed | null = null;
    for (const n of needs) {
      if (n.end < closedBefore) continue;
      const entry = own(this.doc.drawn, n.key);
      const want = tracksCredited(entry) ? n.needed : (n.legacy ?? n.needed);
      const prev = entry?.n ?? 0;
      if (want <= prev) continue;
      amount += want - prev;
      last = n;
      this.doc.drawn[n.key] = { n: want, end: n.end, ...(tracksCredited(entry) && { c: 1 as const }) };
      this.put();
    }
    for (const m of [this.doc.drawn, this.doc.spilled, this.doc.got, this.doc.pooled, this.doc.moved]) if (dropClosed(m, closedBefore)) this.put();
    // What goes to the team's pool, filed under the (last) period that needed it.
    const spill = (n: number) => {
      if (n <= 0 || last === null) return;
      const s = (this.doc.spilled ??= {});
      s[last.key] = { n: (s[last.key]?.n ?? 0) + n, end: last.end };
      this.put();
    };
    const owed = this.doc.overdraft_nano;
    if (amount === 0 && owed === 0) return;
    const { taken, uncovered } = draw(Object.values(this.doc.grants), owed + amount, this.t);
    if (taken.size === 0 && amount === 0) return;
    // The first `owed` units taken pay the overdraft (no ledger entry: the balance does not move);
    // the rest is usage of each grant.
    let paying = owed;
    for (const [id, t] of taken) {
      this.take(id, t);
      const pays = Math.min(paying, t);
      paying -= pays;
      if (t - pays > 0) this.ledger("usage", id, -(t - pays));
    }
    // Of the new usage, what no grant covered: the team's pool's to pay, or an overdraft.
    const fresh = Math.min(amount, uncovered);
    const left = toTeam ? uncovered - fresh : uncovered;
    if (toTeam) spill(fresh);
    else if (fresh > 0) this.ledger("overdraft", null, -fresh);
    if (left !== owed) {
      this.doc.overdraft_nano = left;
      if (left === 0) delete this.doc.overdraft_since;
      else if (owed === 0) this.doc.overdraft_since = this.t;
      this.put();
    }
  }

  /**
   * A late change moved events out of billing period `from` into the periods `to` (their cost
   * in each, nano-dollars), under the move's job id. What `from` drew beyond what its spend after
   * the move needs was drawn for those events: it counts as drawn by the periods they went to, up
   * to their cost in each, so their next settle does not draw it again. Once per job, noted
   * whatever it hands over.
   */
  moveDrawn(job: string, from: { key: string; end: Date; spend: number; uncredited: number; allowance: number }, to: readonly { key: string; end: Date; cost: number; credited: number }[]): void {
    if (own(this.doc.moved, job) !== undefined) return;
    const drawn = own(this.doc.drawn, from.key);
    // A team's pool needs its pool counter's spend and what members' periods handed over (settlePools); a user's account holds no `pooled`.
    const beyond = Math.max(0, (drawn?.n ?? 0) - needed(from.spend + (own(this.doc.pooled, from.key)?.n ?? 0), from.allowance, tracksCredited(drawn) ? from.uncredited : 0));
    // What a new period would draw for the moved events: what its plan draws credits for (the
    // rest it never draws, so a draw handed to it would be counted twice), all of it in a period
    // drawn by the rule before (tracksCredited).
    const draws = (t: (typeof to)[number]) => Math.max(0, tracksCredited(own(this.doc.drawn, t.key)) ? t.credited : t.cost);
    // At most what the moved events cost: moves of one period's lists that run together each read
    // the spend after all of them left, and each may hand over only what its own events took.
    let over = drawn ? Math.min(beyond, to.reduce((a, t) => a + draws(t), 0)) : 0;
    // Written even when nothing is handed over (the moved events' own settle has not drawn yet):
    // a settle of them that read the period's spend before the move then meets this write and
    // reads again, instead of drawing for them in the period they left.
    setOwn((this.doc.moved ??= {}), job, { n: over, end: drawn?.end ?? from.end });
    if (drawn) drawn.n -= over;
    for (const t of to) {
      const n = Math.min(over, draws(t));
      if (n <= 0) continue;
      over -= n;
      const entry = own(this.doc.drawn, t.key);
      this.doc.drawn[t.key] = { n: (entry?.n ?? 0) + n, end: t.end, ...(tracksCredited(entry) && { c: 1 as const }) };
    }
    this.put();
  }

  /**
   * A team's pool takes what a member's period handed over in all (`total`, a whole value, so
   * taking it again adds nothing), filed under the team's period `teamKey`.
   */
  receive(from: string, total: number, end: Date, teamKey: string, teamEnd: Date): void {
    const got = (this.doc.got ??= {});
    const prev = got[from]?.n ?? 0;
    if (total <= prev) return;
    got[from] = { n: total, end };
    const pooled = (this.doc.pooled ??= {});
    pooled[teamKey] = { n: (pooled[teamKey]?.n ?? 0) + total - prev, end: teamEnd };
    this.put();
  }

  /**
   * Adds a grant. It first pays any overdraft (`settle` with nothing needed), unless the plan has
   * credits disabled: grants are then kept but never drawn (BUDGETS.md §3), the overdraft waits.
   */
  addGrant(g: GrantState, closedBefore: Date): void {
    const key = encodeGrantKey(g.id);
    // Grant ids are the caller's: "__proto__" and "constructor" are ids like any other.
    setOwn(this.doc.grants, key, g);
    this.putGrant(key);
    this.ledger("grant", g.id, g.amount_nano);
    if (this.doc.credits_enabled !== false) this.settle([], closedBefore);
  }

  /** What is left of a grant goes to 0 (false when it was final already). */
  voidGrant(id: string): boolean {
    this.payLate();
    const key = encodeGrantKey(id);
    const g = own(this.doc.grants, key);
    if (!g || g.final) return false;
    const status = statusAt(g, this.t);
    const lost = status === "expired" ? 0 : g.remaining_nano;
    if (status === "expired") return this.expireOne(key);
    g.remaining_nano = 0;
    g.final = "voided";
    g.final_at = this.now;
    this.finalsNow.add(key);
    g.lost_nano = lost;
    this.putGrant(key);
    if (lost > 0) this.ledger("void", id, -lost);
    return true;
  }

  /** Every grant past its expiry that is not final: its remainder expires. Returns how many. */
  expireDue(): number {
    this.payLate();
    let n = 0;
    for (const [key, g] of Object.entries(this.doc.grants)) {
      if (!g.final && g.expires_at !== null && g.expires_at.getTime() <= this.t && this.expireOne(key)) n++;
    }
    return n;
  }

  private expireOne(key: string): boolean {
    const g = this.doc.grants[key]!;
    const lost = g.remaining_nano;
    // Counted in the balance before: the grant stopped counting at its expiry, but this write is
    // where the balance change is announced.
    if (g.effective_at.getTime() <= this.t) this.before += lost;
    g.remaining_nano = 0;
    g.final = "expired";
    g.final_at = g.expires_at ?? this.now;
    this.finalsNow.add(key);
    g.lost_nano = lost;
    this.putGrant(key);
    if (lost > 0) {
      this.ledger("expiry", g.id, -lost);
      this.notice("credits.expired", `credits.expired:${this.doc.owner}:${g.id}`, { grant_id: g.id, amount_nano: lost });
    }
    return true;
  }

  private notice(type: NoticeType, id: string, extra: { grant_id: string | null; amount_nano: number | null }): void {
    this.doc.notices[encodeGrantKey(id)] = {
      id,
      type,
      product_id: this.doc.product_id,
      owner: this.doc.owner,
      balance_nano: 0,
      low_at: this.doc.low_at,
      ...extra,
      at: this.now,
    };
    this.pendingNotices.add(encodeGrantKey(id));
    this.changed = true;
  }
  private readonly pendingNotices = new Set<string>();

  /** The conditional write, or null when the account is as read. */
  write(): AccountWrite | null {
    if (!this.changed) return null;
    const version = this.base?.version ?? 0;
    this.doc.version = version + 1;
    const after = this.balance();
    const lowAtNano = this.doc.low_at === null ? null : toNano(this.doc.low_at);
    // A balance at or above low_at before this change got there by a write (which armed the
    // alarm) or by a grant becoming effective, which writes nothing: armed either way.
    const armed = this.doc.low_armed || (lowAtNano !== null && this.before >= lowAtNano);
    const decided = this.doc.credits_enabled === false ? { notices: [], armed: this.doc.low_armed } : balanceNotices(this.before, after, lowAtNano, armed);
    for (const type of decided.notices) this.notice(type, `${type}:${this.doc.owner}:${this.doc.version}`, { grant_id: null, amount_nano: null });
    this.doc.low_armed = decided.armed;
    for (const key of this.pendingOps) this.doc.ops[key]!.balance_after_nano = after;
    for (const key of this.pendingNotices) this.doc.notices[key]!.balance_nano = after;
    return { id: this.doc._id, version, after: this.doc };
  }
}
