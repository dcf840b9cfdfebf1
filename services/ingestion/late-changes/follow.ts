import type { SubscriptionWindow } from "@meter/rules";
import type { KnownTeam, KnownUser, UserDirectory } from "../adapters/plans.ts";
import { movesEvents, settleLateChanges, type MoveDeps } from "./move.ts";
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
  users: Pick<UserDirectory, "resolve" | "resolveTeams">;
  /** Runs a round of the follower in this process now (the job jobs/late-changes.ts), or once more after the one in progress. */
  kickLateChanges: () => void;
}

/** Changes followed per round at most (the rest wait for the next round). */
const PER_ROUND = 1_000;
/** How far before the last round's start a round looks for lists recorded since. */
const RECHECK_MARGIN_MS = 10_000;

const userKey = (productId: string, userId: string) => `${productId}\n${userId}`;

/**
 * The changes of `user` still to apply, as one string (empty: none): subscriptions of the user,
 * or of a team it is or was a member of, recorded within the window whose dates began before
 * now and that give some time since their start another window than was counted. A pure look
 * at the histories. A subscription that only
 * continues the windows counted (a new user's first plan in calendar months, a renewal that
 * starts where its rolled-on window did) moves nothing and is not followed: most sign-ups and
 * renewals cost the follower nothing.
 */
function changesOf(user: KnownUser, now: Date, windowMs: number): { changes: string; last: number; until: Date } | null {
  // The user's own history, and its teams' (a team's change moves its members' events between the team's periods).
  return changesIn([["", user.subscriptions], ...[...user.teams.values()].map(teamHistory)], now, windowMs);
}

const teamHistory = (team: KnownTeam): [string, readonly SubscriptionWindow[]] => [`team:${team.id}:`, team.subscriptions];

/** The changes of tagged histories (changesOf). */
function changesIn(histories: readonly [string, readonly SubscriptionWindow[]][], now: Date, windowMs: number): { changes: string; last: number; until: Date } | null {
  const since = now.getTime() - windowMs;
  // A straggler may be stamped a little after the change (clocks): look a window ahead.
  const horizon = new Date(now.getTime() + windowMs);
  let changes = "";
  let last = 0;
  for (const [tag, history] of histories) {
    for (const [i, s] of history.entries()) {
      if (!s.periodStart || s.periodStart > now || s.effectiveAt.getTime() < since) continue;
      if (!movesEvents(history, i, horizon)) continue;
      changes += `${tag}${s.effectiveAt.getTime()}/${s.periodStart.getTime()};`;
      last = Math.max(last, s.effectiveAt.getTime());
    }
  }
  return changes ? { changes, last, until: new Date(last + windowMs) } : null;
}

/**
 * Before a read about one team answers (its usage, its limits): applies a change of the team's
 * own history this process has not applied yet, as catchUp does for a user, and follows the team
 * for the stragglers, as a member's read follows the member.
 */
export async function catchUpTeam(deps: FollowDeps, productId: string, team: KnownTeam): Promise<void> {
  if (deps.lateChangeWindowMs <= 0) return;
  const c = changesIn([teamHistory(team)], deps.now(), deps.lateChangeWindowMs);
  if (!c) return;
  const lc = deps.lateChanges;
  const key = teamKey(productId, team.id);
  const seen = lc.seen.get(key);
  if (seen?.changes === c.changes) return;
  await applyOnce(lc, key, c.changes, async () => {
    const moved = counted(lc, await settleLateChanges(deps, productId, new Map(), undefined, [team]));
    await lc.followTeam(productId, team.externalTeamId, c.until);
    deps.kickLateChanges();
    return moved > 0;
  });
}

// A user's key begins with its product id (a UUID), so none is a team's, whatever the user id.
const teamKey = (productId: string, teamId: string) => `team\n${productId}\n${teamId}`;

/**
 * Counts a settle that moved events (`moved`: its lists moved) among the process's moves, before
 * anything notes it as applied: a session whose early reads began before sees it there.
 */
function counted(lc: LateChanges, moved: number): number {
  if (moved > 0) lc.moves++;
  return moved;
}

/**
 * Runs `apply` for the changes `changes` of `key` once in this process, sharing a run already
 * under way (concurrent reads of one user or team), and then remembers them as applied.
 */
function applyOnce(lc: LateChanges, key: string, changes: string, apply: () => Promise<boolean>): Promise<boolean> {
  const runKey = `${key}\n${changes}`;
  let run = lc.running.get(runKey);
  if (!run) {
    run = apply()
      .then((moved) => {
        lc.seen.set(key, { changes, applied: true });
        return moved;
      })
      .finally(() => lc.running.delete(runKey));
    lc.running.set(runKey, run);
  }
  return run;
}

