/**
 * The pure part of analytics: how a day's facts become its rollup, and how rollups are read
 * back with or without the event-source filter. No I/O here.
 */

import { addDollars, toNano } from "@meter/rules";

export const SOURCES = ["auto", "manual"] as const;
export type Source = (typeof SOURCES)[number];

/** Breakdown bucket of usage events sent without a model name. */
export const UNKNOWN_MODEL = "unknown";

/** [cost, tokens, events]; cost in dollars, always a whole number of nano-dollars (money in @meter/rules). */
export type Figures = [number, number, number];
export type BySource = Record<Source, Figures>;

/** One usage event as kept in the ledger (short keys: the ledger holds every event). */
export interface UsageEntry {
  /** user id */
  u: string;
  /** model, null when none was sent */
  m: string | null;
  s: Source;
  /** tokens */
  t: number;
  /** cost */
  c: number;
  /** the external id of the team the user's membership named at the event's time; absent: none */
  tm?: string;
}

/** One gate event as kept in the ledger. */
export interface GateEntry {
  u: string;
  /** "soft_gate" | "hard_gate" */
  st: string;
  b: boolean;
  /** as UsageEntry.tm */
  tm?: string;
}

export interface ModelFigures {
  name: string;
  figures: BySource;
}
export interface UserFigures {
  id: string;
  /** The team the figures were attributed to (a user moved during the day has a row per team). */
  team?: string;
  figures: BySource;
}

/** A team's part of a day: the same figures as the product's, restricted to the team's events. */
export interface TeamDayFigures {
  id: string;
  figures: Omit<DayFigures, "teams">;
}

/** Everything the queries need about one product-day. */
export interface DayFigures {
  usage: BySource;
  soft_gates: number;
  hard_gates: number;
  models: ModelFigures[];
  users: UserFigures[];
  /** Each team with an event of the day, by id; absent or empty when none. */
  teams?: TeamDayFigures[];
}

export const zero = (): Figures => [0, 0, 0];
const zeroBySource = (): BySource => ({ auto: zero(), manual: zero() });

/** a + b; costs (dollars, exact at the unit) added as whole nano-dollars, so sums carry no float noise. */
export function add(a: Figures, b: Figures): Figures {
  return [addDollars(a[0], b[0]), a[1] + b[1], a[2] + b[2]];
}

/** The figures of one source, or of both when no source filter is set; costs exact at the unit either way (a day rolled up before held float sums). */
export function pick(f: BySource, source: Source | undefined): Figures {
  return source ? add(zero(), f[source]) : add(f.auto, f.manual);
}

function bump(f: BySource, e: UsageEntry): void {
  const x = f[e.s];
  x[0] = addDollars(x[0], e.c);
  x[1] += e.t;
  x[2] += 1;
}

function addInto(to: BySource, from: BySource): void {
  for (const s of SOURCES) to[s] = add(to[s], from[s]);
}

function mapEntry(m: Map<string, BySource>, key: string): BySource {
  let f = m.get(key);
  if (!f) m.set(key, (f = zeroBySource()));
  return f;
}

/**
 * Folds a day's ledger entries one at a time, so that a day is computed while its ledger is
 * streamed: memory follows the day's users and models, never its event count.
 */
export class DayAccumulator {
  private readonly total = zeroBySource();
  private readonly models = new Map<string, BySource>();
  /** By user, or by user and team (`userTeamKey`) when the user's events had a team. */
  private readonly users = new Map<string, { id: string; team?: string; figures: BySource }>();
  private readonly teams = new Map<string, DayAccumulator>();
  private soft = 0;
  private hard = 0;

  usage(e: UsageEntry): void {
    bump(this.total, e);
    bump(mapEntry(this.models, e.m ?? UNKNOWN_MODEL), e);
    bump(this.userEntry(e.u, e.tm), e);
    if (e.tm !== undefined) this.team(e.tm).usage({ ...e, tm: undefined });
  }

  gate(g: GateEntry): void {
    if (g.st === "hard_gate") this.hard++;
    else this.soft++;
    if (g.tm !== undefined) this.team(g.tm).gate({ ...g, tm: undefined });
  }

  /** Adds a day's figures computed earlier (a frozen day's base) without their users. */
  addTotals(f: Omit<DayFigures, "users" | "teams">): void {
    addInto(this.total, f.usage);
    for (const m of f.models) addInto(mapEntry(this.models, m.name), m.figures);
    this.soft += f.soft_gates;
    this.hard += f.hard_gates;
  }

  /** Adds teams' figures computed earlier, without their users (a base's; its user rows carry their teams). */
  addTeamTotals(teams: readonly { id: string; figures: Omit<DayFigures, "users" | "teams"> }[]): void {
    for (const t of teams) this.team(t.id).addTotals(t.figures);
  }

  /** Adds one user's figures computed earlier (to its team's too when it has one). */
  addUser(u: UserFigures): void {
    addInto(this.userEntry(u.id, u.team), u.figures);
    if (u.team !== undefined) this.team(u.team).addUser({ id: u.id, figures: u.figures });
  }

