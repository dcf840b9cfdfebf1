/**
 * Input checks of the public API. They throw a TypeError (a MeterTypeError) at the call site: a wrong argument is
 * a bug to fix, and an event the service would refuse must not be queued.
 */
import { MeterTypeError } from "./errors.ts";
import { MAX_EVENT_TOKENS, METADATA_MAX_DEPTH, externalIdProblem, jsonDepth } from "./rules/index.ts";
import type { ManualInput, UsageInput } from "./types.ts";

/**
 * Whether `s` has at most `max` characters as the service counts them (code points: an emoji is
 * one, where `length` says two). `length` is never less, so it decides alone when within `max`.
 */
export function withinChars(s: string, max: number): boolean {
  if (s.length <= max) return true;
  if (s.length > 2 * max) return false;
  let n = 0;
  for (const _ of s) if (++n > max) return false;
  return true;
}

export function checkUser(userId: unknown): void {
  if (typeof userId !== "string" || userId.length === 0 || !withinChars(userId, 255)) {
    throw new MeterTypeError("userId must be a string of 1 to 255 characters (the product's external_user_id)");
  }
  const problem = externalIdProblem(userId);
  if (problem) throw new MeterTypeError(`userId ${problem} (the service refuses such an external_user_id)`);
}

/** A portal token's lifetime: whole seconds, 60 to 86,400 (the service's bounds). */
export function checkPortalTtl(ttlSeconds: unknown): void {
  if (ttlSeconds !== undefined && !(Number.isSafeInteger(ttlSeconds) && (ttlSeconds as number) >= 60 && (ttlSeconds as number) <= 86_400)) {
    throw new MeterTypeError("ttlSeconds must be an integer of 60 to 86,400");
  }
}

/** A token count of one event: the service refuses more than MAX_EVENT_TOKENS. */
function count(name: string, v: unknown): void {
  if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= MAX_EVENT_TOKENS)) {
    throw new MeterTypeError(`${name} must be an integer of 0 to ${MAX_EVENT_TOKENS.toLocaleString("en-US")}`);
  }
}

function strings(name: string, v: unknown): void {
  if (v !== undefined && !(Array.isArray(v) && v.every((s) => typeof s === "string" && withinChars(s, 255)))) {
    throw new MeterTypeError(`${name} must be an array of strings`);
  }
}

function object(name: string, v: unknown): void {
  if (v !== undefined && (v === null || typeof v !== "object" || Array.isArray(v))) throw new MeterTypeError(`${name} must be an object`);
}

/**
 * Checked when the event is recorded, not when its batch is sent: a value JSON cannot carry (a
 * BigInt, a cycle) would otherwise fail the batch of every event queued with it, again and again.
 */
function json(name: string, v: unknown): void {
  if (v === undefined) return;
  try {
    JSON.stringify(v);
  } catch (err) {
    throw new MeterTypeError(`${name} must hold only JSON values: ${(err as Error).message}`);
  }
}

function optionalString(name: string, v: unknown): void {
  if (v !== undefined && v !== null && (typeof v !== "string" || !withinChars(v, 255))) throw new MeterTypeError(`${name} must be a string of at most 255 characters`);
}

/** Metadata where an event takes it: record, guard and reserve (a gate event's, a commit's), a wrapper's options. */
export function checkMetadata(metadata: unknown, name = "metadata"): void {
  object(name, metadata);
  json(name, metadata);
  if (metadata !== undefined && jsonDepth(metadata, METADATA_MAX_DEPTH) > METADATA_MAX_DEPTH) {
    throw new MeterTypeError(`${name} must not nest deeper than ${METADATA_MAX_DEPTH} levels (itself the first)`);
  }
}

/**
 * A queued event's own copy of metadata that checkMetadata passed: what the caller (or a callback)
 * changes afterwards is not sent, so every resend of the event carries what it carried first.
 */
export function ownMetadata(metadata: Record<string, unknown> | undefined): Record<string, unknown> {
  if (metadata === undefined || metadata === null) return {};
  for (const _ in metadata) return JSON.parse(JSON.stringify(metadata)) as Record<string, unknown>;
  return {};
}

export function checkUsage(u: UsageInput & { session_id?: unknown; model?: unknown }): void {
  if (u === null || typeof u !== "object") throw new MeterTypeError("usage must be an object");
  count("input_tokens", u.input_tokens);
  count("output_tokens", u.output_tokens);
  strings("tool_calls", u.tool_calls);
  checkMetadata(u.metadata);
  checkNames(u);
}

/** A call's session and model as an event carries them: the service refuses more than 255 characters. */
export function checkNames(u: { session_id?: unknown; model?: unknown }, prefix = ""): void {
  optionalString(`${prefix}session_id`, u.session_id);
  optionalString(`${prefix}model`, u.model);
}

export function checkManual(m: ManualInput): void {
  checkUsage(m);
  if (m.cost !== undefined && m.cost !== null && !(Number.isFinite(m.cost) && m.cost >= 0)) throw new MeterTypeError("cost must be a non-negative number");
  if (m.description !== undefined && m.description !== null && typeof m.description !== "string") throw new MeterTypeError("description must be a string");
  // An empty key would dedupe nothing (the service refuses it): a caller's key that came out empty is a bug to see.
  if (m.idempotency_key !== undefined && m.idempotency_key !== null && (typeof m.idempotency_key !== "string" || m.idempotency_key.length === 0 || !withinChars(m.idempotency_key, 255))) {
    throw new MeterTypeError("idempotency_key must be a string of 1 to 255 characters");
  }
}

export function positiveInt(name: string, v: number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (!Number.isSafeInteger(v) || v <= 0) throw new MeterTypeError(`Meter: ${name} must be a positive integer, got ${v}`);
  return v;
}

/** Longest timer Node keeps (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A duration option in milliseconds: a positive integer a timer can hold. */
export function durationMs(name: string, v: number | undefined, fallback: number): number {
  const ms = positiveInt(name, v, fallback);
  if (ms > MAX_TIMER_MS) throw new MeterTypeError(`Meter: ${name} must be at most ${MAX_TIMER_MS} ms (about 24.8 days; a longer timer fires at once), got ${ms}`);
  return ms;
}

/** A call's own time limit (flush, shutdown): milliseconds, 0 or more; NaN would make every request's deadline fail. */
export function callTimeoutMs(name: string, v: number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !(v >= 0) || v > MAX_TIMER_MS) throw new MeterTypeError(`${name}: timeoutMs must be a number of milliseconds from 0 to ${MAX_TIMER_MS}, got ${String(v)}`);
  return v;
}

/** A yes/no option: a boolean, not a string from the environment ("false" is truthy). */
export function flag(name: string, v: boolean | undefined, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== "boolean") throw new MeterTypeError(`Meter: ${name} must be true or false, got ${JSON.stringify(v)}${typeof v === "string" ? ` (a string: parse it, e.g. process.env.X === "true")` : ""}`);
  return v;
}
