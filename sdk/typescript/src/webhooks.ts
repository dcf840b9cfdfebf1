/**
 * Verifying the service's webhook deliveries in the receiver. Needs only `crypto.subtle` and
 * `TextEncoder` (Node 20+, Deno, Bun, Cloudflare Workers, browsers), no dependency.
 */
import { MeterError, MeterTypeError } from "./errors.ts";

/** Why a delivery was refused. */
export type WebhookVerificationReason = "missing_header" | "bad_signature" | "too_old" | "malformed";

export class WebhookVerificationError extends MeterError {
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

export interface GateWebhookData {
  user_id: string;
  status: "soft_gate" | "hard_gate";
  gate_reason: string;
  usage_pct: number;
  current_value: number;
  limit_value: number;
  blocked: boolean;
  message: string | null;
  /** A hard gate of prepaid credits that ran out (BUDGETS.md §3): the balance and the plan's low mark. */
  credits?: { balance: number; low_at: number | null };
}

export interface ThresholdWebhookData {
  user_id: string;
  threshold_pct: 50 | 80 | 100;
  current_spend: number;
  spend_limit: number;
  plan_name: string;
  tokens_total: number;
  cost_by_model: Record<string, number>;
}

export interface SummaryWebhookData {
  summary_type: "daily" | "weekly" | "monthly";
  period_start: string;
  period_end: string;
  active_users: number;
  total_cost: number;
  total_tokens: number;
  total_events: number;
  soft_gates: number;
  hard_gates: number;
  top_users: { user_id: string; cost: number; tokens: number }[];
}

/**
 * `credits.low` (the balance fell below the plan's credits_low_at: charge and post a grant),
 * `credits.depleted` (it reached 0) and `credits.expired` (a grant expired with money left:
 * `grant_id`, `amount`), in dollars. A user's balance names the user (`user_id`), a team's shared
 * pool names the team (`team_id`, its external id) instead: check which before granting.
 */
export type CreditsWebhookData = CreditsWebhookFigures & ({ user_id: string; team_id?: never } | { team_id: string; user_id?: never });

/** What every credits event carries beside its owner. */
export interface CreditsWebhookFigures {
  balance: number;
  low_at: number | null;
  grant_id?: string;
  amount?: number;
}

/** The synthetic event of `POST /webhooks/endpoints/{id}/test`. */
export interface TestWebhookData {
  endpoint_id: string;
  message: string;
}

interface Envelope<T extends string, D> {
  /** `whevt_` + UUID; also `X-Service-Delivery`. The same for every attempt: deduplicate on it. */
  id: string;
  type: T;
  api_version: string;
  created_at: string;
  product_id: string;
  data: D;
}

export type GateWebhookEvent = Envelope<"gate_event.soft_gate" | "gate_event.hard_gate" | "gate_event.blocked", GateWebhookData>;
export type ThresholdWebhookEvent = Envelope<"usage.threshold.50" | "usage.threshold.80" | "usage.threshold.100", ThresholdWebhookData>;
export type SummaryWebhookEvent = Envelope<"usage.summary.daily" | "usage.summary.weekly" | "usage.summary.monthly", SummaryWebhookData>;
export type CreditsWebhookEvent = Envelope<"credits.low" | "credits.depleted" | "credits.expired", CreditsWebhookData>;
export type TestWebhookEvent = Envelope<"webhook.test", TestWebhookData>;
/** Every delivery's envelope, told apart by `type`. */
export type WebhookEvent = GateWebhookEvent | ThresholdWebhookEvent | SummaryWebhookEvent | CreditsWebhookEvent | TestWebhookEvent;

/** Headers as Fetch (`Headers`), Node (`req.headers`), Fastify or Express give them. */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /**
   * Largest difference, in seconds, between `X-Service-Timestamp` and now (either way, for
   * clocks that disagree). Default 300. Every attempt, retries included, is signed afresh.
   */
  toleranceSeconds?: number;
  /** The current time (tests). */
  now?: Date | number;
}

