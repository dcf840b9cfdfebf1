/**
 * The pure part of analytics: how a day's facts become its rollup, and how rollups are read
 * back with or without the event-source filter. No I/O here.
 */

import { addDollars } from "@meter/rules";

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
}

/** One gate event as kept in the ledger. */
export interface GateEntry {
  u: string;
  /** "soft_gate" | "hard_gate" */
  st: string;
  b: boolean;
}

export interface ModelFigures {
  name: string;
  figures: BySource;
}
export interface UserFigures {
  id: string;
  figures: BySource;
}

/** Everything the queries need about one product-day. */
export interface DayFigures {
  usage: BySource;
  soft_gates: number;
  hard_gates: number;
  models: ModelFigures[];
  users: UserFigures[];
}

export const zero = (): Figures => [0, 0, 0];
const zeroBySource = (): BySource => ({ auto: zero(), manual: zero() });

/** a + b; costs (dollars, exact at the unit) added as whole nano-dollars, so sums carry no float noise. */
export function add(a: Figures, b: Figures): Figures {
  return [addDollars(a[0], b[0]), a[1] + b[1], a[2] + b[2]];
}

/** The figures of one source, or of both when no source filter is set. */
export function pick(f: BySource, source: Source | undefined): Figures {
  return source ? f[source] : add(f.auto, f.manual);
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
  private readonly users = new Map<string, BySource>();
  private soft = 0;
  private hard = 0;

  usage(e: UsageEntry): void {
    bump(this.total, e);
    const m = e.m ?? UNKNOWN_MODEL;
    let mf = this.models.get(m);
    if (!mf) this.models.set(m, (mf = zeroBySource()));
    bump(mf, e);
    let uf = this.users.get(e.u);
    if (!uf) this.users.set(e.u, (uf = zeroBySource()));
    bump(uf, e);
  }

  gate(g: GateEntry): void {
    if (g.st === "hard_gate") this.hard++;
    else this.soft++;
  }

  /** Adds a day's figures computed earlier (a frozen day's base) without their users. */
  addTotals(f: Omit<DayFigures, "users">): void {
    addInto(this.total, f.usage);
    for (const m of f.models) addInto(mapEntry(this.models, m.name), m.figures);
    this.soft += f.soft_gates;
    this.hard += f.hard_gates;
  }

  /** Adds one user's figures computed earlier. */
  addUser(u: UserFigures): void {
    addInto(mapEntry(this.users, u.id), u.figures);
  }

  result(): DayFigures {
    const byKey = <T>(m: Map<string, BySource>, make: (k: string, f: BySource) => T) =>
      [...m].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([k, f]) => make(k, f));
    return {
      usage: this.total,
      soft_gates: this.soft,
      hard_gates: this.hard,
      models: byKey(this.models, (name, figures) => ({ name, figures })),
      users: byKey(this.users, (id, figures) => ({ id, figures })),
    };
  }
}

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
      pct: totals[basis] > 0 ? Math.round((r.f[basis] / totals[basis]) * 10_000) / 100 : 0,
    }));
}

/** Users ordered by cost (highest first), then user id; the first `limit`. */
export function topUsers(users: Map<string, Figures>, limit: number) {
  return [...users]
    .sort(([ua, a], [ub, b]) => b[0] - a[0] || (ua < ub ? -1 : ua > ub ? 1 : 0))
    .slice(0, limit)
    .map(([userId, f]) => ({ userId, cost: f[0], tokens: f[1], events: f[2] }));
}
