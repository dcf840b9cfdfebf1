import createClient from "openapi-fetch";
import type { paths } from "./schema.ts";
import type { Dimension } from "../limits.ts";

/** The product's key lives in this tab only (sessionStorage): never localStorage, never a URL. */
const KEY_SLOT = "meter.console.key";

export const keyStore = {
  get: (): string | null => sessionStorage.getItem(KEY_SLOT),
  set: (key: string) => sessionStorage.setItem(KEY_SLOT, key),
  clear: () => sessionStorage.removeItem(KEY_SLOT),
};

export interface Issue {
  location: string;
  path: string;
  message: string;
}

/** A refused request: its status, the API's `detail` and, for 400/422, its `issues`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    detail: string,
    readonly issues: Issue[] = [],
  ) {
    super(detail);
  }
  get unavailable() {
    return this.status === 503 || this.status === 0;
  }
}

/**
 * Called when the API refuses the key (401): the app forgets it and returns to sign-in. A
 * refusal before the app set its handler (a screen's first reads leave before it renders) is
 * kept and handed to the handler when it is set.
 */
let refusedEarly: string | null = null;
let onUnauthorized: (message: string) => void = (message) => {
  refusedEarly = message;
};
export const setUnauthorizedHandler = (fn: (message: string) => void) => {
  onUnauthorized = fn;
  if (refusedEarly !== null) fn(refusedEarly);
  refusedEarly = null;
};

/**
 * The tab's key on every call. A fetch of its own rather than a middleware: openapi-fetch
 * awaits middlewares before it calls fetch, so a call made while the app's script is still
 * evaluating would leave only once the script has run; this way it leaves at once.
 */
const authorizedFetch = (request: Request) => {
  const key = keyStore.get();
  if (key && !request.headers.has("authorization")) request.headers.set("authorization", `Bearer ${key}`);
  return fetch(request);
};

export const api = createClient<paths>({ baseUrl: `${location.origin}`, fetch: authorizedFetch });

/** Unwraps an openapi-fetch answer: the data and its status (201 new, 200 a repeat), or an ApiError (a 401 also signs out). */
export async function answer<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<{ data: T; status: number }> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch {
    // Said of reads and of saves alike: a save is not sent again by itself, so no "retrying" here.
    throw new ApiError(0, "the service cannot be reached; try again when it answers");
  }
  const { data, error, response } = result;
  if (response.ok) return { data: data as T, status: response.status };
  const body = (error ?? {}) as { detail?: string; issues?: Issue[] };
  const err = new ApiError(response.status, body.detail ?? response.statusText, body.issues ?? []);
  if (response.status === 401) onUnauthorized(`Your key was refused (${body.detail ?? "401"}). Sign in again.`);
  return Promise.reject(err);
}

/** The data of an answer (see `answer`). */
export const ok = async <T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> => (await answer(call)).data;

export type Plan = PlanResponse;
type PlanResponse = paths["/api/v1/config/plans"]["get"]["responses"][200]["content"]["application/json"]["plans"][number];
export type PlanInput = paths["/api/v1/config/plans"]["post"]["requestBody"]["content"]["application/json"]["plans"][number];
export type User = paths["/api/v1/users/{user_id}"]["get"]["responses"][200]["content"]["application/json"];
export type Team = paths["/api/v1/teams/{team_id}"]["get"]["responses"][200]["content"]["application/json"];
export type Session = paths["/api/v1/users/{user_id}/session"]["get"]["responses"][200]["content"]["application/json"];
/** A user's or a team's usage by model (GET /users/{user_id}/usage, GET /teams/{team_id}/usage: one shape but the owner's id). */
export type Usage = Omit<paths["/api/v1/users/{user_id}/usage"]["get"]["responses"][200]["content"]["application/json"], "user_id">;
export type GateEvent = paths["/api/v1/users/{user_id}/gate-events"]["get"]["responses"][200]["content"]["application/json"]["events"][number];
export type Endpoint = paths["/api/v1/webhooks/endpoints"]["get"]["responses"][200]["content"]["application/json"][number];
export type Delivery = paths["/api/v1/webhooks/endpoints/{id}/deliveries"]["get"]["responses"][200]["content"]["application/json"]["deliveries"][number];
export type Credits = paths["/api/v1/users/{user_id}/credits"]["get"]["responses"][200]["content"]["application/json"];
export type CreditGrant = Credits["grants"][number];
export type LedgerEntry = paths["/api/v1/users/{user_id}/credits/ledger"]["get"]["responses"][200]["content"]["application/json"]["entries"][number];
export type ApiKey = paths["/api/v1/keys"]["get"]["responses"][200]["content"]["application/json"]["keys"][number];

/**
 * Every dimension of a user (`GET /users/{user_id}/limits`, BUDGETS.md §2). The document types
 * metric and window as strings; their values are the contract's (Dimension).
 */
export const getLimits = (userId: string) => ok(api.GET("/api/v1/users/{user_id}/limits", { params: { path: { user_id: userId } } })) as Promise<{ user_id: string; limits: Dimension[] }>;

/** The team-scope dimensions of a team (`GET /teams/{team_id}/limits`), typed as a user's (Dimension). */
export const getTeamLimits = (teamId: string) => ok(api.GET("/api/v1/teams/{team_id}/limits", { params: { path: { team_id: teamId } } })) as Promise<{ team_id: string; limits: Dimension[] }>;

/** `fn` over `items` with at most `concurrency` requests in flight at once, results in `items`' order. */
export async function mapLimited<T, R>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}
