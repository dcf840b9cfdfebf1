// `npm run bench:plan-change`: how long a plan change takes to reach a running client, with
// default settings (flushIntervalMs 5 s), without and with budget leases. Each round lowers
// the cap of a user's plan below what the user spent (PATCH /config/plans/{id}) and times the
// first call the client gates by it, then raises it again and times the first call it lets
// through. The client keeps BENCH_BYSTANDERS other users cached on another plan and calls for
// the user every 50 ms; the figures also count the requests the client sent per change.
//   BENCH_ROUNDS=5 BENCH_BYSTANDERS=200 npm run bench:plan-change
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import { LimitExceededError, Meter } from "../sdk/typescript/src/index.ts";
import { benchPlan, benchProduct, benchUser } from "./support/bench-product.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BYSTANDERS = Number(process.env.BENCH_BYSTANDERS ?? 200);
const RATES = { "gpt-4o": { input: 1, output: 2 } };

const bench = await benchProduct("plan-change");
const { stack, apiKey, api } = bench;

// Requests the clients send, by route, counted at the platform's fetch.
const sent = new Map<string, number>();
const realFetch = globalThis.fetch;
globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
  const url = new URL(String(input instanceof Request ? input.url : input));
  const route = url.pathname.replace(/\/users\/[^/]+\//, "/users/{id}/");
  const key = `${init?.method ?? "GET"} ${route.replace("/api/v1", "")}`;
  sent.set(key, (sent.get(key) ?? 0) + 1);
  return realFetch(input, init);
};
const count = (key: string) => sent.get(key) ?? 0;

const plan = (fields: Record<string, unknown>) => benchPlan(api, fields);
const user = (planId: string) => benchUser(api, planId);

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]} ms, min ${s[0]}, max ${s.at(-1)}`;
};

console.log(`plan change to a running client (real stack in-process, ${bench.database}; shared 2-core machine, figures are noisy)\n`);

for (const leases of [false, true]) {
  const planId = await plan({ max_spend_per_period: 10, cost_rates: RATES, pre_call_estimate: true, pre_call_buffer_tokens: 10 });
  const target = await user(planId);
  const otherPlan = await plan({ max_spend_per_period: 10, cost_rates: RATES });
  const m = new Meter({ apiKey, baseURL: stack.apiUrl, logger: { warn: () => {} }, leases });
  await m.start();
  for (let i = 0; i < BYSTANDERS; i++) await m.guard(await user(otherPlan), { model: "gpt-4o" });
  // $3 spent: 1,500 input tokens at $1/1K, twice.
  for (let i = 0; i < 2; i++) await m.record(target, { model: "gpt-4o", input_tokens: 1500 });
  await m.flush();
  // The subscriptions made for the setup are changes too: let the client take them in (two
  // ticks: the reload and the second read) before counting its requests.
  await new Promise((r) => setTimeout(r, 11_000));

  /** Calls every 50 ms until one is gated (or, `lifted`, until one runs); ms since `from`. */
  const firstCall = async (from: number, lifted: boolean): Promise<number> => {
    for (;;) {
      try {
        await m.call(target, { model: "gpt-4o", input_tokens: 1, usage: () => ({}) }, () => undefined);
        if (lifted) return Date.now() - from;
      } catch (err) {
        if (!(err instanceof LimitExceededError)) throw err;
        if (!lifted) return Date.now() - from;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const lowered: number[] = [];
  const raised: number[] = [];
  const before = { sessions: count("GET /users/{id}/session"), changes: count("GET /config/changes"), started: Date.now() };
  for (let round = 0; round < ROUNDS; round++) {
    let at = Date.now();
    await api.patch(`/config/plans/${planId}`, { max_spend_per_period: 2 });
    lowered.push(await firstCall(at, false));
    at = Date.now();
    await api.patch(`/config/plans/${planId}`, { max_spend_per_period: 10 });
    raised.push(await firstCall(at, true));
  }
  const seconds = (Date.now() - before.started) / 1000;
  const sessions = count("GET /users/{id}/session") - before.sessions;
  const polls = count("GET /config/changes") - before.changes;
  console.log(`leases: ${leases}`);
  console.log(`  PATCH lowering the cap -> first call gated:        ${stats(lowered)}`);
  console.log(`  PATCH raising it again  -> first call let through: ${stats(raised)}`);
  console.log(
    `  requests over ${2 * ROUNDS} changes (${seconds.toFixed(0)} s), ${BYSTANDERS + 1} users cached: ` +
      `${sessions} session reloads (${(sessions / (2 * ROUNDS)).toFixed(1)} per change), ${polls} change polls (one per flush interval)\n`,
  );
  await m.shutdown({ timeoutMs: 5_000 });
}

globalThis.fetch = realFetch;
await bench.close();
