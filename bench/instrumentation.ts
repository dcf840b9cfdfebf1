// `npm run bench:instrumentation`: the time the model-client wrappers of meterline add to a
// call. Each scenario runs the same client unwrapped and wrapped against the same local mock
// provider (same reply, same chunks), with a started Meter on the in-process service (plan with
// pre-call estimates, so every call reserves and commits). Calls alternate unwrapped/wrapped
// (which goes first alternates too); a round is BENCH_CALLS pairs of every scenario in turn, so
// a change in the machine's load falls on all of them; BENCH_ROUNDS rounds. Prints, per
// scenario, the median over the rounds of each round's p50 and p99 (unwrapped, wrapped, and
// wrapped minus unwrapped), and the range of the rounds' p50 added, which shows the noise.
//   BENCH_CALLS=1000 BENCH_ROUNDS=5 BENCH_WARMUP=300 BENCH_ONLY=stream npm run bench:instrumentation
// (BENCH_ONLY: run the scenarios whose name contains it.)
// The library is measured as it ships: compiled by tsc into sdk/typescript/dist (its `build`
// script, run here first), not its TypeScript source through tsx, whose keep-names transform
// adds an Object.defineProperty call to every function made per call or stream, a cost no
// user pays. BENCH_SDK=src measures the source through tsx instead.
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import Anthropic from "@anthropic-ai/sdk";
import { createOpenAI } from "@ai-sdk/openai";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { ChatOpenAI } from "@langchain/openai";
import { generateText, streamText, wrapLanguageModel } from "ai";
import { AsyncLocalStorage, createHook } from "node:async_hooks";
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { createLogger } from "@meter/lib/logger";
import { startStack } from "../cmd/stack.ts";
import { startMockAnthropic } from "../sdk/typescript/test/mock-anthropic.ts";
import { startMockOpenAI } from "../sdk/typescript/test/mock-openai.ts";
import { Api } from "../test/support/http.ts";
import { benchDatabase } from "./support/database.ts";

const SDK_DIR = fileURLToPath(new URL("../sdk/typescript/", import.meta.url));
const FROM_SOURCE = process.env.BENCH_SDK === "src";
if (!FROM_SOURCE) execFileSync(process.execPath, [fileURLToPath(import.meta.resolve("typescript/bin/tsc")), "-p", path.join(SDK_DIR, "tsconfig.build.json")], { stdio: "inherit" });
const sdkModule = (file: string) => import(path.join(SDK_DIR, FROM_SOURCE ? `src/${file}.ts` : `dist/${file}.js`));
const { Meter } = (await sdkModule("index")) as typeof import("../sdk/typescript/src/index.ts");
const { meterModel } = (await sdkModule("integrations/ai")) as typeof import("../sdk/typescript/src/integrations/ai.ts");
const { meterAnthropic } = (await sdkModule("integrations/anthropic")) as typeof import("../sdk/typescript/src/integrations/anthropic.ts");
const { MeterCallbackHandler } = (await sdkModule("integrations/langchain")) as typeof import("../sdk/typescript/src/integrations/langchain.ts");
const { meterOpenAI } = (await sdkModule("integrations/openai")) as typeof import("../sdk/typescript/src/integrations/openai.ts");

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 300);
const ONLY = process.env.BENCH_ONLY ?? "";

const database = await benchDatabase("instrumentation");
const stack = await startStack({ mongoUrl: database.url, dbPrefix: `bench${Date.now()}`, logger: createLogger("bench", "warn") });
const api = new Api(stack.apiUrl);
const product = await api.post("/products", { name: "bench" });
const authed = api.withKey(product.body.api_key);
const plans = await authed.post("/config/plans", {
  plans: [{ name: "bench", pre_call_estimate: true, cost_rates: { "gpt-4o": { input: 0.0025, output: 0.01 }, "claude-sonnet-4-6": { input: 0.003, output: 0.015 } } }],
});
const USER = "bench-user";
await authed.post("/users", { external_user_id: USER });
await authed.post(`/users/${USER}/subscription`, { plan_id: plans.body.plans[0].id });
// Events are delivered between the timed blocks (meter.flush() below), not by the timer during
// them: delivery is the core's batched work, and the in-process service that receives it would
// otherwise land on whichever calls run at that moment.
const meter = new Meter({ apiKey: product.body.api_key, baseURL: stack.apiUrl, flushIntervalMs: 3_600_000, maxQueueSize: 100_000 });
await meter.start();

const mockOpenAI = await startMockOpenAI();
const mockAnthropic = await startMockAnthropic();
const reply = { text: "The weather in Paris is sunny with a light breeze this afternoon", usage: { input: 120, output: 16 } };
mockOpenAI.reply = reply;
mockAnthropic.reply = reply;
// The mocks keep every request for the tests; here that would only grow the heap.
for (const m of [mockOpenAI, mockAnthropic]) m.requests.push = () => 0;

