import { randomUUID } from "node:crypto";
import type { UsageEvent } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import type { Logger } from "@meter/lib/logger";
import { timestampDate } from "@meter/lib/time";
import { addDollars, calendarMonth, normalizeModel, roundDollars } from "@meter/rules";
import type { KnownUser, PlanInfo, UserDirectory } from "../adapters/plans.ts";
import { analyticsTeam, attribute, attributeTeam, attributionFields } from "../domain/attribution.ts";
import { applyCounterBounds, MAX_COUNTER_TOKENS, OTHER_MODELS, undecided, type Boundable, type CounterState } from "../domain/counter-bounds.ts";
import { monthCounterId } from "../domain/counter-ids.ts";
import { encodeMetadata } from "../domain/field-keys.ts";
import { storeUsage, type WriteDeps } from "../exactly-once/write.ts";
import type { CounterStore } from "../store/counters.ts";
import type { JobDoc } from "../store/jobs.ts";
import { windowShares } from "../windows/shares.ts";
import { addTeamShare } from "../teams/shares.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";

/**
 * The write path of usage, after a handler validated its request: the counter bounds are
 * checked, the events stored and counted exactly once (exactly-once/), and users with a late
 * change are handed to the follower (late-changes/). A batch and a manual event both go here.
 */

/** What recording usage needs: the write path, the counters' figures, and the late-change follower's door. */
export interface RecordDeps extends WriteDeps {
  counters: WriteDeps["counters"] & BoundStates & Pick<CounterStore, "expect" | "arrived">;
  teamCounters: WriteDeps["teamCounters"] & BoundStates & Pick<CounterStore, "expect" | "arrived">;
  users: Pick<UserDirectory, "resolve">;
  logger: Logger;
  noticeLateChanges: (productId: string, users: ReadonlyMap<string, KnownUser>) => Promise<void>;
}

/**
 * Records usage events of one product and returns the ids stored now (the others were stored
 * before). `path` names an event in a refusal by the counter bounds.
 */
export async function recordUsage(
  deps: RecordDeps,
  job: JobDoc,
  docs: UsageEventDoc[],
  users: ReadonlyMap<string, KnownUser>,
  path: (doc: UsageEventDoc) => string,
): Promise<Set<string>> {
  // Counters' rounds may wait for this job while its events are stored (CounterStore.expect):
  // until it adds to them, or once it is clear that it will not (no team event stored now, its
  // completion left to another claimant or over).
  const teams = docs.some((d) => d.team);
  const done = (store: Pick<CounterStore, "arrived">) => store.arrived(job._id);
  deps.counters.expect(job._id);
  if (teams) deps.teamCounters.expect(job._id);
  let inserted: Set<string>;
  try {
    await boundCounters(deps, docs, users, path);
    inserted = await storeUsage(deps, job, docs, {
      inserted: (now) => {
        if (!now.some((d) => d.team)) done(deps.teamCounters);
      },
      ownDone: () => {
        done(deps.counters);
        done(deps.teamCounters);
      },
    });
  } finally {
    done(deps.counters);
    done(deps.teamCounters);
  }
  // Best effort, as the relay's kick (exactly-once/write.ts): the user's next batch notices again
  // and a session's read catches up (late-changes/follow.ts).
  await deps.noticeLateChanges(job.product_id, users).catch((err: unknown) => deps.logger.warn({ err, productId: job.product_id }, "noticing late subscription changes failed; the next batch or a session read catches up"));
  return inserted;
}

/**
 * A validated batch; returns how many of its events were stored now. Events of unregistered
 * users are stored and counted too (calendar month, no plan). `events` are first
 * occurrences; `indexOf` gives each one's place in the request, for refusals.
 */
export async function ingestUsageBatch(
  deps: RecordDeps,
  productId: string,
  events: readonly UsageEvent[],
  indexOf: (e: UsageEvent) => number,
): Promise<number> {
  const users = await deps.users.resolve(productId, events.map((e) => e.userId));
  const now = deps.now();
  const job = `job_${randomUUID()}`;
  const docs = events.map((e) => usageDoc(productId, job, e, users.get(e.userId), now));
  const at = new Map(docs.map((d, k) => [d, indexOf(events[k]!)]));
  const ids = docs.map((d) => d._id);
  const inserted = await recordUsage(deps, { _id: job, kind: "usage", product_id: productId, ids, created_at: now }, docs, users, (d) => `/${at.get(d)}/total_tokens`);
  const unknown = docs.filter((d) => inserted.has(d._id) && !d.user_known).length;
  if (unknown > 0) deps.logger.info({ productId, events: unknown }, "stored events of unregistered users");
  return inserted.size;
}

/**
 * A usage event as stored. Defaults of the contract: total_tokens is input + output when
 * not sent, cost_total is cost_tokens + cost_tools when not sent. The model name is
 * normalized against the plan in force, as the client library does.
 */
