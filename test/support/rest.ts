// What tests of the REST API do again and again: check a status, make usage and gate events,
// send a batch, set up a user on a plan. Each throws with the status and body when the API refuses.
import { randomUUID } from "node:crypto";
import type { Api, ApiResponse } from "./http.ts";

/** The body of the response, or an error naming the status and body when it is not `status`. */
export async function must<T = any>(res: Promise<ApiResponse<T>>, status: number): Promise<T> {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A usage event as POST /events/batch takes it: `cost_total` dollars now on gpt-4o, 10 tokens in and 5 out, unless `fields` say otherwise. */
export function usageJson(user: string, cost: number, fields: Record<string, unknown> = {}): Record<string, any> {
  return { id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "gpt-4o", input_tokens: 10, output_tokens: 5, cost_total: cost, ...fields };
}

/** Usage of `tokens` input tokens on `model` costing `cost`, all of it for tokens. */
export const tokenUsageJson = (user: string, model: string, cost: number, tokens: number) =>
  usageJson(user, cost, { model, input_tokens: tokens, output_tokens: 0, total_tokens: tokens, cost_tokens: cost });

/** A gate event as POST /gate-events/batch takes it, now: a soft gate of total_spend at 80% ($8 of $10), unless `fields` say otherwise. */
export function gateEventJson(user: string, fields: Record<string, unknown> = {}): Record<string, any> {
  return { id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), status: "soft_gate", gate_reason: "total_spend", usage_pct: 0.8, current_value: 8, limit_value: 10, ...fields };
}

/** Sends a batch of events; its answer, once accepted (200, or 202 while in flight). */
export async function sendEvents(api: Api, events: object[]): Promise<any> {
  const res = await api.post("/events/batch", events);
  if (res.status !== 200 && res.status !== 202) throw new Error(`the batch was refused: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A new user subscribed to a new plan (`plan`'s fields) for `period` (the subscription's dates; none by default). */
export async function userOnPlan(api: Api, plan: object, period: object = {}): Promise<string> {
  const user = `u-${randomUUID().slice(0, 8)}`;
  const plans = await must(api.post("/config/plans", { plans: [{ name: `p-${randomUUID().slice(0, 8)}`, ...plan }] }), 201);
  await must(api.post("/users", { external_user_id: user }), 201);
  await must(api.post(`/users/${user}/subscription`, { plan_id: plans.plans[0].id, ...period }), 200);
  return user;
}

/** A new team (`teamId`, escaped in paths) subscribed to a new plan (`plan`'s fields) for `period`, with `members` (registered users) joined. */
export async function teamOnPlan(api: Api, plan: object, period: object, members: readonly string[] = [], teamId = `t-${randomUUID().slice(0, 8)}`): Promise<string> {
  const plans = await must(api.post("/config/plans", { plans: [{ name: `p-${randomUUID().slice(0, 8)}`, ...plan }] }), 201);
  await must(api.post("/teams", { external_team_id: teamId, name: "Acme" }), 201);
  await must(api.post(`/teams/${encodeURIComponent(teamId)}/subscription`, { plan_id: plans.plans[0].id, ...period }), 200);
  for (const m of members) await must(api.request("PUT", `/users/${encodeURIComponent(m)}/team`, { body: { team_id: teamId } }), 200);
  return teamId;
}

/** Sends a batch that must be stored whole: every event accepted, none a duplicate. */
export async function sendAllNew(api: Api, events: object[]): Promise<void> {
  const body = await sendEvents(api, events);
  if (body.accepted !== events.length || body.duplicates !== 0) throw new Error(`expected ${events.length} accepted and no duplicates, got ${JSON.stringify(body)}`);
}

/** Puts the user (registered first when it is not) in the team, or in none with null. */
export async function joinTeam(api: Api, userId: string, teamId: string | null): Promise<void> {
  const path = `/users/${encodeURIComponent(userId)}`;
  if ((await api.get(path)).status === 404) await must(api.post("/users", { external_user_id: userId }), 201);
  await must(api.request("PUT", `${path}/team`, { body: { team_id: teamId } }), 200);
}

/** A credit ledger entry as GET .../credits/ledger lists it. */
export interface LedgerEntry {
  type: string;
  amount: number;
  grant_id: string | null;
  [field: string]: any;
}

/** The credits of a user or a team (`owner`: `/users/<id>` or `/teams/<id>`, escaped). */
export function creditsOf(api: Api, owner: string): Promise<any> {
  return must(api.get(`${owner}/credits`), 200);
}

/** Every credit ledger entry of a user or a team (`owner` as for creditsOf), following the cursor `pageSize` entries a page. */
export async function ledgerOf(api: Api, owner: string, pageSize: number): Promise<LedgerEntry[]> {
  const entries: LedgerEntry[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await must(api.get(`${owner}/credits/ledger?limit=${pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`), 200);
    entries.push(...page.entries);
    cursor = page.next_cursor;
  } while (cursor);
  return entries;
}
