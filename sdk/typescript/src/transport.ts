/** The REST API under /api/v1, over the platform's fetch. */
import { MeterApiError, MeterAuthenticationError, MeterNetworkError } from "./errors.ts";
import type { SessionView } from "./types.ts";

export const VERSION = "0.1.0";

/** GET /config/changes: the product's change marker and what changed after `since`. */
export interface Changes {
  marker: number;
  all: boolean;
  plan_ids: string[];
  user_ids: string[];
  /** Teams whose subscription was set (external team ids); absent from services before teams. */
  team_ids?: string[];
}

/**
 * What a health check found: ok, degraded (answers, database unreachable), not_found (nothing
 * of the API at that address), refused (nothing listens there), timeout (no answer in time),
 * unreachable (any other failure: a 5xx, a reset, an unknown host).
 */
export type Health = "ok" | "degraded" | "not_found" | "refused" | "timeout" | "unreachable";

export class Transport {
  readonly base: string;
  /** False after a request found the service unreachable, until one succeeds. */
  reachable = true;
  /**
   * True once the Meter API itself answered here (a 2xx, or its /health): until then a 404 may be
   * a wrong address's (a proxy or another service answers 404 to every path), not "no such user".
   */
  apiSeen = false;

  constructor(
    baseURL: string,
    private readonly apiKey: string,
    /** A request's own timeout, unless the caller gives a shorter one. */
    readonly timeoutMs: number,
  ) {
    this.base = baseURL.replace(/\/+$/, "");
  }

