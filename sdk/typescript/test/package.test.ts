// The package as a product gets it: `npm pack`, installed into an empty folder outside the
// repository (no network: it has no dependencies), the README's quick start run as plain .mjs
// against the real stack, and a .ts consumer type-checked against the shipped declarations.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import { startTestStack, type TestStack } from "../../../test/support/stack.ts";
import { lockSdkPacking } from "../../../test/support/pack-lock.ts";
import { createPlan, subscribe, DAY, near, usage } from "./support/fixtures.ts";

const run = promisify(execFile);
const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const repo = path.resolve(pkgDir, "../..");
const nodeBin = path.dirname(process.execPath);
// npm and tsc under the project's Node.
const env = { ...process.env, PATH: `${nodeBin}${path.delimiter}${process.env.PATH}` };

const t = suite<{ stack: TestStack; dir: string }>("sdk: the packed tarball installs and works outside the repository");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  ctx.dir = await mkdtemp(path.join(os.tmpdir(), "meterline-consumer-"));
});
t.after(async (ctx) => {
  await ctx.stack.close();
  await rm(ctx.dir, { recursive: true, force: true });
});

t("npm pack, install offline, README quick start as .mjs, .ts consumer type-checks", async ({ stack, dir }) => {
  const unlock = await lockSdkPacking();
  const packed = await run("npm", ["pack", "--pack-destination", dir, "--silent"], { cwd: pkgDir, env }).finally(unlock);
  const tarball = path.join(dir, packed.stdout.trim().split("\n").pop()!);
  const app = path.join(dir, "app");
  await run("mkdir", ["-p", app]);
  await writeFile(path.join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  await run("npm", ["install", tarball, "--offline", "--no-audit", "--no-fund", "--silent"], { cwd: app, env });
  const installed = await readdir(path.join(app, "node_modules/meterline/dist"));
  assert.ok(installed.includes("index.js") && installed.includes("index.d.ts"));
  assert.not.ok(installed.some((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")), "only JavaScript and declarations ship");
  // The rules module is compiled in (dist/rules); nothing shipped names the private workspace package.
  const dist = path.join(app, "node_modules/meterline/dist");
  const shipped = await readdir(dist, { recursive: true });
  assert.ok(shipped.includes(path.join("rules", "index.js")), "the rules module ships in dist/rules");
  for (const f of shipped.filter((f) => f.endsWith(".js") || f.endsWith(".d.ts"))) {
    assert.not.match(await readFile(path.join(dist, f), "utf8"), /["']@meter\/rules["']/, f);
  }

  // The README's quick start, as written, against a real product with user-42 on a plan.
  const readme = await readFile(path.join(pkgDir, "README.md"), "utf8");
  const quickStart = /## A single call, without a model client[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)![1]!;
  await writeFile(path.join(app, "quickstart.mjs"), quickStart);
  const { api, apiKey } = await stack.newProduct("packed");
  await api.post("/users", { external_user_id: "user-42" });
  const plan = await createPlan(api, { max_spend_per_period: 5, cost_rates: { "gpt-4o": { input: 2.5, output: 10 } } });
  await subscribe(api, "user-42", plan, new Date(Date.now() - DAY), new Date(Date.now() + DAY));
  const out = await run(process.execPath, ["quickstart.mjs"], { cwd: app, env: { ...env, METER_API_KEY: apiKey, METER_BASE_URL: stack.apiUrl } });
  assert.match(out.stdout, /Hello!/);
  assert.match(out.stdout, /period_cost: 0\.3[23]\d*/, out.stdout);
  // shutdown() delivered the event: 12 input and 30 output tokens at 2.5 and 10 per 1K.
  await eventually(async () => near((await usage(api, "user-42")).total_cost, 0.33));

  // Timers never keep the process alive: a script that never calls shutdown() still exits.
  await writeFile(
    path.join(app, "no-shutdown.mjs"),
    `import { Meter } from "meterline";
const meter = new Meter();
await meter.start();
await meter.record("user-42", { model: "gpt-4o", input_tokens: 1 });
console.log("done", meter.stats.queued);
`,
  );
  const alive = await run(process.execPath, ["no-shutdown.mjs"], { cwd: app, timeout: 60_000, env: { ...env, METER_API_KEY: apiKey, METER_BASE_URL: stack.apiUrl } });
  assert.match(alive.stdout, /done 1/);

  // A TypeScript consumer, strict, against the shipped declarations only (no @types/node).
  await writeFile(
    path.join(app, "consumer.ts"),
    `import { Meter, LimitExceededError, currentUser, type GuardResult, type UsageEvent, type Reservation, type StartResult } from "meterline";
import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "meterline";
import { meterErrorHandler } from "meterline/express";
import { meterFastify } from "meterline/fastify";
export async function receive(body: string, headers: Record<string, string>): Promise<string> {
  try {
    const e: WebhookEvent = await verifyWebhook(body, headers, ["whsec_old", "whsec_new"], { toleranceSeconds: 300 });
    return e.type === "usage.threshold.80" ? e.data.plan_name : e.type;
  } catch (err) {
    return err instanceof WebhookVerificationError ? err.reason : "?";
  }
}
const meter = new Meter({ apiKey: "k", baseURL: "http://127.0.0.1:1/api/v1", blocking: false, maxQueueSize: 10, failClosed: true });
export const helpers = [meterErrorHandler(), meterFastify] as const;
export const started: Promise<StartResult> = meter.start();
meter.onHardGate((r: GuardResult, ctx) => { const s: "ok" | "soft_gate" | "hard_gate" = r.status; void s; void ctx.session_id; });
meter.onUsage((e: UsageEvent) => { const synced: boolean = e.synced; void synced; });
export async function handler(userId: string): Promise<number> {
  const r: Reservation = await meter.reserve(userId, { model: "gpt-4o", input_tokens: 3 });
  const e = await r.commit({ input_tokens: 3, output_tokens: 4, tool_calls: ["search"] });
  const err = new LimitExceededError(r.result);
  const who: string | undefined = currentUser();
  void who;
  const resets: Date | null = err.resetsAt;
  void resets;
  await meter.withUser(userId, () => meter.refresh(userId), { session_id: "conversation-1" });
  return e.cost_total + err.statusCode + (meter.state(userId)?.period_cost ?? 0);
}
`,
  );
  await writeFile(
    path.join(app, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true, module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", lib: ["ES2022"], types: [], noEmit: true, skipLibCheck: false }, files: ["consumer.ts"] }),
  );
  await run(process.execPath, [path.join(repo, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], { cwd: app, env }).catch((e) => {
    throw new Error(`consumer type-check failed:\n${e.stdout}${e.stderr}`);
  });
});

t.run();
