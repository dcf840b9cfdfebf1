import { rpcError } from "@meter/lib/errors";
import { calendarMonth } from "@meter/rules";
import type { KnownUser } from "../adapters/plans.ts";
import type { IngestionDeps } from "../deps.ts";
import { applyCounterBounds, MAX_COUNTER_TOKENS, OTHER_MODELS } from "../domain/counter-bounds.ts";
import { counterStates } from "../store/counter-state.ts";
import { monthCounterId } from "../domain/counter-ids.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";

/** The registered user, or NOT_FOUND (users of other products are not visible). */
export async function requireUser(deps: IngestionDeps, productId: string, userId: string): Promise<KnownUser> {
  if (!userId) throw rpcError.invalid("user_id is required");
  const user = (await deps.users.resolve(productId, [userId])).get(userId);
  if (!user) throw rpcError.notFound(`user "${userId}" not found`);
  return user;
}

export function checkBatchSize(deps: IngestionDeps, count: number): void {
  if (count > deps.limits.maxBatchEvents) {
    throw rpcError.tooLarge(
      `batch of ${count} events is larger than the ${deps.limits.maxBatchEvents} accepted; split it into smaller batches`,
    );
  }
}

/** Collects every problem of a batch as "events[i].field: message" before refusing it whole. */
export class BatchProblems {
  private readonly list: string[] = [];
  add(index: number, field: string, message: string): void {
    if (this.list.length < 50) this.list.push(`events[${index}].${field} ${message}`);
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw rpcError.invalid(`batch refused: ${this.list.join("; ")}`);
  }
}

const MAX_ID = 128;
const MAX_USER_ID = 255;

export function checkIds(problems: BatchProblems, i: number, e: { id: string; userId: string; timestamp?: unknown }) {
  if (!e.id || e.id.length > MAX_ID) problems.add(i, "id", `must be 1-${MAX_ID} characters`);
  if (!e.userId || e.userId.length > MAX_USER_ID) problems.add(i, "user_id", `must be 1-${MAX_USER_ID} characters`);
  if (!e.timestamp) problems.add(i, "timestamp", "is required");
}

export function nonNegative(problems: BatchProblems, i: number, fields: Record<string, number>) {
  for (const [name, value] of Object.entries(fields)) {
    if (!Number.isFinite(value) || value < 0) problems.add(i, name, "must be a finite number >= 0");
  }
}

/** Token counts of an event up to their bounds (`@meter/lib/event-bounds`), as the gateway's schemas. */
export function tokensWithin(problems: BatchProblems, i: number, fields: Record<string, [bigint, number]>) {
  for (const [name, [value, max]] of Object.entries(fields)) {
    if (value < 0n || value > BigInt(max)) problems.add(i, name, `must be a whole number of tokens from 0 to ${max}`);
  }
}

/** The counters an event is added to: its period's, and its calendar month's when that is another. */
function countersOf(d: UsageEventDoc): string[] {
  const month = calendarMonth(d.timestamp).start;
  return month.getTime() === d.period_start.getTime() ? [d.counter_id] : [d.counter_id, monthCounterId(d.product_id, d.user_id, month)];
}

/**
 * The counter bounds (domain/counter-bounds.ts), before anything is stored: an event that
 * would take a counter's tokens past MAX_COUNTER_TOKENS refuses the batch (422, each such
 * event named by `path`); a model past the counter's MAX_COUNTER_MODELS is counted as
 * OTHER_MODELS (`counted_model`). One read of the counters the events go to.
 */
export async function boundCounters(
  deps: IngestionDeps,
  docs: UsageEventDoc[],
  users: ReadonlyMap<string, KnownUser>,
  path: (doc: UsageEventDoc) => string,
): Promise<void> {
  const items = docs.map((doc) => ({
    doc,
    model: doc.model,
    total_tokens: doc.total_tokens,
    counters: countersOf(doc),
    capped: doc.model !== null && capsModel(users.get(doc.user_id), doc.model),
  }));
  const state = await counterStates(deps.counters.counters, [...new Set(items.flatMap((i) => i.counters))]);
  const { folded, refused } = applyCounterBounds(items, state);
  if (refused.length > 0) {
    throw rpcError.invalidFields(
      refused.map(({ event, tokens }) => ({
        path: path(event.doc),
        message: `would take user "${event.doc.user_id}"'s token count (${tokens}) past ${MAX_COUNTER_TOKENS}, the most one billing period or month counts`,
      })),
    );
  }
  for (const f of folded) f.doc.counted_model = OTHER_MODELS;
  if (folded.length > 0) deps.logger.warn({ productId: docs[0]!.product_id, events: folded.length }, `events counted under "${OTHER_MODELS}": their users' counters name the most models kept apart`);
}

function capsModel(user: KnownUser | undefined, model: string): boolean {
  for (const plan of user?.plans.values() ?? []) if (Object.hasOwn(plan.modelLimits, model)) return true;
  return false;
}

/** Splits a batch into first occurrences and the count of repeated ids within it. */
export function firstOccurrences<T extends { id: string }>(events: readonly T[]): { unique: T[]; repeated: number } {
  const seen = new Set<string>();
  const unique: T[] = [];
  for (const e of events) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    unique.push(e);
  }
  return { unique, repeated: events.length - unique.length };
}