  /** Adds the figures of another accumulator (an hour folded earlier); `other` stays as it is. */
  merge(other: DayAccumulator): void {
    addInto(this.total, other.total);
    for (const [name, f] of other.models) addInto(mapEntry(this.models, name), f);
    for (const u of other.users.values()) addInto(this.userEntry(u.id, u.team), u.figures);
    for (const [id, t] of other.teams) this.team(id).merge(t);
    this.soft += other.soft;
    this.hard += other.hard;
  }

  /** The rows held (models, users, and the same of each team): what keeping this costs in memory. */
  get rows(): number {
    let n = 1 + this.models.size + this.users.size;
    for (const t of this.teams.values()) n += t.rows;
    return n;
  }

  result(): DayFigures {
    const sorted = <V>(m: Map<string, V>) => [...m].sort(([x], [y]) => order(x, y));
    const out: DayFigures = {
      usage: this.total,
      soft_gates: this.soft,
      hard_gates: this.hard,
      models: sorted(this.models).map(([name, figures]) => ({ name, figures })),
      users: [...this.users.values()].sort(byUserThenTeam),
    };
    if (this.teams.size > 0) {
      out.teams = sorted(this.teams).map(([id, acc]) => {
        const { teams: _, ...figures } = acc.result();
        return { id, figures };
      });
    }
    return out;
  }

  private userEntry(id: string, team: string | undefined): BySource {
    const key = userRowKey(id, team);
    let u = this.users.get(key);
    if (!u) this.users.set(key, (u = team === undefined ? { id, figures: zeroBySource() } : { id, team, figures: zeroBySource() }));
    return u.figures;
  }

  private team(id: string): DayAccumulator {
    let t = this.teams.get(id);
    if (!t) this.teams.set(id, (t = new DayAccumulator()));
    return t;
  }
}

/**
 * A user's row key, with its team when its figures belong to one: JSON, since an external id may
 * hold any character, so no user id can pass for another user's id and team.
 */
const userRowKey = (userId: string, teamId: string | undefined) => JSON.stringify(teamId === undefined ? [userId] : [userId, teamId]);

const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
/** Rows by user id, a user's row without a team before its rows in teams. */
const byUserThenTeam = (a: { id: string; team?: string }, b: { id: string; team?: string }) =>
  order(a.id, b.id) || (a.team === undefined ? (b.team === undefined ? 0 : -1) : b.team === undefined ? 1 : order(a.team, b.team));

/** Folds one day's ledger entries into its figures. Order of entries does not matter. */
export function computeDay(usage: Iterable<UsageEntry>, gates: Iterable<GateEntry>): DayFigures {
  const acc = new DayAccumulator();
  for (const e of usage) acc.usage(e);
  for (const g of gates) acc.gate(g);
  return acc.result();
}

/** Sums figures per key over several days, for one source or both. */
export function sumByKey<T>(items: Iterable<T>, key: (t: T) => string, figures: (t: T) => BySource, source: Source | undefined) {
  const out = new Map<string, Figures>();
  for (const it of items) {
    const f = pick(figures(it), source);
    if (f[2] === 0 && f[0] === 0 && f[1] === 0) continue;
    const k = key(it);
    out.set(k, add(out.get(k) ?? zero(), f));
  }
  // A key whose days sum to nothing (a late change moved its events out on a later day) is no row.
  for (const [k, f] of out) if (f[0] === 0 && f[1] === 0 && f[2] === 0) out.delete(k);
  return out;
}

/**
 * Each model's share of the window, in percent (0-100, two decimals): of the total cost; of
 * the total tokens when nothing cost anything; of the event count when there were no tokens either.
 */
export function shares(models: Map<string, Figures>): { model: string; cost: number; tokens: number; pct: number }[] {
  const rows = [...models].map(([model, f]) => ({ model, f }));
  const totals = rows.reduce((a, r) => add(a, r.f), zero());
  const basis = totals[0] > 0 ? 0 : totals[1] > 0 ? 1 : 2;
  return rows
    .sort((a, b) => b.f[0] - a.f[0] || b.f[1] - a.f[1] || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0))
    .map((r) => ({
      model: r.model,
      cost: r.f[0],
      tokens: r.f[1],
      pct: totals[basis] > 0 ? percentOf(unitsOf(basis, r.f[basis]), unitsOf(basis, totals[basis])) : 0,
    }));
}

/** A figure in whole units: nano-dollars for cost, else the count itself. */
const unitsOf = (basis: number, x: number) => (basis === 0 ? toNano(x) : x);

/**
 * part / whole in percent to two decimals, rounded half up, from whole units: exact however
 * large (float dollars gave $0.205 of $1.312 15.62 and $5 of $32 15.63, the same 5/32).
 */
function percentOf(part: number, whole: number): number {
  const p = BigInt(part);
  const w = BigInt(whole);
  return Number((p * 20_000n + w) / (2n * w)) / 100;
}

/** Users ordered by cost (highest first), then user id; the first `limit`. */
export function topUsers(users: Map<string, Figures>, limit: number) {
  return [...users]
    .sort(([ua, a], [ub, b]) => b[0] - a[0] || (ua < ub ? -1 : ua > ub ? 1 : 0))
    .slice(0, limit)
    .map(([userId, f]) => ({ userId, cost: f[0], tokens: f[1], events: f[2] }));
}
