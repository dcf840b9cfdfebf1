import { encodeKey } from "./field-keys.ts";

/**
 * A counter's tokens (one user and period, or calendar month) never pass this: an event that
 * would take one past it is refused (422) before anything of its batch is stored. Batches
 * checked at the same time may together pass it by what they carry (at most 10,000 events of
 * MAX_EVENT_TOTAL_TOKENS each), which stays far below 2^53, where counts stop being exact.
 */
export const MAX_COUNTER_TOKENS = 1e15;

/**
 * Distinct models one counter files tokens and cost under. Every model is a field of the
 * counter document, which every later update of that user rewrites: 10,000 of them made each
 * event of the user take seconds and held the database's writer meanwhile. Beyond the bound,
 * a new model is counted under OTHER_MODELS (totals stay exact; only the breakdown folds),
 * unless one of the user's plans caps it (model_limits): caps read the model's own figure.
 */
export const MAX_COUNTER_MODELS = 200;
export const OTHER_MODELS = "other";

/** What a bound check needs of a counter as stored (field-key encoded model names). */
export interface CounterState {
  tokens: number;
  models: Set<string>;
}

/**
 * How long a counter's state as read stands in for a read (ms). Others may have added to the
 * counter meanwhile; undecided() sends back to the database whatever that could change.
 */
export const BOUND_STATE_MS = 5_000;

/** What a bound check needs of an event about to be stored. */
export interface Boundable {
  model: string | null;
  total_tokens: number;
  /** The counters it is added to: its period's, and its month's when that is another. */
  counters: string[];
  /** One of the user's plans caps this model's tokens: never folded. */
  capped: boolean;
}

export interface BoundResult<E> {
  /** Events whose model is counted as OTHER_MODELS. */
  folded: E[];
  /** Events that would take a counter past MAX_COUNTER_TOKENS, with the counter's figure. */
  refused: { event: E; tokens: number }[];
}

/**
 * Applies both bounds to a batch in order, each event against the counters as the events
 * before it leave them (in `state`, changed in place). One pass: linear in the batch.
 */
export function applyCounterBounds<E extends Boundable>(events: readonly E[], state: Map<string, CounterState>): BoundResult<E> {
  const out: BoundResult<E> = { folded: [], refused: [] };
  const of = (id: string) => {
    let s = state.get(id);
    if (!s) state.set(id, (s = { tokens: 0, models: new Set() }));
    return s;
  };
  for (const e of events) {
    const counters = e.counters.map(of);
    const fullest = Math.max(...counters.map((c) => c.tokens));
    if (fullest + e.total_tokens > MAX_COUNTER_TOKENS) {
      out.refused.push({ event: e, tokens: fullest });
      continue;
    }
    for (const c of counters) c.tokens += e.total_tokens;
    if (e.model === null) continue;
    const key = encodeKey(e.model);
    const fold = !e.capped && counters.some((c) => !c.models.has(key) && c.models.size >= MAX_COUNTER_MODELS);
    if (fold) out.folded.push(e);
    for (const c of counters) c.models.add(fold ? OTHER_MODELS : key);
  }
  return out;
}

/**
 * The counters among the events' that `known` (states read at most BOUND_STATE_MS ago) cannot
 * decide for this batch, to be read again: one not known; one an uncapped event names a model
 * of that the state does not hold (others may have filled the counter's models since: a model
 * a counter holds stays); one the batch would take past half MAX_COUNTER_TOKENS from the
 * state's figure. Below that, what others add within BOUND_STATE_MS decides nothing: it would
 * take millions of events a second into one counter (a user's or a team's) to carry it from
 * half the bound past 2^53, where counts stop being exact.
 */
export function undecided(events: readonly Boundable[], known: ReadonlyMap<string, CounterState>): Set<string> {
  const out = new Set<string>();
  const added = new Map<string, number>();
  for (const e of events) {
    const key = e.model === null || e.capped ? null : encodeKey(e.model);
    for (const id of e.counters) {
      const s = known.get(id);
      if (!s || (key !== null && !s.models.has(key))) out.add(id);
      added.set(id, (added.get(id) ?? 0) + e.total_tokens);
    }
  }
  for (const [id, tokens] of added) {
    if ((known.get(id)?.tokens ?? 0) + tokens > MAX_COUNTER_TOKENS / 2) out.add(id);
  }
  return out;
}