const openai = () => new OpenAI({ apiKey: "sk-bench", baseURL: `${mockOpenAI.url}/v1` });
const anthropic = () => new Anthropic({ apiKey: "sk-bench", baseURL: mockAnthropic.url });
const messages = [{ role: "user" as const, content: "What is the weather in Paris?" }];
const claude = { model: "claude-sonnet-4-6", max_tokens: 256, messages };
const provider = createOpenAI({ apiKey: "sk-bench", baseURL: `${mockOpenAI.url}/v1` });
const opts = { user_id: USER };

type Call = () => Promise<unknown>;
const scenarios: { name: string; plain: Call; wrapped: Call }[] = [];
{
  const [p, w] = [openai(), meterOpenAI(openai(), meter, opts)];
  scenarios.push({ name: "openai chat.completions", plain: () => p.chat.completions.create({ model: "gpt-4o", messages }), wrapped: () => w.chat.completions.create({ model: "gpt-4o", messages }) });
  const drain = async (s: AsyncIterable<unknown>) => {
    for await (const _ of s);
  };
  scenarios.push({
    name: "openai chat.completions stream",
    plain: async () => drain(await p.chat.completions.create({ model: "gpt-4o", messages, stream: true })),
    wrapped: async () => drain(await w.chat.completions.create({ model: "gpt-4o", messages, stream: true })),
  });
  // The same wire on both sides (the unwrapped call asks for usage as the wrapper does): what the
  // wrapper's own work costs there, without the usage chunk and fields the issue has it request.
  scenarios.push({
    name: "openai chat.completions stream, unwrapped asking usage as the wrapper does",
    plain: async () => drain(await p.chat.completions.create({ model: "gpt-4o", messages, stream: true, stream_options: { include_usage: true } })),
    wrapped: async () => drain(await w.chat.completions.create({ model: "gpt-4o", messages, stream: true })),
  });
  // The same wire on both sides: the caller asks for usage itself, so the wrapper adds no chunk.
  const withUsage = { model: "gpt-4o", messages, stream: true as const, stream_options: { include_usage: true } };
  scenarios.push({
    name: "openai chat.completions stream, caller asks usage",
    plain: async () => drain(await p.chat.completions.create(withUsage)),
    wrapped: async () => drain(await w.chat.completions.create(withUsage)),
  });
  scenarios.push({
    name: "openai responses stream",
    plain: async () => drain(await p.responses.create({ model: "gpt-4o", input: "weather?", stream: true })),
    wrapped: async () => drain(await w.responses.create({ model: "gpt-4o", input: "weather?", stream: true })),
  });
  const [ap, aw] = [anthropic(), meterAnthropic(anthropic(), meter, opts)];
  scenarios.push({ name: "anthropic messages", plain: () => ap.messages.create(claude), wrapped: () => aw.messages.create(claude) });
  scenarios.push({
    name: "anthropic messages stream",
    plain: async () => drain(await ap.messages.create({ ...claude, stream: true })),
    wrapped: async () => drain(await aw.messages.create({ ...claude, stream: true })),
  });
  const [mp, mw] = [provider.chat("gpt-4o"), meterModel(provider.chat("gpt-4o"), meter, opts)];
  scenarios.push({ name: "ai generateText", plain: () => generateText({ model: mp, prompt: "weather?" }), wrapped: () => generateText({ model: mw, prompt: "weather?" }) });
  scenarios.push({
    name: "ai streamText",
    plain: () => drain(streamText({ model: mp, prompt: "weather?" }).textStream),
    wrapped: () => drain(streamText({ model: mw, prompt: "weather?" }).textStream),
  });
  // A model wrapped with a middleware that does nothing but call the provider: what remains is
  // the meter's own work (the reservation, and the pass-through stream that observes the parts).
  const noopModel = wrapLanguageModel({ model: provider.chat("gpt-4o"), middleware: { wrapStream: ({ doStream }) => doStream() } });
  scenarios.push({
    name: "ai streamText, against a no-op middleware",
    plain: () => drain(streamText({ model: noopModel, prompt: "weather?" }).textStream),
    wrapped: () => drain(streamText({ model: mw, prompt: "weather?" }).textStream),
  });
  const chat = new ChatOpenAI({ model: "gpt-4o", apiKey: "sk-bench", maxRetries: 0, configuration: { baseURL: `${mockOpenAI.url}/v1` } });
  const handler = new MeterCallbackHandler(meter, opts);
  scenarios.push({ name: "langchain invoke", plain: () => chat.invoke("weather?"), wrapped: () => chat.invoke("weather?", { callbacks: [handler] }) });
  scenarios.push({
    name: "langchain stream",
    plain: async () => drain(await chat.stream("weather?")),
    wrapped: async () => drain(await chat.stream("weather?", { callbacks: [handler] })),
  });
  // LangChain builds run managers, serializes the model and dispatches every token only when a
  // callback handler is present: against a handler that does nothing (awaited, as the meter's
  // must be to block), what remains is the meter's own work.
  class NoopHandler extends BaseCallbackHandler {
    name = "noop";
    constructor() {
      super({ raiseError: true });
    }
  }
  const noop = new NoopHandler();
  scenarios.push({
    name: "langchain invoke, against a no-op handler",
    plain: () => chat.invoke("weather?", { callbacks: [noop] }),
    wrapped: () => chat.invoke("weather?", { callbacks: [handler] }),
  });
  scenarios.push({
    name: "langchain stream, against a no-op handler",
    plain: async () => drain(await chat.stream("weather?", { callbacks: [noop] })),
    wrapped: async () => drain(await chat.stream("weather?", { callbacks: [handler] })),
  });
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

async function timed(fn: Call): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) * 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;
const selected = scenarios.filter((x) => x.name.includes(ONLY));
const rounds = new Map(selected.map((s) => [s.name, [] as { p50: [number, number]; p99: [number, number] }[]]));
for (const s of selected) {
  for (let i = 0; i < WARMUP; i++) {
    await s.plain();
    await s.wrapped();
  }
  await meter.flush();
}
for (let round = 0; round < ROUNDS; round++) {
  for (const s of selected) {
    const plain: number[] = [];
    const wrapped: number[] = [];
    // Interleaved, alternating which goes first, so drift on a shared machine hits both alike.
    for (let i = 0; i < CALLS; i++) {
      if (i % 2 === 0) {
        plain.push(await timed(s.plain));
        wrapped.push(await timed(s.wrapped));
      } else {
        wrapped.push(await timed(s.wrapped));
        plain.push(await timed(s.plain));
      }
    }
    await meter.flush();
    plain.sort((a, b) => a - b);
    wrapped.sort((a, b) => a - b);
    rounds.get(s.name)!.push({ p50: [pct(plain, 50), pct(wrapped, 50)], p99: [pct(plain, 99), pct(wrapped, 99)] });
  }
  console.log(`round ${round + 1}/${ROUNDS} done`);
}
const rows = selected.map((s) => {
  const r = rounds.get(s.name)!;
  const added50 = r.map((x) => x.p50[1] - x.p50[0]);
  const cells = [
    median(r.map((x) => x.p50[0])),
    median(r.map((x) => x.p50[1])),
    median(added50),
    median(r.map((x) => x.p99[0])),
    median(r.map((x) => x.p99[1])),
    median(r.map((x) => x.p99[1] - x.p99[0])),
  ].map((v) => v.toFixed(0));
  return `| ${s.name} | ${cells.join(" | ")} | ${Math.min(...added50).toFixed(0)} to ${Math.max(...added50).toFixed(0)} |`;
});

