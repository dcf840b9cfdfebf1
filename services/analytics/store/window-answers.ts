import { createHash } from "node:crypto";
import { DbStore, deleteInRounds } from "@meter/lib/mongo";
import type { Source } from "../domain/rollup.ts";
import { versionOf, type DayDoc } from "./rollups.ts";

/** A top user as stored: id, cost (dollars, an exact number of nano-dollars), tokens, events. */
export type TopRow = [string, number, number, number];

/**
 * The per-user answers of one window (active users and the first TOP_USERS_MAX users by
 * cost) for one source filter, as a fold of the window's user columns gave them, with the
 * rollup versions of the days folded. A query that finds the versions of the day documents
 * it read equal to `versions` has the very answer the fold would give: a day rolled since
 * changes its version. A cold query so reads its window's day documents and one answer
 * document, whatever the number of users, instead of every user chunk of the window.
 */
export interface WindowAnswerDoc {
  /** `<product>|<last day>|<first day>|<source or "all">`: a product's windows ending on a day are one `_id` range. */
  _id: string;
  product_id: string;
  first: string;
  last: string;
  source: Source | "all";
  /** Digest of the folded days' ids and rollup versions, in order (`versionsOf`). */
  versions: string;
  active: number;
  /** JSON of `TopRow[]`: the embedded database stores no nested arrays (as the user chunks). */
  top: string;
  computed_at: Date;
}

export interface WindowKey {
  productId: string;
  first: string;
  last: string;
  source: Source | undefined;
}

export const answerId = (k: WindowKey) => `${k.productId}|${k.last}|${k.first}|${k.source ?? "all"}`;

/** What a window's answer was computed from: its day documents' ids and versions, in order. */
export function versionsOf(docs: readonly DayDoc[]): string {
  const h = createHash("sha256");
  for (const d of docs) h.update(`${d._id}\n${versionOf(d)}\n`);
  return h.digest("base64url");
}

export class WindowAnswerStore extends DbStore {
  private readonly answers = this.db.collection<WindowAnswerDoc>("window_answers");

  read(k: WindowKey): Promise<WindowAnswerDoc | null> {
    return this.answers.findOne({ _id: answerId(k) });
  }

  async write(k: WindowKey, a: { versions: string; active: number; top: TopRow[] }, now: Date): Promise<void> {
    const doc: WindowAnswerDoc = {
      _id: answerId(k),
      product_id: k.productId,
      first: k.first,
      last: k.last,
      source: k.source ?? "all",
      versions: a.versions,
      active: a.active,
      top: JSON.stringify(a.top),
      computed_at: now,
    };
    await this.answers.replaceOne({ _id: doc._id }, doc, { upsert: true });
  }

  /** Deletes answers computed before `before` (nothing asked for them since); returns how many. */
  deleteComputedBefore(before: Date): Promise<number> {
    return deleteInRounds(this.answers, { computed_at: { $lt: before } });
  }
}

/**
 * The versions each window's stored answer is known to have in this process (read or
 * written), so that a fold stores its answer only when it is new: once per window and
 * version, and for a window whose days keep changing (today's, on a product taking events) at
 * most every `rewriteMs`. Bounded: the `max` windows noted last.
 */
export class AnswersSeen {
  private readonly seen = new Map<string, { versions: string; at: number }>();

  constructor(
    private readonly max = 10_000,
    private readonly rewriteMs = 10_000,
  ) {}

  note(k: WindowKey, versions: string): void {
    const id = answerId(k);
    this.seen.delete(id);
    this.seen.set(id, { versions, at: Date.now() });
    if (this.seen.size > this.max) this.seen.delete(this.seen.keys().next().value!);
  }

  /** Whether a fold at `versions` should store its answer. */
  stale(k: WindowKey, versions: string): boolean {
    const s = this.seen.get(answerId(k));
    return !s || (s.versions !== versions && Date.now() - s.at >= this.rewriteMs);
  }
}
