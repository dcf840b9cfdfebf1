/** Products, plans, users and subscriptions set up through the REST API, as a product would. */
import { randomUUID } from "node:crypto";
import type { Api } from "../../../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../../../test/support/stack.ts";
import { suite, type Test } from "uvu";
import { Meter, type MeterOptions } from "../../src/index.ts";

export const DAY = 86_400_000;

/** A suite's context of a test stack with one product: its API (holding the key) and the key. */
export interface ProductCtx {
  stack: TestStack;
  api: Api;
  apiKey: string;
}

/** A suite's `before`: a test stack with one product, whose admin API and key the tests use. */
export async function startWithProduct(
  ctx: ProductCtx,
  name: string,
  options?: Parameters<typeof startTestStack>[0],
): Promise<void> {
  ctx.stack = await startTestStack(options);
  const product = await ctx.stack.newProduct(name);
  ctx.api = product.api;
  ctx.apiKey = product.apiKey;
}

/** A suite's `after`: shuts the suite's clients down, then the proxies in front of the stack, then the stack. */
export async function stopAll(stack: TestStack, meters: Meter[], proxies: { close(): Promise<unknown> }[], timeoutMs = 2_000): Promise<void> {
  for (const m of meters) await m.shutdown({ timeoutMs });
  for (const p of proxies) await p.close();
  await stack.close();
}

/** A suite's context of a product on a test stack, with the clients and proxies its tests made (closed after it). */
export interface StackCtx extends ProductCtx {
  meters: Meter[];
  proxies: { close(): Promise<unknown> }[];
}

/**
 * A suite on a test stack (started with `stack`) with one product named `product`; `before` and
 * `after` run after the stack starts and before it stops; the clients in `ctx.meters` shut down
 * within `timeoutMs`, then the proxies in `ctx.proxies` close, then the stack.
 */
export function stackSuite<Extra extends object = object>(
  title: string,
  product: string,
  opts: {
    stack?: Parameters<typeof startTestStack>[0];
    before?: (ctx: StackCtx & Extra) => unknown;
    after?: (ctx: StackCtx & Extra) => unknown;
    timeoutMs?: number;
  } = {},
): Test<StackCtx & Extra> {
  const t = suite<StackCtx & Extra>(title);
  t.before(async (ctx) => {
    ctx.meters = [];
    ctx.proxies = [];
    await startWithProduct(ctx, product, opts.stack);
    await opts.before?.(ctx);
  });
  t.after(async (ctx) => {
    await opts.after?.(ctx);
    await stopAll(ctx.stack, ctx.meters, ctx.proxies, opts.timeoutMs);
  });
  return t;
}

/** A client of the suite's product (on the stack unless `opts.baseURL`), shut down after the suite; warnings are dropped unless `opts.logger`. */
export function stackMeter(ctx: StackCtx, opts: MeterOptions = {}): Meter {
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, logger: { warn: () => undefined }, ...opts });
  ctx.meters.push(m);
  return m;
}

export async function createPlan(api: Api, plan: Record<string, unknown>): Promise<string> {
  const res = await api.post("/config/plans", { plans: [{ name: `p-${randomUUID()}`, ...plan }] });
  if (res.status !== 201) throw new Error(`creating a plan failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.plans[0].id;
}

/** A team subscribed to a plan of `fields`, with `members` (ids of registered users) joined. */
export async function createTeam(api: Api, fields: Record<string, unknown>, members: string[]): Promise<string> {
  return (await createTeamOnPlan(api, fields, members)).teamId;
}

/** The same, with the id of the team's plan (to change it). */
export async function createTeamOnPlan(api: Api, fields: Record<string, unknown>, members: string[]): Promise<{ teamId: string; planId: string }> {
  const teamId = `t-${randomUUID()}`;
  const created = await api.post("/teams", { external_team_id: teamId, name: "Acme" });
  if (created.status !== 201) throw new Error(`creating a team failed: ${created.status} ${JSON.stringify(created.body)}`);
  const planId = await createPlan(api, fields);
  const sub = await api.post(`/teams/${teamId}/subscription`, { plan_id: planId, period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() });
  if (sub.status !== 200) throw new Error(`subscribing the team failed: ${sub.status} ${JSON.stringify(sub.body)}`);
  for (const userId of members) {
    const joined = await api.request("PUT", `/users/${userId}/team`, { body: { team_id: teamId } });
    if (joined.status !== 200) throw new Error(`joining the team failed: ${joined.status} ${JSON.stringify(joined.body)}`);
  }
  return { teamId, planId };
}

/** A registered user on `plan` (none: no plan) with a period around now unless dates are given. */
export async function createUser(
  api: Api,
  plan?: Record<string, unknown>,
  period: { start?: Date; end?: Date } = {},
): Promise<string> {
  const userId = `u-${randomUUID()}`;
  const res = await api.post("/users", { external_user_id: userId });
  if (res.status !== 201) throw new Error(`creating a user failed: ${res.status}`);
  if (plan) await subscribe(api, userId, await createPlan(api, plan), period.start ?? new Date(Date.now() - DAY), period.end ?? new Date(Date.now() + 20 * DAY));
  return userId;
}

export async function subscribe(api: Api, userId: string, planId: string, start: Date, end: Date): Promise<void> {
  const res = await api.post(`/users/${userId}/subscription`, { plan_id: planId, period_start: start.toISOString(), period_end: end.toISOString() });
  if (res.status !== 200) throw new Error(`subscribing failed: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function usage(api: Api, userId: string): Promise<{ total_cost: number; total_tokens: number; tool_calls_count: number }> {
  const res = await api.get(`/users/${userId}/usage`);
  if (res.status !== 200) throw new Error(`usage failed: ${res.status}`);
  return res.body;
}

export async function gateEvents(api: Api, userId: string): Promise<any[]> {
  const res = await api.get(`/users/${userId}/gate-events`);
  if (res.status !== 200) throw new Error(`gate events failed: ${res.status}`);
  return res.body.events;
}

export const near = (a: number, b: number) => Math.abs(a - b) < 1e-9;

/** A logger that keeps what it is told. */
export function memoryLogger(): { warn(m: string): void; lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (m: string) => void lines.push(m) };
}

/** The error `fn` rejects with; fails when it resolves, or when the error does not match. */
export async function rejects(fn: () => unknown, expected?: RegExp | (new (...a: any[]) => Error)): Promise<Error> {
  let err: unknown;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  if (!(err instanceof Error)) throw new Error(`expected a rejection, got ${err === undefined ? "none" : String(err)}`);
  if (expected instanceof RegExp && !expected.test(err.message)) throw new Error(`expected an error matching ${expected}, got: ${err.message}`);
  const what = `${err.name}: ${err.message}`;
  if (typeof expected === "function" && !(err instanceof expected)) throw new Error(`expected a ${expected.name}, got ${what}`);
  return err;
}