  /** Resolves with the parsed body of a 2xx; rejects with MeterApiError or MeterNetworkError. */
  async request<T>(method: string, path: string, body?: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.base + path, {
        method,
        headers: {
          authorization: `Bearer ${this.apiKey}`,
          accept: "application/json",
          "user-agent": `meterline-typescript/${VERSION}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        // Whole milliseconds: AbortSignal.timeout refuses a fraction (deadlines are performance.now()'s).
        signal: AbortSignal.timeout(Math.max(1, Math.ceil(timeoutMs))),
      });
      text = await res.text();
    } catch (err) {
      this.reachable = false;
      throw new MeterNetworkError(`meter service unreachable: ${failure(err, this.base + path)}`, { cause: err });
    }
    this.reachable = res.status < 500;
    const parsed = text ? safeJson(text) : undefined;
    if (res.ok) this.apiSeen = true;
    if (!res.ok) {
      const raw = (parsed as { detail?: unknown } | undefined)?.detail;
      const detail = typeof raw === "string" ? raw : res.statusText;
      if (res.status === 401 || res.status === 403) throw new MeterAuthenticationError(res.status, detail);
      throw new MeterApiError(res.status, detail, retryAfter(res.headers.get("retry-after")));
    }
    return parsed as T;
  }

  #apiCheck: Promise<Health> | undefined;

  /**
   * What answers at the base: the API ("ok") once it did, else what its /health says, one
   * question at a time (the 404s of many users' first loads share it).
   */
  whatAnswers(timeoutMs: number): Promise<Health> {
    if (this.apiSeen) return Promise.resolve("ok");
    return (this.#apiCheck ??= this.health(timeoutMs).finally(() => {
      this.#apiCheck = undefined;
    }));
  }

  getSession(userId: string, timeoutMs?: number): Promise<SessionView> {
    return this.request("GET", `/users/${encodeURIComponent(userId)}/session`, undefined, timeoutMs);
  }

  /** GET /config/changes (authenticated: start() checks the key with it). */
  changes(since: number | undefined, timeoutMs?: number): Promise<Changes> {
    return this.request("GET", since === undefined ? "/config/changes" : `/config/changes?since=${since}`, undefined, timeoutMs);
  }

  /** GET /health (no key needed; sending it does no harm). */
  async health(timeoutMs: number, base = this.base): Promise<Health> {
    try {
      const res = await fetch(`${base}/health`, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(timeoutMs) });
      const body = safeJson(await res.text()) as { status?: unknown } | undefined;
      // Something answers there, but not the API's health route: a wrong address.
      const status = body?.status;
      if (res.status === 404 || (res.ok && typeof status !== "string")) return "not_found";
      if (!res.ok) return "unreachable";
      if (base === this.base) this.apiSeen = true;
      return status === "ok" ? "ok" : "degraded";
    } catch (err) {
      return connectionRefused(err) ? "refused" : timedOut(err) ? "timeout" : "unreachable";
    }
  }
}

/** Nothing listens at the address (ECONNREFUSED), as opposed to a service too slow to answer. */
function connectionRefused(err: unknown): boolean {
  return (err as { cause?: { code?: unknown } }).cause?.code === "ECONNREFUSED";
}

function timedOut(err: unknown): boolean {
  return (err as Error).name === "TimeoutError";
}

/** What a failed request met, in words that say what to check. */
function failure(err: unknown, url: string): string {
  if (connectionRefused(err)) return `connection refused at ${url}: is the service running at that address?`;
  if (timedOut(err)) return `no answer from ${url} in time`;
  const cause = (err as { cause?: { message?: unknown } }).cause?.message;
  return `${(err as Error).message}${typeof cause === "string" ? ` (${cause})` : ""}`;
}

/**
 * The addresses the API may be at when nothing of it answers at `base`, most likely first: the
 * OpenAI habit `…/v1` for `…/api/v1`, the address with `/api/v1` added, the origin's `/api/v1`.
 */
export function likelyBases(base: string): string[] {
  const url = new URL(base);
  const out: string[] = [];
  const path = url.pathname.replace(/\/+$/, "");
  if (path.endsWith("/v1") && !path.endsWith("/api/v1")) out.push(base.replace(/\/v1$/, "/api/v1"));
  else if (path.endsWith("/api")) out.push(`${base}/v1`);
  else if (!path.endsWith("/api/v1")) out.push(`${base}/api/v1`);
  out.push(`${url.origin}/api/v1`);
  return [...new Set(out)].filter((b) => b !== base);
}

/**
 * What to check when nothing of the API answers at `base` (`found`: a likely address where it does):
 * that address, else the first likely one, else, for a base already of the API's form, the host.
 */
export function addressHint(base: string, found?: string): string {
  if (found) return `did you mean ${found}? The API answers there: set baseURL (or METER_BASE_URL) to that, the address up to and including /api/v1`;
  const likely = likelyBases(base)[0];
  if (likely) return `did you mean ${likely}? baseURL (or METER_BASE_URL) must be the service's address up to and including /api/v1, e.g. https://meter.example.com/api/v1`;
  return `something answers at ${new URL(base).origin} but not the Meter API: check the host and port of baseURL (or METER_BASE_URL), or the proxy in front of the service`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function retryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** True when the same request may succeed later: network errors, 429 and 5xx. */
export function retryable(err: unknown): boolean {
  return err instanceof MeterNetworkError || (err instanceof MeterApiError && err.retryable);
}

/** The shortest wait a Retry-After gives (ms). */
const MIN_RETRY_AFTER_MS = 250;

/**
 * Exponential backoff with jitter (0.5 s doubling up to 30 s), never shorter than Retry-After
 * (taken up to 60 s). A 429's Retry-After is the service's own estimate of when it has room, so
 * it is waited as given rather than doubled: a busy service is not left idle while its clients
 * sit out a grown backoff. Retry-After gets up to half of itself again, so that clients told
 * the same moment come back spread out.
 */
export function backoffMs(failures: number, err?: unknown): number {
  const base = Math.min(30_000, 500 * 2 ** Math.max(0, failures - 1));
  const delay = base * (0.5 + Math.random() / 2);
  const after = err instanceof MeterApiError ? err.retryAfterMs : undefined;
  if (after === undefined) return delay;
  // At least a quarter second: a Retry-After of 0 (a proxy's) must not make a busy service's clients spin.
  const hinted = Math.min(Math.max(after, MIN_RETRY_AFTER_MS), 60_000) * (1 + Math.random() / 2);
  return (err as MeterApiError).status === 429 ? hinted : Math.max(delay, hinted);
}
