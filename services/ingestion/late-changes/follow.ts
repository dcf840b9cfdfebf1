import type { KnownUser, UserDirectory } from "../adapters/plans.ts";
import { settleLateChanges, type MoveDeps } from "./move.ts";
import type { LateChanges, PendingChange } from "./pending.ts";

/**
 * When late changes are applied (move.ts does the moving). A subscription recorded within the
 * window whose dates began before now is a change to apply; ingestion sees it in the history
 * the plans service gives with the user, so spotting one costs no read. Each change is applied
 * once per process, then followed in the background:
 * - a read (session, usage, a lease) that meets a change this process has not applied yet
 *   applies it before answering, so a read right after the change sees the new period;
 * - a write (a batch, a manual event) only records it among the pending changes and kicks the
 *   follower (jobs/late-changes.ts), which applies it at once;
 * - the follower applies every pending change again each round until the window has passed,
 *   which moves stragglers: events counted under the old history after a move (a batch that
 *   resolved the user before the change, a job completed by the recovery sweep).
 * Every later call about the user, in this process, costs nothing: hot paths never read the
 * arrival lists again for a change already applied.
 */

/** What following late changes needs: what moving them needs, the followed users, and a kick. */
export interface FollowDeps extends MoveDeps {
  lateChanges: LateChanges;
  users: Pick<UserDirectory, "resolve">;
  /** Runs a round of the follower now (the job jobs/late-changes.ts), unless one is pending. */
  kickLateChanges: () => Promise<void>;
}

/** Changes followed per round at most (the rest wait for the next round). */
const PER_ROUND = 1_000;
/** How far before the last round's start a round looks for lists recorded since. */
const RECHECK_MARGIN_MS = 10_000;

const userKey = (productId: string, userId: string) => `${productId}\n${userId}`;

/**
 * The changes of `user` still to apply, as one string (empty: none): subscriptions recorded
 * within the window whose dates began before now. A pure look at the history.
 */
function changesOf(user: KnownUser, now: Date, windowMs: number): { changes: string; last: number; until: Date } | null {
  const since = now.getTime() - windowMs;
  let changes = "";
  let last = 0;
  for (const s of user.subscriptions) {
    if (!s.periodStart || s.periodStart > now || s.effectiveAt.getTime() < since) continue;
    changes += `${s.effectiveAt.getTime()}/${s.periodStart.getTime()};`;
    last = Math.max(last, s.effectiveAt.getTime());
  }
  return changes ? { changes, last, until: new Date(last + windowMs) } : null;
}

/**
 * Before a read about one user answers: applies a change this process has not applied yet.
 * Returns whether some of the user's counters changed. Costs nothing once it is applied.
 */
export async function catchUp(deps: FollowDeps, productId: string, userId: string, user: KnownUser): Promise<boolean> {
  if (deps.lateChangeWindowMs <= 0) return false;
  const now = deps.now();
  const c = changesOf(user, now, deps.lateChangeWindowMs);
  if (!c) return false;
  const lc = deps.lateChanges;
  const key = userKey(productId, userId);
  const seen = lc.seen.get(key);
  if (seen?.changes === c.changes && seen.applied) return false;
  const runKey = `${key}\n${c.changes}`;
  let run = lc.running.get(runKey);
  if (!run) {
    run = (async () => {
      const moved = await settleLateChanges(deps, productId, new Map([[userId, user]]));
      // Followed from now on for the stragglers, unless a write already put it there.
      if (seen?.changes !== c.changes) await lc.follow(productId, [{ userId, until: c.until }]);
      lc.seen.set(key, { changes: c.changes, applied: true });
      return moved.size > 0;
    })().finally(() => lc.running.delete(runKey));
    lc.running.set(runKey, run);
  }
  return run;
}

/** After a write: users with a change this process has not seen yet are followed; the follower applies it now. */
export async function notice(deps: FollowDeps, productId: string, users: ReadonlyMap<string, KnownUser>): Promise<void> {
  if (deps.lateChangeWindowMs <= 0) return;
  const now = deps.now();
  const lc = deps.lateChanges;
  const fresh: { userId: string; until: Date; changes: string }[] = [];
  for (const [userId, user] of users) {
    const c = changesOf(user, now, deps.lateChangeWindowMs);
    if (c && lc.seen.get(userKey(productId, userId))?.changes !== c.changes) fresh.push({ userId, ...c });
  }
  if (fresh.length === 0) return;
  await lc.follow(productId, fresh);
  for (const f of fresh) {
    const key = userKey(productId, f.userId);
    if (lc.seen.get(key)?.changes !== f.changes) lc.seen.set(key, { changes: f.changes, applied: false });
  }
  await deps.kickLateChanges();
}

/**
 * One round of the follower (jobs/late-changes.ts): every user with a change within the
 * window gets it applied again (a no-op unless something arrived under the old history since),
 * read fresh from the plans service; users whose window has passed are dropped. Returns the
 * users whose counters changed.
 */
export async function followLateChanges(deps: FollowDeps): Promise<number> {
  if (deps.lateChangeWindowMs <= 0) return 0;
  const lc = deps.lateChanges;
  const now = deps.now();
  // Least recently applied first (new changes have none), so none waits behind a thousand others.
  const docs = await lc.pending.find({}).sort({ checked_at: 1 }).limit(PER_ROUND).toArray();
  const done = docs.filter((d) => d.until < now).map((d) => d._id);
  const byProduct = new Map<string, PendingChange[]>();
  for (const d of docs) {
    if (d.until < now) continue;
    const list = byProduct.get(d.product_id);
    if (list) list.push(d);
    else byProduct.set(d.product_id, [d]);
  }
  let moved = 0;
  for (const [productId, list] of byProduct) {
    const users = await deps.users.resolve(productId, list.map((d) => d.user_id));
    // A change applied before needs only the lists recorded since the last round began (the
    // stragglers), with a margin for a list stamped just before its bucket was written; a
    // change recorded since then needs every list within the window.
    let from: Date | undefined = now;
    for (const d of list) {
      const user = users.get(d.user_id);
      if (!user) {
        done.push(d._id);
        continue;
      }
      const c = changesOf(user, now, deps.lateChangeWindowMs);
      const since = d.checked_at ? d.checked_at.getTime() - RECHECK_MARGIN_MS : -Infinity;
      if (!c || c.last >= since) from = undefined;
      else if (from && since < from.getTime()) from = new Date(since);
    }
    moved += (await settleLateChanges(deps, productId, users, from)).size;
    await lc.pending.updateMany({ _id: { $in: list.map((d) => d._id) } }, { $set: { checked_at: now } });
    for (const [userId, user] of users) {
      const c = changesOf(user, now, deps.lateChangeWindowMs);
      if (c) lc.seen.set(userKey(productId, userId), { changes: c.changes, applied: true });
    }
  }
  if (done.length > 0) await lc.pending.deleteMany({ _id: { $in: done } });
  return moved;
}