// Work the wrapper adds, counted rather than timed (the same on a busy machine): promises
// created per call, wrapped minus unwrapped. A stream that costs one promise per chunk more
// than its per-call share shows it here.
// Only promises made on behalf of the measured calls count (those created in their async
// context), not those of the in-process service or its background jobs.
let promises = 0;
const measured = new AsyncLocalStorage<true>();
const hook = createHook({ init: (_id, type) => void (type === "PROMISE" && measured.getStore() && promises++) });
await meter.flush();
const COUNTED = 100;
async function promisesPerCall(fn: Call): Promise<number> {
  promises = 0;
  await measured.run(true, async () => {
    for (let i = 0; i < COUNTED; i++) await fn();
  });
  return promises / COUNTED;
}
hook.enable();
const counted: string[] = [];
for (const s of selected) {
  const plain = await promisesPerCall(s.plain);
  const wrapped = await promisesPerCall(s.wrapped);
  await meter.flush();
  counted.push(`| ${s.name} | ${plain.toFixed(0)} | ${wrapped.toFixed(0)} | ${(wrapped - plain).toFixed(0)} |`);
}
hook.disable();

// The core's share of what every wrapped call adds: reserve before, commit after.
const core: number[] = [];
for (let i = 0; i < CALLS; i++) {
  core.push(
    await timed(async () => {
      const r = await meter.reserve(USER, { model: "gpt-4o", input_tokens: 12 });
      await r.commit({ input_tokens: 120, output_tokens: 16 });
    }),
  );
}
core.sort((a, b) => a - b);
console.log(`\nmeterline from ${FROM_SOURCE ? "its source through tsx" : "dist (tsc)"}; load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(", ")}`);
console.log(`\n${ROUNDS} rounds of ${CALLS} calls each way, µs per call; median over the rounds (p50 added: of each round's difference)\n`);
console.log("| scenario | p50 plain | p50 wrapped | p50 added | p99 plain | p99 wrapped | p99 added | p50 added, rounds |\n|---|---|---|---|---|---|---|---|");
console.log(rows.join("\n"));
console.log(`\npromises created per call (async_hooks, ${COUNTED} calls each way)\n\n| scenario | unwrapped | wrapped | added |\n|---|---|---|---|\n${counted.join("\n")}`);
console.log(`\nof which the core's meter.reserve() + commit(): p50 ${pct(core, 50).toFixed(0)} µs, p99 ${pct(core, 99).toFixed(0)} µs`);
console.log(`\nmeter: ${JSON.stringify(meter.stats)}`);

await meter.shutdown();
await mockOpenAI.close();
await mockAnthropic.close();
await stack.close();
await database.stop();
