// A product's traffic while parts of the service are killed, and the checks that nothing
// acknowledged was lost or counted twice afterwards. Used by test/resilience.test.ts and by
// `npm run bench:chaos` (bench/chaos/*.ts).
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Receiver, type Received } from "../../services/webhooks/testing/receiver.ts";
import { eventually } from "./eventually.ts";
import { Api, type ApiResponse } from "./http.ts";

/** A temporary data directory and a webhook receiver, removed afterwards. */
export async function withScene<T>(fn: (dir: string, rx: Receiver) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-chaos-"));
  const rx = await new Receiver().start();
  try {
    return await fn(dir, rx);
  } finally {
    await rx.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** What the clients met while sending: answers by status, and connections refused. */
export class Tally {
  readonly statuses = new Map<number, number>();
  refusedConnections = 0;
  /** When the first answer of 5xx or refused connection was seen, and the first success after it. */
  firstFailureAt?: number;
  recoveredAt?: number;

  note(status: number | "refused"): void {
    if (status === "refused") this.refusedConnections++;
    else this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    const failed = status === "refused" || status >= 500;
    if (failed) this.firstFailureAt ??= Date.now();
    else if (this.firstFailureAt !== undefined) this.recoveredAt ??= Date.now();
  }

  count(status: number): number {
    return this.statuses.get(status) ?? 0;
  }

  /** e.g. "503 x12, connection refused x3" (what was refused; 2xx/4xx left out). */
  refusals(): string {
    const parts = [...this.statuses].filter(([s]) => s >= 500).map(([s, n]) => `${s} x${n}`);
    if (this.refusedConnections) parts.push(`connection refused x${this.refusedConnections}`);
    return parts.join(", ") || "none";
  }
}

/**
 * Sends one request as a careful client does: again after a 5xx or a 429 (busy: waiting
 * Retry-After, at most a second) or a refused connection, until another answer or `giveUpMs`
 * pass. Every answer goes to `tally`.
 */
export async function sendUntilAnswered(
  api: Api,
  method: string,
  path: string,
  body: unknown,
  tally: Tally,
  giveUpMs = 120_000,
): Promise<ApiResponse> {
  const until = Date.now() + giveUpMs;
  for (;;) {
    let res: ApiResponse | undefined;
    try {
      res = await api.request(method, path, { body });
      tally.note(res.status);
      if (res.status < 500 && res.status !== 429) return res;
    } catch {
      // The process is down (killed, restarting): nothing answers on the port.
      tally.note("refused");
    }
    if (Date.now() > until) throw new Error(`${method} ${path} not answered within ${giveUpMs} ms (last ${res?.status ?? "refused"})`);
    const retryAfter = Number(res?.headers.get("retry-after") ?? 0.2);
    await new Promise((r) => setTimeout(r, Math.min(1_000, retryAfter * 1_000)));
  }
}

export const THRESHOLDS = ["usage.threshold.50", "usage.threshold.80", "usage.threshold.100"];
const SPEND_LIMIT = 10;

/** One product with users on a capped plan and an endpoint for thresholds and soft gates. */
export interface ChaosProduct {
  api: Api;
  productId: string;
  users: string[];
  endpointId: string;
}

export async function chaosProduct(api: Api, rx: Receiver, users: number): Promise<ChaosProduct> {
  const tally = new Tally();
  const created = await sendUntilAnswered(api, "POST", "/products", { name: "Chaos" }, tally);
  const keyed = api.withKey(created.body.api_key);
  const plan = await sendUntilAnswered(keyed, "POST", "/config/plans", { plans: [{ name: "capped", max_spend_per_period: SPEND_LIMIT }] }, tally);
  const ids = Array.from({ length: users }, (_, i) => `user-${i}-${randomUUID().slice(0, 8)}`);
  const start = new Date(Date.now() - 86_400_000).toISOString();
  const end = new Date(Date.now() + 29 * 86_400_000).toISOString();
  for (const id of ids) {
    await sendUntilAnswered(keyed, "POST", "/users", { external_user_id: id }, tally);
    const sub = await sendUntilAnswered(keyed, "POST", `/users/${id}/subscription`, { plan_id: plan.body.plans[0].id, period_start: start, period_end: end }, tally);
    if (sub.status !== 200) throw new Error(`subscription: ${sub.status} ${JSON.stringify(sub.body)}`);
  }
  const ep = await sendUntilAnswered(keyed, "POST", "/webhooks/endpoints", { url: rx.url, subscribed_events: [...THRESHOLDS, "gate_event.soft_gate"] }, tally);
  if (ep.status !== 201) throw new Error(`endpoint: ${ep.status} ${JSON.stringify(ep.body)}`);
  return { api: keyed, productId: created.body.id, users: ids, endpointId: ep.body.id };
}

/** What was acknowledged (answered 200) per user, to compare with what the service reads back. */
export class Acknowledged {
  readonly tokens = new Map<string, number>();
  readonly cost = new Map<string, number>();
  readonly gates = new Map<string, Set<string>>();
  /** Each acknowledged gate event's reason (its own: what its webhook carries). */
  readonly gateReasons = new Map<string, string>();
  events = 0;
}

const COST = 0.04; // per event: 300 events cross 100% of a $10 plan

/**
 * Sends `batches` usage batches (`perBatch` events for one user each, users in turn), `concurrency`
 * at a time, each until answered; every fourth batch also sends one soft-gate event (of a reason of its own). Calls
 * `onBatch(n)` after the n-th acknowledged batch (to strike in the middle of the load).
 * Throws if any batch was refused for a reason other than being unavailable.
 */
export async function ingest(
  p: ChaosProduct,
  ack: Acknowledged,
  tally: Tally,
  opts: { batches: number; perBatch: number; concurrency: number; onBatch?: (n: number) => void },
): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (let b = next++; b < opts.batches; b = next++) {
      const user = p.users[b % p.users.length]!;
      const events = Array.from({ length: opts.perBatch }, (_, i) => ({
        id: randomUUID(),
        user_id: user,
        timestamp: new Date().toISOString(),
        model: "gpt-4.1",
        input_tokens: 100 + i,
        output_tokens: 10,
        cost_total: COST,
      }));
      const res = await sendUntilAnswered(p.api, "POST", "/events/batch", events, tally);
      if (res.status !== 200) throw new Error(`batch refused: ${res.status} ${JSON.stringify(res.body)}`);
      ack.events += events.length;
      ack.tokens.set(user, (ack.tokens.get(user) ?? 0) + events.reduce((s, e) => s + e.input_tokens + e.output_tokens, 0));
      ack.cost.set(user, (ack.cost.get(user) ?? 0) + events.length * COST);
      if (b % 4 === 0) {
        const gate = {
          id: randomUUID(),
          user_id: user,
          timestamp: new Date().toISOString(),
          status: "soft_gate",
          // Its own reason: gate webhooks are coalesced per user, reason and 10 minutes.
          gate_reason: `model_limit:m${b}`,
          model: `m${b}`,
          usage_pct: 80,
          current_value: 8,
          limit_value: 10,
        };
        const g = await sendUntilAnswered(p.api, "POST", "/gate-events/batch", [gate], tally);
        if (g.status !== 200) throw new Error(`gate batch refused: ${g.status} ${JSON.stringify(g.body)}`);
        if (!ack.gates.has(user)) ack.gates.set(user, new Set());
        ack.gates.get(user)!.add(gate.id);
        ack.gateReasons.set(gate.id, gate.gate_reason);
      }
      opts.onBatch?.(++done);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
}

/** The load a single fault is struck under: 48 batches of 25, 4 at a time; `strike` runs after the 12th acknowledged batch. */
export function ingestStruckOnce(p: ChaosProduct, ack: Acknowledged, tally: Tally, strike: () => void): Promise<void> {
  return ingest(p, ack, tally, { batches: 48, perBatch: 25, concurrency: 4, onBatch: (n) => n === 12 && strike() });
}

/** Differences between what was acknowledged and what the service reads back. */
export interface Audit {
  /** Acknowledged events the counters miss (tokens / per-event tokens, rounded), and extra ones. */
  lost: number;
  doubled: number;
  /** Envelopes received again (same id) after a webhooks process was killed mid-delivery. */
  redelivered: number;
  problems: string[];
}

/**
 * Reads every user's usage and gate events back and waits until the webhooks are settled
 * (`settled` says no handover or delivery is pending any more), then compares: usage and gate
 * events equal to what was acknowledged, each threshold delivered exactly once per user, each
 * gate event delivered once, every delivery in the log a success received by `rx`.
 */
export async function audit(p: ChaosProduct, ack: Acknowledged, rx: Receiver, settled: () => Promise<boolean>): Promise<Audit> {
  const tally = new Tally();
  // Webhooks first: each user's thresholds and gate events arrive, then nothing is pending
  // (no handover in an outbox, no delivery waiting): nothing more can arrive after that.
  // Delivery is at least once: a webhooks process killed between the receiver's answer and
  // recording it sends the same envelope (same id) again, for the receiver to drop. What must
  // be exact is the set of envelopes: one per threshold crossed and per gate event.
  const mine = () => {
    const byId = new Map<string, Received>();
    for (const r of rx.received) if (r.json?.product_id === p.productId) byId.set(r.json.id, r);
    return [...byId.values()];
  };
  const gateCount = [...ack.gates.values()].reduce((s, g) => s + g.size, 0);
  await eventually(
    () => mine().length >= p.users.length * THRESHOLDS.length + gateCount,
    120_000,
    `${p.users.length * THRESHOLDS.length} thresholds and ${gateCount} gate events delivered`,
  ).catch(async (err: Error) => {
    const where = await deliveryLog(p, tally).catch((e: Error) => `delivery log unreadable: ${e.message}`);
    const handedOver = await settled().catch(() => "unknown");
    throw new Error(`${err.message} (have ${mine().length}; missing: ${missingEnvelopes(p, ack, mine()).join(", ")}; outboxes empty: ${handedOver}; ${where})`);
  });
  await eventually(async () => {
    if (!(await settled())) return false;
    const pending = await sendUntilAnswered(p.api, "GET", `/webhooks/endpoints/${p.endpointId}/deliveries?status=pending&limit=1`, undefined, tally);
    return pending.body.deliveries.length === 0;
  }, 120_000, "no handover or delivery pending");

  const problems: string[] = [];
  for (const user of p.users) {
    for (const type of THRESHOLDS) {
      const n = mine().filter((r) => r.json.type === type && r.json.data.user_id === user).length;
      if (n !== 1) problems.push(`${user}: ${type} delivered ${n} times`);
    }
  }
  const gateDeliveries = mine().filter((r) => r.json.type === "gate_event.soft_gate").length;
  if (gateDeliveries !== gateCount) problems.push(`${gateDeliveries} gate event deliveries, ${gateCount} gate events acknowledged`);
  const logged = await deliveries(p, tally);
  for (const d of logged) if (d.status !== "success") problems.push(`delivery ${d.id} ${d.status}`);
  if (logged.length !== mine().length) problems.push(`${logged.length} deliveries logged, ${mine().length} distinct envelopes received`);

  // Usage: a job cut off by a crash is completed by a retry or, for a claim the dead process
  // held, by the sweep once the claim is RECOVERY_AFTER_MS old; wait for that, within bounds.
  let lost = 0;
  let doubled = 0;
  const usageProblems: string[] = [];
  const perEvent = 100 + 10; // tokens of the smallest event: counts events from tokens, at least one
  await eventually(async () => {
    usageProblems.length = 0;
    lost = doubled = 0;
    for (const user of p.users) {
      const usage = await sendUntilAnswered(p.api, "GET", `/users/${user}/usage`, undefined, tally);
      const want = ack.tokens.get(user) ?? 0;
      const got = usage.body.total_tokens as number;
      if (got !== want) {
        usageProblems.push(`${user}: total_tokens ${got}, acknowledged ${want}`);
        if (got < want) lost += Math.max(1, Math.round((want - got) / perEvent));
        else doubled += Math.max(1, Math.round((got - want) / perEvent));
      }
      const cost = ack.cost.get(user) ?? 0;
      if (Math.abs(usage.body.total_cost - cost) > 1e-6) usageProblems.push(`${user}: total_cost ${usage.body.total_cost}, acknowledged ${cost}`);
    }
    return usageProblems.length === 0;
  }, 30_000, "usage equal to what was acknowledged").catch(() => {});
  problems.push(...usageProblems);

  for (const user of p.users) {
    const seen = new Set<string>();
    let cursor: string | null = null;
    do {
      const page: ApiResponse = await sendUntilAnswered(p.api, "GET", `/users/${user}/gate-events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, undefined, tally);
      for (const e of page.body.events) {
        if (seen.has(e.id)) problems.push(`${user}: gate event ${e.id} listed twice`);
        seen.add(e.id);
      }
      cursor = page.body.next_cursor;
    } while (cursor);
    const gates = ack.gates.get(user) ?? new Set();
    for (const id of gates) if (!seen.has(id)) problems.push(`${user}: gate event ${id} acknowledged, not listed`);
    if (seen.size > gates.size) problems.push(`${user}: ${seen.size} gate events listed, ${gates.size} acknowledged`);
  }
  const redelivered = rx.received.filter((r) => r.json?.product_id === p.productId).length - mine().length;
  return { lost, doubled, redelivered, problems };
}

/** The thresholds and gate events acknowledged whose envelope was not received, to see which part held them. */
function missingEnvelopes(p: ChaosProduct, ack: Acknowledged, received: Received[]): string[] {
  const missing: string[] = [];
  for (const user of p.users) {
    for (const type of THRESHOLDS) if (!received.some((r) => r.json.type === type && r.json.data.user_id === user)) missing.push(`${type} of ${user}`);
  }
  const reasons = new Set(received.filter((r) => r.json.type === "gate_event.soft_gate").map((r) => r.json.data.gate_reason));
  for (const [user, ids] of ack.gates) {
    for (const id of ids) if (!reasons.has(ack.gateReasons.get(id))) missing.push(`gate event ${id} (${ack.gateReasons.get(id)}) of ${user}`);
  }
  return missing;
}

/** The endpoint's whole delivery log, page by page. */
async function deliveries(p: ChaosProduct, tally: Tally): Promise<{ id: string; event_type: string; status: string }[]> {
  const out = [];
  let cursor: string | null = null;
  do {
    const page: ApiResponse = await sendUntilAnswered(p.api, "GET", `/webhooks/endpoints/${p.endpointId}/deliveries?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, undefined, tally);
    out.push(...page.body.deliveries);
    cursor = page.body.next_cursor;
  } while (cursor);
  return out;
}

/**
 * The endpoint's delivery log by event type and status ("usage.threshold.50 success x3, ..."):
 * with the outboxes' state, which part held a missing envelope. Fewer deliveries of a type
 * than envelopes wanted, outboxes empty: the event was handed over but never fanned out (or
 * never stored); as many, one not a success: its delivery is stuck or failed.
 */
async function deliveryLog(p: ChaosProduct, tally: Tally): Promise<string> {
  const counts = new Map<string, number>();
  for (const d of await deliveries(p, tally)) counts.set(`${d.event_type} ${d.status}`, (counts.get(`${d.event_type} ${d.status}`) ?? 0) + 1);
  return `deliveries logged: ${[...counts].sort().map(([k, n]) => `${k} x${n}`).join(", ") || "none"}`;
}

/**
 * True when the metrics text says every outbox is empty and none holds an entry set aside (a
 * handover given up after failing every attempt: what it holds was never handed over).
 */
export async function outboxesEmpty(metricsUrl: string): Promise<boolean> {
  const text = await (await fetch(metricsUrl)).text();
  const gauge = (name: string) => [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "gm"))].map((m) => Number(m[1]));
  const depths = gauge("meter_outbox_depth");
  return depths.length > 0 && [...depths, ...gauge("meter_outbox_set_aside")].every((d) => d === 0);
}

/** Child processes of `parent` whose command line contains `match` (Linux /proc). */
export function childPids(parent: number, match: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid ...": comm may hold spaces, so split after its closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== parent) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ").includes(match)) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