export function usageDoc(productId: string, job: string, e: UsageEvent, user: KnownUser | undefined, receivedAt: Date): UsageEventDoc {
  const timestamp = timestampDate(e.timestamp!);
  const a = attribute(productId, e.userId, user, timestamp);
  const team = attributeTeam(productId, user, timestamp);
  // A member without a plan of its own is priced at its team plan's rates.
  const model = e.model ? normalizeModel(e.model, (a.plan ?? team?.plan)?.pricing ?? null) : null;
  // int64 fields arrive as bigint; the handler kept token counts to MAX_EVENT_TOKENS.
  const input = Number(e.inputTokens);
  const output = Number(e.outputTokens);
  const doc: UsageEventDoc = {
    _id: `${productId}/${e.id}`,
    product_id: productId,
    event_id: e.id,
    user_id: e.userId,
    user_known: !!user,
    session_id: e.sessionId ?? null,
    timestamp,
    model,
    input_tokens: input,
    output_tokens: output,
    total_tokens: Number(e.totalTokens) || input + output,
    tool_calls: e.toolCalls,
    tool_call_count: e.toolCalls.length,
    // The client's costs, rounded to the nano-dollar once here (money.ts).
    cost_tokens: roundDollars(e.costTokens),
    cost_tools: roundDollars(e.costTools),
    cost_total: roundDollars(e.costTotal) || addDollars(e.costTokens, e.costTools),
    metadata: encodeMetadata(e.metadata),
    // A client's own record of a manual entry counts as a manual event, as POST /events does.
    source: e.source === "manual" ? "manual" : "auto",
    description: e.description ?? null,
    job,
    ...attributionFields(a),
    ...analyticsTeam(user, timestamp),
    received_at: receivedAt,
    lease_id: e.leaseId ?? null,
  };
  const windows = windowShares(a.plan, a.period, doc, receivedAt);
  if (windows) doc.windows = windows;
  addTeamShare(doc, team, e.model ?? null, receivedAt);
  return doc;
}

/** The counters an event is added to: its period's, and its calendar month's when that is another. */
function countersOf(owner: string, counter: string, periodStart: Date, d: UsageEventDoc): string[] {
  const month = calendarMonth(d.timestamp).start;
  return month.getTime() === periodStart.getTime() ? [counter] : [counter, monthCounterId(d.product_id, owner, month)];
}

/**
 * The counter bounds (domain/counter-bounds.ts), before anything is stored: an event that
 * would take a counter's tokens past MAX_COUNTER_TOKENS refuses the batch (422, each such
 * event named by `path`); a model past the counter's MAX_COUNTER_MODELS is counted as
 * OTHER_MODELS (`counted_model`; for the team's counters `team.counted_model`). One read of the
 * members' counters the events go to and, beside it, one of their teams', of the counters whose
 * state read lately does not decide the batch (boundStatesOf).
 */
async function boundCounters(
  deps: RecordDeps,
  docs: UsageEventDoc[],
  users: ReadonlyMap<string, KnownUser>,
  path: (doc: UsageEventDoc) => string,
): Promise<void> {
  const items = docs.map((doc) => ({
    doc,
    owner: `user "${doc.user_id}"`,
    model: doc.model,
    total_tokens: doc.total_tokens,
    counters: countersOf(doc.user_id, doc.counter_id, doc.period_start, doc),
    capped: doc.model !== null && capsModel(users.get(doc.user_id)?.plans.values(), doc.model),
  }));
  const teamItems = docs.flatMap((doc) => {
    const t = doc.team;
    if (!t) return [];
    const model = t.model ?? doc.model;
    const plans = users.get(doc.user_id)?.teams.get(t.id)?.plans.values();
    return [{ doc, owner: `the team of user "${doc.user_id}"`, model, total_tokens: doc.total_tokens, counters: countersOf(t.id, t.counter_id, t.period_start, doc), capped: model !== null && capsModel(plans, model) }];
  });
  const [state, teamState] = await Promise.all([
    boundStatesOf(deps.counters, items),
    teamItems.length === 0 ? new Map<string, CounterState>() : boundStatesOf(deps.teamCounters, teamItems),
  ]);
  const own = applyCounterBounds(items, state);
  const team = applyCounterBounds(teamItems, teamState);
  const refused = [...own.refused, ...team.refused];
  if (refused.length > 0) {
    throw rpcError.invalidFields(
      refused.map(({ event, tokens }) => ({
        path: path(event.doc),
        message: `would take ${event.owner}'s token count (${tokens}) past ${MAX_COUNTER_TOKENS}, the most one billing period or month counts`,
      })),
    );
  }
  for (const f of own.folded) f.doc.counted_model = OTHER_MODELS;
  for (const f of team.folded) f.doc.team!.counted_model = OTHER_MODELS;
  const folded = own.folded.length + team.folded.length;
  if (folded > 0) deps.logger.warn({ productId: docs[0]!.product_id, events: folded }, `events counted under "${OTHER_MODELS}": their users' or teams' counters name the most models kept apart`);
}

function capsModel(plans: Iterable<PlanInfo> | undefined, model: string): boolean {
  for (const plan of plans ?? []) if (Object.hasOwn(plan.modelLimits, model)) return true;
  return false;
}

type BoundStates = Pick<CounterStore, "boundStates" | "recentBoundStates">;

/**
 * The counter states a bound check of `items` needs: those this process read lately where they
 * decide it as a read now would (undecided()), the others read now (one read by `_id` list).
 * A user's counters are in most of a product's batches; each batch read them all before.
 */
async function boundStatesOf(store: BoundStates, items: readonly Boundable[]): Promise<Map<string, CounterState>> {
  const states = store.recentBoundStates([...new Set(items.flatMap((i) => i.counters))]);
  const again = undecided(items, states);
  if (again.size === 0) return states;
  const read = await store.boundStates([...again]);
  for (const id of again) {
    const s = read.get(id);
    if (s) states.set(id, s);
    else states.delete(id);
  }
  return states;
}
