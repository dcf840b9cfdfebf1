/**
 * Bounds of what one event may carry, shared by the gateway's schemas, the ingestion service's own
 * checks and the client libraries, which refuse at the call site what the service would refuse
 * later (a queued event refused at delivery is lost).
 *
 * A usage event's token counts: Far above any model's context, and small enough that a user's counter
 * adds a million such events and stays an exact integer (2^53 is about 9 x 10^15).
 */
export const MAX_EVENT_TOKENS = 1_000_000_000;

/** total_tokens defaults to input_tokens + output_tokens, so it may be as large as both. */
export const MAX_EVENT_TOTAL_TOKENS = 2 * MAX_EVENT_TOKENS;

/**
 * Largest figure of a gate event (usage_pct, current_value, limit_value): far above any real
 * one (a counter stays below 2^53, about 9 x 10^15), and far below where rounding it to
 * nano-dollars or millionths overflows to Infinity, which JSON cannot carry.
 */
export const MAX_GATE_FIGURE = 1e15;

/** Levels a free-form object (an event's metadata) may nest, itself the first: protobuf Structs refuse deeper. */
export const METADATA_MAX_DEPTH = 16;

/**
 * How deep a JSON value nests (a scalar is 0, `{}` and `[]` are 1), counted no further than
 * past `limit`. Walked with a stack of its own: a body nested a million levels deep (JSON.parse
 * takes it) must get a 422, not exhaust the call stack into a 500.
 */
export function jsonDepth(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [v, depth] = pending.pop()!;
    if (v === null || typeof v !== "object") continue;
    deepest = Math.max(deepest, depth);
    if (deepest > limit) break;
    for (const child of Object.values(v)) pending.push([child, depth + 1]);
  }
  return deepest;
}

/** A lone UTF-16 surrogate: stored as UTF-8 it becomes U+FFFD, so two distinct ids would name one user. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Why an external user (or team) id is refused beyond its length, or null: "." and ".." cannot be
 * a URL path segment (clients resolve them), so such a user could never be read under /users/{id}.
 */
export function externalIdProblem(id: string): string | null {
  if (id === "." || id === "..") return 'must not be "." or ".."';
  if (LONE_SURROGATE.test(id)) return "must not contain unpaired surrogates (U+D800-U+DFFF)";
  return null;
}
