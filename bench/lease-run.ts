// Drives budget-lease runs: N replica processes (bench/lease-replica.ts) against one user's
// cap on a running stack. Shared by gateway/routes/leases.test.ts, sdk/typescript/test/leases.test.ts and bench/leases.ts.
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { Api } from "../test/support/http.ts";
import { repoRoot, spawnEntry } from "../test/support/processes.ts";

const DAY = 86_400_000;

/** Dollars per call: estimate 1000 in + 1000 buffer at $1/1K = $2; the call really costs 1000 in + 500 out = $1.5. */
export const CALL_ESTIMATE = 2;
export const CALL_COST = 1.5;

/** Tokens per call: the estimate (1000 in + 1000 buffer) and what a call really uses (1000 in + 500 out). */
export const CALL_TOKENS_ESTIMATE = 2_000;
export const CALL_TOKENS = 1_500;

/**
 * A user subscribed to a plan with a period spend cap (null: none) and pre-call estimates
 * covering each call; `modelTokens` caps the tokens of model "m" per period too.
 */
export async function cappedUser(api: Api, cap: number | null, modelTokens?: number): Promise<string> {
  return (await cappedUserPlan(api, cap, modelTokens)).userId;
}

/** cappedUser(), and the id of its plan (to change the caps). */
export async function cappedUserPlan(api: Api, cap: number | null, modelTokens?: number): Promise<{ userId: string; planId: string }> {
  const plan = await api.post("/config/plans", {
    plans: [
      {
        name: `lease-${randomUUID()}`,
        max_spend_per_period: cap,
        ...(modelTokens === undefined ? {} : { model_limits: { m: { max_tokens_per_period: modelTokens } } }),
        cost_rates: { m: { input: 1, output: 1 } },
        pre_call_estimate: true,
        pre_call_buffer_tokens: 1000,
      },
    ],
  });
  const planId: string = plan.body.plans[0].id;
  return { userId: await subscribedUser(api, planId), planId };
}

/** A new user on `planId`, for dates from yesterday to 20 days on; its id. */
export async function subscribedUser(api: Api, planId: string): Promise<string> {
  const id = `u-${randomUUID()}`;
  await api.post("/users", { external_user_id: id });
  const sub = await api.post(`/users/${id}/subscription`, {
    plan_id: planId,
    period_start: new Date(Date.now() - DAY).toISOString(),
    period_end: new Date(Date.now() + 20 * DAY).toISOString(),
  });
  if (sub.status !== 200) throw new Error(`subscription failed: ${JSON.stringify(sub.body)}`);
  return id;
}

/**
 * `members` users on a plan capping nothing (cappedUser's rates and estimates), members of a team
 * whose plan caps its period spend at `cap`: only the team's cap stops their calls.
 */
export async function cappedTeam(api: Api, cap: number, members: number): Promise<{ id: string; members: string[] }> {
  const ids = await Promise.all(Array.from({ length: members }, () => cappedUser(api, null)));
  const plan = await api.post("/config/plans", { plans: [{ name: `lease-team-${randomUUID()}`, max_spend_per_period: cap, cost_rates: { m: { input: 1, output: 1 } } }] });
  const id = `t-${randomUUID()}`;
  await api.post("/teams", { external_team_id: id, name: id });
  const sub = await api.post(`/teams/${id}/subscription`, {
    plan_id: plan.body.plans[0].id,
    period_start: new Date(Date.now() - DAY).toISOString(),
    period_end: new Date(Date.now() + 20 * DAY).toISOString(),
  });
  if (sub.status !== 200) throw new Error(`team subscription failed: ${JSON.stringify(sub.body)}`);
  for (const u of ids) {
    const joined = await api.request("PUT", `/users/${u}/team`, { body: { team_id: id } });
    if (joined.status !== 200) throw new Error(`joining the team failed: ${JSON.stringify(joined.body)}`);
  }
  return { id, members: ids };
}

/**
 * A user subscribed to a plan with `limits` (BUDGETS.md §2) and no period caps, pre-call
 * estimates covering each call, model "m" at `rate` dollars per 1K tokens (in and out).
 */
export async function windowedUser(api: Api, limits: Record<string, unknown>[], rate = 1): Promise<string> {
  const plan = await api.post("/config/plans", {
    plans: [{ name: `lease-${randomUUID()}`, limits, cost_rates: { m: { input: rate, output: rate } }, pre_call_estimate: true, pre_call_buffer_tokens: 1000 }],
  });
  if (plan.status >= 300) throw new Error(`plan failed: ${JSON.stringify(plan.body)}`);
  const id = `u-${randomUUID()}`;
  await api.post("/users", { external_user_id: id });
  const sub = await api.post(`/users/${id}/subscription`, { plan_id: plan.body.plans[0].id });
  if (sub.status !== 200) throw new Error(`subscription failed: ${JSON.stringify(sub.body)}`);
  return id;
}