/**
 * Before a read about one user answers: applies a change this process has not applied yet.
 * Returns whether this call applied one (alone or beside a concurrent read of the user), i.e.
 * whether a read of the user's documents begun before it may predate a move; a move by the
 * follower or another request shows in `lateChanges.moves`. Costs nothing once it is applied.
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
  await applyOnce(lc, key, c.changes, async () => {
    const moved = counted(lc, await settleLateChanges(deps, productId, new Map([[userId, user]])));
    // Followed from now on for the stragglers, unless a write already put it there (and kicked
    // the follower, whose poll rests while nobody is followed).
    if (seen?.changes !== c.changes) {
      await lc.follow(productId, [{ userId, until: c.until }]);
      deps.kickLateChanges();
    }
    return moved > 0;
  });
  return true;
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
  deps.kickLateChanges();
}

/**
 * One round of the follower (jobs/late-changes.ts): the next PER_ROUND followed users (a walk
 * by `_id`, so every user gets its turn however many there are) get their changes applied again
 * (a no-op unless something arrived under the old history since), read fresh from the plans
 * service; users whose window has passed are dropped. A product with nothing recorded since
 * the lists its users need costs one read of its recent buckets and nothing else: a round
 * writes nothing then (an idle follower of thousands of users used to rewrite every one of them
 * every 5 s). Returns how many followed users are still within their window (0: nothing to
 * follow, so the job's poll may rest) and how many lists had events moved.
 */
export async function followLateChanges(deps: FollowDeps): Promise<{ following: number; moved: number }> {
  if (deps.lateChangeWindowMs <= 0) return { following: 0, moved: 0 };
  const lc = deps.lateChanges;
  const now = deps.now();
  const docs = await lc.pending.find(lc.cursor ? { _id: { $gt: lc.cursor } } : {}).sort({ _id: 1 }).limit(PER_ROUND).toArray();
  lc.cursor = docs.length < PER_ROUND ? "" : docs[docs.length - 1]!._id;
  const done = docs.filter((d) => d.until < now).map((d) => d._id);
  const byProduct = new Map<string, PendingChange[]>();
  for (const d of docs) {
    if (d.until < now) continue;
    const list = byProduct.get(d.product_id);
    if (list) list.push(d);
    else byProduct.set(d.product_id, [d]);
  }
  const windowStart = now.getTime() - deps.lateChangeWindowMs;
  // A change applied before needs only the lists recorded since the last round that applied
  // it began, with a margin for a list stamped just before its bucket was written.
  const needsFrom = (d: PendingChange) => {
    const checked = lc.checked.get(d._id);
    return checked === undefined ? windowStart : checked - RECHECK_MARGIN_MS;
  };
  let moved = 0;
  for (const [productId, list] of byProduct) {
    // Nothing recorded since the earliest list these users need: nothing can move (their
    // checks stay as they were, so the next round looks from there).
    if ((await deps.arrivals.jobsSince(productId, new Date(Math.min(...list.map(needsFrom))), now)).length === 0) continue;
    const userEntries = list.filter((d) => d.team_id === undefined);
    const teamEntries = list.filter((d) => d.team_id !== undefined);
    const users = userEntries.length === 0 ? new Map<string, KnownUser>() : await deps.users.resolve(productId, userEntries.map((d) => d.user_id));
    const teams = teamEntries.length === 0 ? new Map<string, KnownTeam>() : await deps.users.resolveTeams(productId, teamEntries.map((d) => d.team_id!));
    // A team a followed member belongs to is applied from the first such member's copy
    // (settleLateChanges takes the members' teams first), which may be older than the one resolved above: what is
    // noted as applied is that copy's changes, so a later read about the team that meets a newer
    // change still applies it.
    const carried = new Map<string, KnownTeam>();
    for (const u of users.values()) for (const t of u.teams.values()) if (!carried.has(t.id)) carried.set(t.id, t);
    // A change recorded since an entry's last check needs every list within the window.
    let from: Date | undefined = now;
    // Each entry's changes, noted as applied once the round has applied them.
    const applied: { key: string; changes: string }[] = [];
    for (const d of list) {
      const user = d.team_id === undefined ? users.get(d.user_id) : undefined;
      const resolved = d.team_id === undefined ? undefined : teams.get(d.team_id);
      const team = resolved && (carried.get(resolved.id) ?? resolved);
      if (!user && !team) {
        done.push(d._id);
        continue;
      }
      const c = user ? changesOf(user, now, deps.lateChangeWindowMs) : changesIn([teamHistory(team!)], now, deps.lateChangeWindowMs);
      if (c) applied.push({ key: user ? userKey(productId, d.user_id) : teamKey(productId, team!.id), changes: c.changes });
      const since = needsFrom(d);
      if (!c || c.last >= since) from = undefined;
      else if (from && since < from.getTime()) from = new Date(since);
    }
    moved += counted(lc, await settleLateChanges(deps, productId, users, from, [...teams.values()]));
    for (const d of list) lc.checked.set(d._id, now.getTime());
    for (const { key, changes } of applied) lc.seen.set(key, { changes, applied: true });
  }
  if (done.length > 0) await lc.pending.deleteMany({ _id: { $in: done } });
  // A round that read a full page has more to walk: the next comes at the round's pace.
  return { following: docs.length === PER_ROUND ? PER_ROUND : docs.length - done.length, moved };
}
