import type { ServiceImpl } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { toTimestamp } from "@meter/lib/time";
import type { IngestionDeps } from "../deps.ts";
import { attribute, attributeTeam } from "../domain/attribution.ts";
import { counterId } from "../domain/counter-ids.ts";
import { catchUp } from "../late-changes/follow.ts";
import { requireUser } from "./common.ts";
import { dimensions } from "../windows/dimensions.ts";
import { windowDocId } from "../windows/shares.ts";
import { uncreditedOf } from "../store/counters.ts";
import { creditsInForce, sessionCredits } from "../credits/view.ts";
import { hasScope, ownCapWithPool, readTeam, sessionTeam, teamLimits } from "../teams/view.ts";
import { readEarly, readGuessed } from "../windows/with-counter.ts";
import { currentUsage, planConfig } from "./plan-config.ts";

/** Plan name reported for a user without a plan (with sdk_enabled false). */
export const NO_PLAN = "none";

/**
 * Which counter a user's session will read, guessed before the user is resolved so that the
 * read runs beside the plans service's lookup instead of after it: the counter this user's
 * last session read, else the current period of the product's last session (users of a
 * product mostly share their periods: calendar months, a common billing anchor). A guess is
 * only used when the resolved period names the same counter; a wrong one costs one wasted
 * read, made in parallel, and then the right read, as without a guess.
 */
class CounterGuess {
  private readonly byUser = new LRUCache<string, string>({ max: 100_000 });
  private readonly byProduct = new LRUCache<string, Date>({ max: 10_000 });

  guess(productId: string, userId: string): string | undefined {
    const known = this.byUser.get(`${productId}\n${userId}`);
    if (known) return known;
    const start = this.byProduct.get(productId);
    return start && counterId(productId, userId, start);
  }

  remember(productId: string, userId: string, counter: string, start: Date): void {
    this.byUser.set(`${productId}\n${userId}`, counter);
    this.byProduct.set(productId, start);
  }
}

/**
 * The session bootstrap: one call to the plans service and, beside it, one read of the user's
 * counter and window document (one command: windows/with-counter.ts; a second one after it when the
 * guess was wrong); then, in parallel, the credits and the member's team's counter and window
 * document, each by `_id`, when the plans in force have them. sdk_enabled is true when a plan is in
 * force for the user, i.e. the client library must enforce plan_config; false means no plan:
 * permissive defaults, meter but never gate.
 */
export function getSession(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getSession"] {
  const guesses = new CounterGuess();
  // A member's team documents, as its last session named them: read beside the lookup too, so
  // that a member's session costs no more round trips than anyone's (a wrong guess: one wasted read).
  const teamGuesses = new LRUCache<string, { counterId: string; windowsId: string | null }>({ max: 100_000 });
  // Whether the product's last session was on a plan with limits: then the next one reads the
  // user's window document beside the lookup (a wrong guess costs one read, as above).
  const windowed = new LRUCache<string, boolean>({ max: 10_000 });
  const userStores = { counters: deps.counters, windows: deps.windows };
  const teamStores = { counters: deps.teamCounters, windows: deps.teamWindows };
  return async (req) => {
    const productId = req.productId;
    // The window document is read beside the lookup too, when the product's plans have limits:
    // with the counter, one command (windows/with-counter.ts).
    const windowsId = windowDocId(productId, req.userId);
    // A move made after the early reads began (by this session's catch-up, another request or the follower) makes them stale.
    const movesBefore = deps.lateChanges.moves;
    const early = readEarly(userStores, guesses.guess(productId, req.userId) ?? null, windowed.get(productId) === true ? windowsId : null);
    const teamGuess = teamGuesses.get(`${productId}\n${req.userId}`);
    const earlyTeam = teamGuess && readEarly(teamStores, teamGuess.counterId, teamGuess.windowsId);
    const user = await requireUser(deps, productId, req.userId);
    const moved = (await catchUp(deps, productId, req.userId, user)) || deps.lateChanges.moves !== movesBefore;
    const a = attribute(productId, req.userId, user, deps.now());
    const now = deps.now();
    const ta = attributeTeam(productId, user, now);
    // Read beside the counter: only for a plan with credits enabled; the team's documents likewise.
    const creditsRead = creditsInForce(deps.credits, productId, req.userId, a.plan, a.period.start, now);
    creditsRead.catch(() => {});
    const teamRead = readTeam(deps, productId, ta, now, moved ? undefined : earlyTeam);
    if (ta) teamGuesses.set(`${productId}\n${req.userId}`, { counterId: ta.counterId, windowsId: hasScope(ta, "team") ? windowDocId(productId, ta.team.id) : null });
    else if (teamGuess) teamGuesses.delete(`${productId}\n${req.userId}`);
    teamRead.catch(() => {});
    const plan = a.plan;
    // The user's window document holds its own plan's limits and its team plan's member-scope ones.
    const hasLimits = (plan?.limits.length ?? 0) > 0 || hasScope(ta, "member");
    windowed.set(productId, hasLimits);
    // A counter read before a late change moved events is read again.
    const [{ counter, windows }, credits] = await Promise.all([readGuessed(userStores, a.counterId, hasLimits ? windowsId : null, moved ? undefined : early), creditsRead]);
    guesses.remember(productId, req.userId, a.counterId, a.period.start);
    const team = await teamRead;
    return {
      userId: req.userId,
      serviceUserId: user.id,
      plan: plan?.name ?? NO_PLAN,
      planId: plan?.id,
      // A member without a plan of its own is gated by its team's dimensions.
      sdkEnabled: plan !== null || team !== null,
      planConfig: planConfig(plan),
      currentUsage: currentUsage(counter),
      billingPeriod: { start: toTimestamp(a.period.start), end: toTimestamp(a.period.end) },
      limits: [...dimensions(plan, a.period, counter, windows, now, ownCapWithPool(credits?.cap?.(uncreditedOf(counter)), team)), ...teamLimits(team, windows, now)],
      credits: credits ? sessionCredits(credits.view, plan?.creditsLowAt) : undefined,
      team: team ? sessionTeam(team) : undefined,
    };
  };
}
