/**
 * Per-user day figures as typed columns over a dense numbering of a product's users, and
 * their fold over a window. A window of 90 days at 100,000 users folds about 600,000
 * user-days: as objects in a Map keyed by user id that took hundreds of ms, as typed arrays
 * indexed by user number it takes a few. Pure: no I/O.
 */
import { toDollars, toNano } from "@meter/rules";
import type { BySource, Source } from "./rollup.ts";

/** Figures per user-day in `UserDay.values`: auto cost, tokens, events, then manual's. */
const STRIDE = 6;

/** A product's users numbered 0, 1, ... in the order first seen; numbers are never reused. */
export class UserDirectory {
  readonly ids: string[] = [];
  private readonly numbers = new Map<string, number>();
  /** Approximate heap bytes, for the cache's budget. */
  bytes = 0;

  number(id: string): number {
    let n = this.numbers.get(id);
    if (n === undefined) {
      n = this.ids.length;
      this.numbers.set(id, n);
      this.ids.push(id);
      this.bytes += 2 * id.length + 80;
    }
    return n;
  }

  get size(): number {
    return this.ids.length;
  }
}

/** One product-day's users: `users[i]` a user number, `values[6i .. 6i+5]` its figures. */
export interface UserDay {
  users: Int32Array;
  values: Float64Array;
}

export function userDayBytes(d: UserDay): number {
  return d.users.byteLength + d.values.byteLength + 200;
}

/** Builds a day's columns from its rows, as the store hands them over. */
export class UserDayBuilder {
  private users: number[] = [];
  private values: number[] = [];

  constructor(private readonly dir: UserDirectory) {}

  add(id: string, auto: BySource["auto"], manual: BySource["manual"]): void {
    this.users.push(this.dir.number(id));
    this.values.push(auto[0], auto[1], auto[2], manual[0], manual[1], manual[2]);
  }

  build(): UserDay {
    return { users: Int32Array.from(this.users), values: Float64Array.from(this.values) };
  }
}

/**
 * Each user's figures (of one source, or both) summed over the days folded, in the order
 * folded: per user the same sums as adding `pick()` of each day into a Map (costs as whole
 * nano-dollars, exact in any order). A user whose picked figures are all zero on every day
 * is absent, as before.
 */
export class WindowUsers {
  /** [cost, tokens, events] per user number; cost in whole nano-dollars, summed exactly. */
  private sums = new Float64Array(0);
  private present = new Uint8Array(0);

  constructor(
    private readonly dir: UserDirectory,
    private readonly source: Source | undefined,
  ) {}

  add(day: UserDay): void {
    this.grow(this.dir.size);
    const { users, values } = day;
    const sums = this.sums;
    const present = this.present;
    const off = this.source === "manual" ? 3 : 0;
    const both = this.source === undefined;
    for (let i = 0; i < users.length; i++) {
      const v = i * STRIDE + off;
      let c = toNano(values[v]!);
      let t = values[v + 1]!;
      let e = values[v + 2]!;
      if (both) {
        c += toNano(values[v + 3]!);
        t += values[v + 4]!;
        e += values[v + 5]!;
      }
      if (c === 0 && t === 0 && e === 0) continue;
      const u = users[i]!;
      const s = u * 3;
      sums[s] = sums[s]! + c;
      sums[s + 1] = sums[s + 1]! + t;
      sums[s + 2] = sums[s + 2]! + e;
      present[u] = 1;
    }
  }

  /** Distinct users with at least one usage event. */
  active(): number {
    let n = 0;
    for (let u = 0; u < this.present.length; u++) if (this.present[u] && this.sums[u * 3 + 2]! > 0) n++;
    return n;
  }

  /** The first `limit` users by cost (highest first), then user id. */
  top(limit: number): { userId: string; cost: number; tokens: number; events: number }[] {
    const ids = this.dir.ids;
    const sums = this.sums;
    const before = (a: number, b: number) => {
      const ca = sums[a * 3]!;
      const cb = sums[b * 3]!;
      return ca > cb || (ca === cb && ids[a]! < ids[b]!);
    };
    // Kept sorted; limit is at most 100, so insertion beats sorting every user.
    const best: number[] = [];
    for (let u = 0; u < this.present.length; u++) {
      if (!this.present[u] || limit <= 0) continue;
      if (best.length === limit && !before(u, best[limit - 1]!)) continue;
      let i = best.length === limit ? limit - 1 : best.length;
      while (i > 0 && before(u, best[i - 1]!)) {
        best[i] = best[i - 1]!;
        i--;
      }
      best[i] = u;
    }
    return best.map((u) => ({ userId: ids[u]!, cost: toDollars(sums[u * 3]!), tokens: sums[u * 3 + 1]!, events: sums[u * 3 + 2]! }));
  }

  private grow(size: number): void {
    if (size * 3 <= this.sums.length) return;
    const n = Math.max(size, this.present.length * 2, 1_024);
    const sums = new Float64Array(n * 3);
    sums.set(this.sums);
    const present = new Uint8Array(n);
    present.set(this.present);
    this.sums = sums;
    this.present = present;
  }
}
