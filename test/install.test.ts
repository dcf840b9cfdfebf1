// A newcomer installing each client library from this checkout, as its README says: the README's
// install block, run as written in an empty folder outside the repository (the one edit a user
// makes too: CHECKOUT= names this checkout), then, in the same shell, the README's first example
// (a web app, started by the command its first line names) against the all-in-one process and a
// fake OpenAI-compatible server that the openai clients reach through OPENAI_BASE_URL, which
// they read themselves. Nothing here names a package: the READMEs do.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startMockOpenAI } from "../sdk/typescript/test/mock-openai.ts";
import type { MockServer } from "../sdk/typescript/test/mock-server.ts";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import type { Api } from "./support/http.ts";
import { lockSdkPacking } from "./support/pack-lock.ts";
import { freePort, repoRoot, startAllInOne, type AllInOne } from "./support/processes.ts";

const t = suite<AllInOne & { mock: MockServer }>("install each client from the checkout and run its README's first example");

t.before(async (ctx) => {
  Object.assign(ctx, await startAllInOne({ MONGODB_URL: await testMongoUrl(), MONGODB_DB_PREFIX: `i${randomBytes(4).toString("hex")}` }));
  ctx.mock = await startMockOpenAI();
});
t.after(async (ctx) => {
  await ctx.mock?.close();
  assert.is(await ctx.proc?.stop(), 0, ctx.proc?.output());
});

/** The fenced block of `lang` right after `<!-- name -->` in a README. */
function marked(readme: string, name: string, lang: string): string {
  const block = new RegExp(`<!-- ${name} -->\\s*\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(readme)?.[1];
  assert.ok(block, `the README has a ${lang} block marked <!-- ${name} -->`);
  return block!;
}

/** A product with `capped` at the cap of a plan of $0.01 and `paying` on one of $5, gpt-4.1 priced (the model of the README examples and of the quick start's plan). */
async function product(api: Api) {
  const key = api.withKey((await api.post("/products", { name: `install ${randomBytes(3).toString("hex")}` })).body.api_key);
  const day = 86_400_000;
  const plans = await key.post("/config/plans", {
    plans: [
      { name: "paid", max_spend_per_period: 5, cost_rates: { "gpt-4.1": { input: 2.5, output: 10 } } },
      // Reached rather than 0: a cap of 0 never lifts, so its 429 has no Retry-After to check.
      { name: "tiny", max_spend_per_period: 0.01 },
    ],
  });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  const [paid, none] = plans.body.plans.map((p: { id: string }) => p.id);
  for (const [user, plan] of [["paying", paid], ["capped", none]]) {
    assert.is((await key.post("/users", { external_user_id: user })).status, 201);
    const period = { plan_id: plan, period_start: new Date(Date.now() - day).toISOString(), period_end: new Date(Date.now() + day).toISOString() };
    assert.is((await key.post(`/users/${user}/subscription`, period)).status, 200);
  }
  assert.is((await key.post("/events", { user_id: "capped", cost: 1 })).status, 201);
  return key;
}

async function installAndRun(ctx: AllInOne & { mock: MockServer }, readmePath: string, lang: string): Promise<void> {
  const readme = await readFile(path.join(repoRoot, readmePath), "utf8");
  const install = marked(readme, "install", "bash");
  assert.match(install, /^CHECKOUT=/m, "the install block names the checkout in CHECKOUT=");
  const example = marked(readme, "first-example", lang);
  // Its first line says the file and how to start it: `// app.mjs: node app.mjs, then`.
  const [, file, command] = /^(?:\/\/|#) (\S+): (.+?), then$/m.exec(example.split("\n")[0]!) ?? [];
  assert.ok(file && command, `the first example's first line names its file and command: ${example.split("\n")[0]}`);

  const key = await product(ctx.api);
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-install-"));
  const port = await freePort();
  await writeFile(path.join(dir, file!), example);
  const script = `${install.replace(/^CHECKOUT=.*$/m, `CHECKOUT='${repoRoot}'`)}\nexec ${command}\n`;
  // A block that packs the client holds the packing lock until the app answers (it has packed).
  const unlock = /\bpack\b/.test(install) ? await lockSdkPacking() : async () => undefined;
  const app = spawn("bash", ["-e", "-o", "pipefail", "-c", script], {
    cwd: dir,
    env: {
      ...process.env,
      // npm and the app on the project's Node (22 or newer).
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`,
      METER_API_KEY: key.key!,
      METER_BASE_URL: ctx.api.baseUrl,
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: `${ctx.mock.url}/v1`,
      PORT: String(port),
    },
  });
  let output = "";
  app.stdout.on("data", (d) => (output += d));
  app.stderr.on("data", (d) => (output += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => app.on("exit", (code, signal) => resolve({ code, signal })));
  let done = false;
  void exited.then(() => (done = true));
  try {
    const chat = (user: string) =>
      fetch(`http://127.0.0.1:${port}/chat`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-user-id": user },
        body: JSON.stringify({ message: "Hello!" }),
      });
    // The install (from the registries) and the start: minutes on a busy machine.
    const first = await eventually(
      async () => {
        if (done) throw new Error(`the install or the app stopped:\n${output}`);
        return chat("paying").catch(() => undefined);
      },
      15 * 60_000,
      "the app to answer",
    );
    await unlock();
    assert.is(first.status, 200, output);
    assert.equal(await first.json(), { reply: ctx.mock.reply.text });
    const calls = ctx.mock.requests.length;

    // Over the cap: the JSON 429 of the example's handler, and the model is not called.
    const blocked = await chat("capped");
    assert.is(blocked.status, 429, output);
    const body = (await blocked.json()) as { gate_reason: string; detail: string };
    assert.is(body.gate_reason, "total_spend");
    assert.match(body.detail, /limit reached/);
    assert.ok(Number(blocked.headers.get("retry-after")) > 0);
    assert.is(ctx.mock.requests.length, calls);

    // Stopped as a process manager stops it: what was queued is delivered on the way out.
    app.kill("SIGTERM");
    // Exit 0, or (uvicorn) the signal raised again once it has shut down.
    const { code, signal } = await exited;
    assert.ok(code === 0 || (code === null && signal === "SIGTERM"), `exit ${code} ${signal}:\n${output}`);
    const usage = await eventually(async () => {
      const u = await key.get("/users/paying/usage");
      return u.body.total_tokens > 0 ? u.body : undefined;
    }, 30_000, "the call's usage");
    const { input, output: out } = ctx.mock.reply.usage;
    assert.is(usage.total_tokens, input + out);
    assert.ok(Math.abs(usage.total_cost - (input * 2.5 + out * 10) / 1000) < 1e-9, JSON.stringify(usage));
  } finally {
    await unlock().catch(() => undefined);
    if (!done) app.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  }
}

t("TypeScript: the packed tarball installed into an empty project, the web app of the README", (ctx) =>
  installAndRun(ctx, "sdk/typescript/README.md", "js"),
);

t("Python: installed into an empty virtual environment, the web app of the README", (ctx) =>
  installAndRun(ctx, "sdk/python/README.md", "python"),
);

t.run();