export const DEFAULT_TOLERANCE_SECONDS = 300;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === "function") return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    for (const key of Object.keys(record)) if (key.toLowerCase() === name) value = record[key];
  }
  return Array.isArray(value) ? value[0] : value;
}

const encoder = new TextEncoder();

function bytesOf(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === "string") return encoder.encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

const ENVELOPE_FIELDS = ["id", "type", "api_version", "created_at", "product_id"] as const;

/**
 * Checks a delivery and returns its envelope. `rawBody` must be the body exactly as received
 * (a re-serialised JSON object does not match the signature). `secret` may be a list: after a
 * rotation, the old and the new secret both verify until the receiver keeps only the new one.
 *
 * The signature (`X-Service-Signature: sha256=<hex>`) is HMAC-SHA256 with the endpoint's
 * secret over `<X-Service-Timestamp>.<raw body>`, compared in constant time (WebCrypto's
 * verify); then the timestamp must be within `toleranceSeconds` of now.
 *
 * @throws WebhookVerificationError with `reason` `missing_header`, `malformed`,
 *   `bad_signature` or `too_old`.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  // Mistakes at the call site, said before any header: an unset secret variable, a body parsed by the framework.
  if (secret === undefined || secret === null || (typeof secret !== "string" && !Array.isArray(secret))) {
    throw new MeterTypeError("verifyWebhook needs the endpoint's signing secret (a string, or a list during a rotation): is its variable set?");
  }
  if (typeof rawBody !== "string" && !(rawBody instanceof Uint8Array) && !(rawBody instanceof ArrayBuffer)) {
    throw new MeterTypeError("verifyWebhook needs the body exactly as received (a string or bytes), not parsed JSON: e.g. express.raw({ type: \"application/json\" }) on this route");
  }
  const signature = header(headers, "x-service-signature");
  const timestamp = header(headers, "x-service-timestamp");
  if (!signature) throw new WebhookVerificationError("missing_header", "X-Service-Signature header is missing");
  if (!timestamp) throw new WebhookVerificationError("missing_header", "X-Service-Timestamp header is missing");
  const sig = /^sha256=([0-9a-fA-F]{64})$/.exec(signature.trim());
  if (!sig) throw new WebhookVerificationError("malformed", "X-Service-Signature is not sha256=<64 hex digits>");
  if (!/^\d{1,12}$/.test(timestamp.trim())) throw new WebhookVerificationError("malformed", "X-Service-Timestamp is not Unix seconds");
  const secrets = (typeof secret === "string" ? [secret] : [...secret]).filter((s) => s.length > 0);
  if (secrets.length === 0) throw new MeterTypeError("verifyWebhook needs the endpoint's signing secret");

  const body = bytesOf(rawBody);
  const prefix = encoder.encode(`${timestamp.trim()}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  const expected = hexBytes(sig[1]!);
  let valid = false;
  for (const s of secrets) {
    const key = await crypto.subtle.importKey("raw", encoder.encode(s), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    if (await crypto.subtle.verify("HMAC", key, expected, signed)) valid = true;
  }
  if (!valid) throw new WebhookVerificationError("bad_signature", "the signature does not match the body and the secret");

  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now : options.now.getTime();
  const age = Math.floor(now / 1000) - Number(timestamp.trim());
  if (Math.abs(age) > tolerance) {
    throw new WebhookVerificationError("too_old", `the delivery was signed ${age} s ago; at most ${tolerance} s is accepted`);
  }

  let envelope: unknown;
  try {
    envelope = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new WebhookVerificationError("malformed", "the body is not JSON");
  }
  const e = envelope as Record<string, unknown> | null;
  if (!e || typeof e !== "object" || ENVELOPE_FIELDS.some((f) => typeof e[f] !== "string") || typeof e.data !== "object" || e.data === null) {
    throw new WebhookVerificationError("malformed", "the body is not a webhook envelope");
  }
  return envelope as WebhookEvent;
}
