/**
 * Bounds of one usage event's token counts, shared by the gateway's schemas and the ingestion
 * service's own checks. Far above any model's context, and small enough that a user's counter
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