export interface ReplicaResult {
  calls: number;
  /** Every event of the replica was delivered before it exited. */
  delivered?: boolean;
  refused: number;
  lease_requests: number;
  latencies: number[];
  /** Latencies after each worker's first call. */
  warm: number[];
  /** Per latency: when the reserve() began (epoch ms), whether it was after the worker's first call, lease requests sent by then. */
  started: number[];
  warmAt: boolean[];
  requestsAt: number[];
  /** Per latency: the replica's calls that had begun to wait for a lease answer when the reserve() began; those when its first call was admitted (absent from replicas killed). */
  waitsAt?: number[];
  firstGrantWaits?: number | null;
  /** When each call was committed (epoch ms). */
  committed: number[];
  /** When each call was admitted (epoch ms), and the refusals' "<gate_reason> <resets_at>" seen. */
  admitted?: number[];
  reasons?: string[];
}

export interface Replica {
  /** Resolves with the replica's figures when it ends by itself. */
  done: Promise<ReplicaResult>;
  /** Resolves once the output contains `line`. */
  printed(line: string): Promise<void>;
  kill(): void;
  /** Lets a replica started with LEASE_TOGETHER=true begin. */
  go(): void;
}

export function spawnReplica(env: Record<string, string>): Replica {
  const { child } = spawnEntry(path.join(repoRoot, "bench/lease-replica.ts"), env);
  let out = "";
  let err = "";
  let killed = false;
  const waiters: { line: string; resolve: () => void }[] = [];
  child.stdout!.on("data", (d) => {
    out += d;
    for (const w of waiters) if (out.includes(w.line)) w.resolve();
  });
  child.stderr!.on("data", (d) => (err += d));
  const done = new Promise<ReplicaResult>((resolve, reject) => {
    // "close", not "exit": the last output may still be in the pipe when the process exits.
    child.once("close", (code, signal) => {
      if (killed) return resolve({ calls: 0, refused: 0, lease_requests: 0, latencies: [], warm: [], started: [], warmAt: [], requestsAt: [], committed: [] });
      if (code !== 0) return reject(new Error(`replica exited ${code ?? signal}: ${err.slice(-2000)}`));
      resolve(JSON.parse(out.trim().split("\n").pop()!));
    });
  });
  return {
    done,
    printed: (line) => new Promise((resolve) => (out.includes(line) ? resolve() : waiters.push({ line, resolve }))),
    go: () => child.kill("SIGUSR2"),
    kill: () => {
      killed = true;
      child.kill("SIGKILL");
    },
  };
}

export interface RunOptions {
  baseUrl: string;
  apiKey: string;
  userId: string;
  /**
   * The members of a team whose cap the run spends (each replica's calls go to each in turn, each
   * replica starting at another one), its usage read from the team's; else `userId` alone.
   */
  team?: { id: string; members: string[] };
  replicas: number;
  concurrency: number;
  leases: boolean;
  /** Calls per worker (0: until refused). */
  callsPerWorker?: number;
  ttlMs?: number;
  stopAfterMs?: number;
  /** Let every replica set up (load the user's view), then start them at once. */
  together?: boolean;
  /** Longest wait for the run's events to be counted after the replicas exit (ms, default 10 min). */
  settleMs?: number;
  /** Run until this long past the start of the minute after the replicas began, refused or not. */
  untilMinutePlusMs?: number;
  /** Dollars a call costs under the user's plan (default CALL_COST). */
  callCost?: number;
  /** A tool each call also used (LEASE_TOOL of bench/lease-replica.ts). */
  tool?: string;
}

export interface RunResult {
  calls: number;
  refused: number;
  leaseRequests: number;
  latencies: number[];
  warm: number[];
  /** Settled spend and tokens of the user's (or the team's) period once every replica flushed and exited. */
  spend: number;
  tokens: number;
  /** How long the service took to count the run's events after the last replica exited (ms). */
  settleMs: number;
  /** Each replica's own figures. */
  replicas: ReplicaResult[];
}

export async function runReplicas(api: Api, o: RunOptions): Promise<RunResult> {
  const env = {
    METER_API_KEY: o.apiKey,
    METER_BASE_URL: o.baseUrl,
    LEASE_USER: o.userId,
    LEASE_CONCURRENCY: String(o.concurrency),
    LEASE_ON: String(o.leases),
    LEASE_CALLS: String(o.callsPerWorker ?? 0),
    LEASE_TTL_MS: String(o.ttlMs ?? 60_000),
    LEASE_STOP_AFTER_MS: String(o.stopAfterMs ?? 1_500),
    ...(o.untilMinutePlusMs === undefined ? {} : { LEASE_UNTIL_MINUTE_PLUS: String(o.untilMinutePlusMs) }),
    ...(o.tool === undefined ? {} : { LEASE_TOOL: o.tool }),
  };
  const callCost = o.callCost ?? CALL_COST;
  const members = o.team?.members ?? [];
  const usersOf = (k: number): Record<string, string> =>
    members.length === 0 ? {} : { LEASE_USERS: [...members.slice(k % members.length), ...members.slice(0, k % members.length)].join(",") };
  const replicas = Array.from({ length: o.replicas }, (_, k) => spawnReplica({ ...env, ...usersOf(k), LEASE_TOGETHER: String(o.together ?? false) }));
  if (o.together) {
    // A replica that fails while setting up rejects `done` instead of printing "ready".
    await Promise.race([Promise.all(replicas.map((r) => r.printed("ready"))), Promise.all(replicas.map((r) => r.done))]);
    for (const r of replicas) r.go();
  }
  const results = await Promise.all(replicas.map((r) => r.done));
  // Every replica delivered its events before exiting; the service may take a while longer to
  // count them (seconds per 100,000 calls on a loaded machine): poll until the settled usage
  // covers what the calls that ran spent and has stopped growing. Bounds: `settleMs` in all,
  // and 30 s without growth (events that will never be counted: reported).
  const calls = sum(results.map((r) => r.calls));
  const settledAt = Date.now();
  const usagePath = o.team ? `/teams/${o.team.id}/usage` : `/users/${o.userId}/usage`;
  let usage = await api.get(usagePath);
  let grewAt = Date.now();
  for (let last = -1, until = Date.now() + (o.settleMs ?? 600_000); Date.now() < until && Date.now() - grewAt < 30_000; ) {
    const b = usage.body;
    const counted = b.total_cost >= calls * callCost - 1e-6;
    if (counted && b.total_cost === last) break;
    if (b.total_cost !== last) grewAt = Date.now();
    last = b.total_cost;
    await new Promise((r) => setTimeout(r, counted ? 1_000 : 500));
    usage = await api.get(usagePath);
  }
  if (usage.body.total_cost < calls * callCost - 1e-6) {
    const lost = results.filter((r) => r.delivered === false).length;
    console.log(`    ${lost} of ${results.length} replicas did not deliver every event; settled $${usage.body.total_cost} of the $${calls * callCost} the ${calls} calls spent, ${((Date.now() - settledAt) / 1000).toFixed(0)} s after the replicas exited (no growth for 30 s)`);
  }
  return {
    calls,
    refused: sum(results.map((r) => r.refused)),
    leaseRequests: sum(results.map((r) => r.lease_requests)),
    latencies: results.flatMap((r) => r.latencies),
    warm: results.flatMap((r) => r.warm),
    spend: usage.body.total_cost,
    settleMs: Date.now() - settledAt,
    tokens: usage.body.total_tokens,
    replicas: results,
  };
}

export const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
export const quantile = (xs: number[], q: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]! : NaN);

export interface Phase {
  latencies: number[];
  warm: number[];
  leaseRequests: number;
}

/**
 * A run's calls split by how much of the cap was spent when each began: `far` below `share`
 * of it, `near` from there on. Every call costs the same (`perCall`, in the cap's unit), so
 * the spend at a time is the calls committed by then, over all replicas.
 */
export function byPhase(r: RunResult, cap: number, perCall: number, share = 0.8): { far: Phase; near: Phase } {
  const commits = r.replicas.flatMap((x) => x.committed).sort((a, b) => a - b);
  const spentAt = (t: number) => {
    let lo = 0;
    let hi = commits.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (commits[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    return lo * perCall;
  };
  const far: Phase = { latencies: [], warm: [], leaseRequests: 0 };
  const near: Phase = { latencies: [], warm: [], leaseRequests: 0 };
  for (const x of r.replicas) {
    // Lease requests: those sent before the replica's first call of the near phase count for the far one.
    let farRequests = x.lease_requests;
    x.latencies.forEach((ms, i) => {
      const isFar = spentAt(x.started[i]!) < share * cap;
      const p = isFar ? far : near;
      if (!isFar) farRequests = Math.min(farRequests, x.requestsAt[i]!);
      p.latencies.push(ms);
      if (x.warmAt[i]) p.warm.push(ms);
    });
    far.leaseRequests += farRequests;
    near.leaseRequests += x.lease_requests - farRequests;
  }
  return { far, near };
}
