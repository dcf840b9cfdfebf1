// The web console in a real browser (Debian's chromium driven by playwright-core) against a
// real all-in-one process with real data: every screen shows what the REST API answers, the
// flows a team runs work end to end, and each screen passes axe-core with no serious or
// critical violation, logs no error and asks nothing of another origin.
// Chromium: CHROMIUM_PATH, default /usr/bin/chromium. Screenshots: console/screenshots/ (not committed).
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { check, fieldError, focusLandsOn, markedInvalid, signIn, withConsole, type ConsoleSuite } from "./support/console-browser.ts";
import { eventually } from "./support/eventually.ts";
import { must } from "./support/rest.ts";

// The browser formats as the viewer's locale and zone; the test fixes both to compare figures.
const usd = (n: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 9 }).format(n);

interface Ctx extends ConsoleSuite {
  receiver: Server;
  received: string[];
  receiverUrl: string;
}
const t = suite<Ctx>("console");

const monthBounds = () => {
  const now = new Date();
  return [new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(), new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString()];
};
const usage = (user: string, model: string, cost: number, tokens: number) => ({
  id: randomUUID(),
  user_id: user,
  timestamp: new Date().toISOString(),
  model,
  input_tokens: Math.round(tokens * 0.8),
  output_tokens: tokens - Math.round(tokens * 0.8),
  total_tokens: tokens,
  cost_tokens: cost,
  cost_total: cost,
});

// The webhook receiver first: the all-in-one process is started by withConsole below.
t.before(async (ctx) => {
  ctx.received = [];
  ctx.receiver = createServer((req, res) => {
    ctx.received.push(String(req.headers["x-service-event"]));
    req.resume();
    req.on("end", () => res.writeHead(200).end("ok"));
  });
  await new Promise<void>((r) => ctx.receiver.listen(0, "127.0.0.1", r));
  ctx.receiverUrl = `http://127.0.0.1:${(ctx.receiver.address() as { port: number }).port}/hooks`;
});

withConsole(t, "Console test", {
  env: { WEBHOOKS_ALLOW_INSECURE_URLS: "true", ROLL_INTERVAL_MS: "100" },
  seed: async (ctx) => {
    // Seed: two plans, three users, usage on two models, a hard-gated user, a webhook endpoint.
    const { plans } = await must(ctx.api.post("/config/plans", {
      plans: [
        { name: "starter", max_spend_per_period: 10, cost_rates: { "gpt-4.1": { input: 0.002, output: 0.008 } }, model_limits: { "gpt-4.1": { max_tokens_per_period: 100_000 } } },
        { name: "unlimited" },
      ],
    }), 201);
    const [start, end] = monthBounds();
    for (const [user, plan] of [["alice", plans[0].id], ["bob", plans[0].id], ["carol", undefined]] as const) {
      await must(ctx.api.post("/users", { external_user_id: user, name: user[0]!.toUpperCase() + user.slice(1) }), 201);
      if (plan) await must(ctx.api.post(`/users/${user}/subscription`, { plan_id: plan, period_start: start, period_end: end }), 200);
    }
    await must(ctx.api.post("/events/batch", [usage("alice", "gpt-4.1", 1.5, 20_000), usage("alice", "gpt-4o-mini", 1, 5_000), usage("bob", "gpt-4.1", 10.5, 60_000)]), 200);
    await must(ctx.api.post("/gate-events/batch", [{ id: randomUUID(), user_id: "bob", timestamp: new Date().toISOString(), status: "hard_gate", gate_reason: "total_spend", usage_pct: 1.05, current_value: 10.5, limit_value: 10, blocked: true, message: "period budget spent" }]), 200);
    await must(ctx.api.post("/webhooks/endpoints", { url: ctx.receiverUrl, subscribed_events: ["gate_event.hard_gate"], description: "local receiver" }), 201);
    // The overview reads rollups: wait until the seeded spend is in them.
    await eventually(async () => (await ctx.api.get("/analytics/summary?days=30")).body.total_cost === 13, 30_000, "rollups of the seeded events");
  },
});

t.after((ctx) => {
  ctx.receiver?.close();
});

t("a first-time operator creates a product and sees its key once", async (ctx) => {
  const { page } = ctx;
  await page.goto(`${ctx.base}/console/`);
  await check(ctx, "sign-in");
  await page.getByRole("button", { name: "Create a product" }).click();
  await page.getByLabel("Product name").fill("Fresh product");
  await page.getByRole("button", { name: "Create product" }).click();
  const key = (await page.getByLabel("API key of Fresh product value").textContent())!;
  assert.match(key, /^mk_[A-Za-z0-9_-]{43}$/);
  await page.getByText("This key is shown once").waitFor();
  await page.getByRole("button", { name: "Copy" }).waitFor();
  await check(ctx, "product-created");
  assert.is((await ctx.aio.api.withKey(key).get("/products")).body[0].name, "Fresh product");
  await page.getByRole("button", { name: "Continue to the console" }).click();
  await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
  // A new product's screens are empty, and say what to do next.
  await page.getByText("No model usage in this window").waitFor();
  await check(ctx, "overview-empty");
  await page.getByRole("link", { name: "quick start" }).first().click();
  await page.getByRole("heading", { name: "Quick start", level: 1 }).waitFor();
  await page.getByText(`API=${ctx.base}/api/v1`).waitFor();
  await check(ctx, "quickstart");
  // The key is held for the tab only, never in a URL or localStorage.
  assert.not.ok(page.url().includes(key));
  assert.is(await page.evaluate(() => JSON.stringify(localStorage).includes("mk_")), false);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("Signed out").waitFor();
  assert.is(await page.evaluate(() => sessionStorage.length), 0);
});

t("a bad key stays on sign-in with the API's reason", async (ctx) => {
  const { page } = ctx;
  ctx.allowedStatuses = new Set([401]);
  await page.goto(`${ctx.base}/console/`);
  await page.getByLabel("Product API key").fill(`mk_${"A".repeat(43)}`);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("This key was refused").waitFor();
  // An ingest key (what an app is given) is told apart: the console needs an admin key.
  ctx.allowedStatuses = new Set([403]);
  const ingest = (await ctx.api.post("/keys", { name: "app", scope: "ingest" })).body.key as string;
  await page.getByLabel("Product API key").fill(ingest);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText(/may only meter \(scope ingest\): the console needs an admin key/).waitFor();
  ctx.allowedStatuses = new Set();
});

t("the overview shows what the analytics routes answer", async (ctx) => {
  const { page } = ctx;
  await signIn(page, ctx.base, ctx.key);
  const summary = (await ctx.api.get("/analytics/summary?days=30")).body;
  const cost = page.getByRole("region", { name: "Cost", exact: true });
  await cost.getByText(usd(summary.total_cost), { exact: true }).waitFor();
  await page.getByRole("region", { name: "Active users" }).getByText(String(summary.active_users), { exact: true }).waitFor();
  const models = page.getByRole("table", { name: "Cost and tokens per model" });
  for (const m of (await ctx.api.get("/analytics/breakdown?days=30")).body.models) await models.getByRole("cell", { name: m.model, exact: true }).waitFor();
  const top = page.getByRole("table", { name: "Users with the highest cost" });
  await top.getByRole("link", { name: "bob" }).waitFor();
  await page.getByRole("list", { name: "Subscribers per plan" }).getByText("2 users").waitFor();
  await page.getByRole("img", { name: /^Cost per day/ }).waitFor();
  await check(ctx, "overview");
  // The window and the source live in the URL.
  await page.getByRole("button", { name: "7 days" }).click();
  await page.waitForURL(/days=7/);
  await page.getByLabel("Source", { exact: true }).selectOption("manual");
  await page.waitForURL(/source=manual/);
  await cost.getByText(usd(0), { exact: true }).waitFor();
  // Gates are calls' and have no source: the card says it counts every one.
  await page.getByRole("region", { name: "Gates per day (every source)" }).waitFor();
  await page.getByLabel("Source", { exact: true }).selectOption("");
  await page.getByRole("region", { name: "Gates per day", exact: true }).waitFor();
  // A top user links to its page.
  await top.getByRole("link", { name: "bob" }).click();
  await page.getByRole("heading", { name: "bob", level: 1 }).waitFor();
});

t("a hard-gated user shows the hard gate on the gauge and in the gate events", async (ctx) => {
  const { page } = ctx;
  await page.goto(`${ctx.base}/console/users/bob`);
  const gauge = page.getByRole("meter", { name: "Period spend" });
  await gauge.waitFor();
  assert.match((await gauge.getAttribute("aria-valuetext"))!, /\$10\.50 of \$10\.00/);
  await page.locator(".gauge-hard").getByText("Hard gate").first().waitFor();
  await page.getByText(/^Calls are blocked by Period spend \(total_spend\): resets in /).waitFor();
  // Each model's token cap has its own gauge: bob used 60,000 of gpt-4.1's 100,000.
  const tokens = page.getByRole("meter", { name: "gpt-4.1 tokens" });
  assert.match((await tokens.getAttribute("aria-valuetext"))!, /60K of 100K/);
  const events = page.getByRole("table", { name: "Gate events, newest first" });
  await events.getByText("Hard gate").waitFor();
  await events.getByText("period budget spent").waitFor();
  await page.getByLabel("Status").selectOption("soft_gate");
  await page.getByText("No gate events match").waitFor();
  await page.getByLabel("Status").selectOption("");
  await events.waitFor();
  await check(ctx, "user-hard-gated");
});

t("the users list shows GET /users", async (ctx) => {
  const { page } = ctx;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Users" }).click();
  await page.getByRole("heading", { name: "Users", level: 1 }).waitFor();
  const table = page.getByRole("table", { name: "Users" });
  for (const u of ["alice", "bob", "carol"]) await table.getByRole("link", { name: u, exact: true }).waitFor();
  await page.getByLabel("User id starts with").fill("al");
  await page.getByRole("button", { name: "Search" }).click();
  await page.waitForURL(/prefix=al/);
  await table.getByRole("link", { name: "bob" }).waitFor({ state: "detached" });
  await table.getByRole("link", { name: "alice" }).waitFor();
  // Each row carries the period's spend from the API: alice's $2.50.
  await table.getByRole("row", { name: /alice/ }).getByRole("cell", { name: usd(2.5), exact: true }).waitFor();
  await page.getByLabel("User id starts with").fill("");
  await page.getByRole("button", { name: "Search" }).click();
  await page.getByLabel("Plan", { exact: true }).selectOption("starter");
  await page.waitForURL(/plan=starter/);
  await table.getByRole("link", { name: "carol" }).waitFor({ state: "detached" });
  await table.getByRole("link", { name: "bob" }).waitFor();
  await check(ctx, "users");
  ctx.allowedStatuses = new Set();
});

t("a plan's 422 shows beside its field, then the plan is created and edited", async (ctx) => {
  const { page } = ctx;
  ctx.allowedStatuses = new Set([422]);
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Plans" }).click();
  const form = page.getByRole("form", { name: "Create a plan" });
  await form.getByLabel("Name").fill("team");
  await form.getByLabel("Max spend per period ($)").fill("5");
  await form.getByLabel("Soft gate at (fraction)").fill("1.5");
  // JSON that does not parse is said beside its field before anything is sent.
  const rates = form.getByLabel("Cost rates per 1K tokens (JSON)");
  await rates.fill('{"gpt-4.1": {"input": 0.002');
  await form.getByRole("button", { name: "Create plan" }).click();
  await markedInvalid(rates, "the cost rates field marked invalid");
  assert.match(await fieldError(page, rates), /not valid JSON/);
  await rates.fill('{"gpt-4.1": {"input": 0.002, "output": 0.008}}');
  await form.getByRole("button", { name: "Create plan" }).click();
  // The message sits in the soft gate field itself (its description), not in a banner alone.
  const soft = form.getByLabel("Soft gate at (fraction)");
  await markedInvalid(soft, "the soft gate field marked invalid");
  assert.match(await fieldError(page, soft), /1/);
  await check(ctx, "plans-422");
  // A soft gate above the hard gate: the service's 400 names the soft gate first, and lands there.
  ctx.allowedStatuses = new Set([400]);
  await soft.fill("0.9");
  // Edited, the soft gate is no longer the value refused: its message goes before the next submit.
  await eventually(async () => (await soft.getAttribute("aria-invalid")) === "false", 10_000, "the edited soft gate no longer marked");
  await form.getByLabel("Hard gate at (fraction)").fill("0.5");
  await form.getByRole("button", { name: "Create plan" }).click();
  await page.getByText("fix the fields marked above").waitFor();
  assert.match(await fieldError(page, soft), /must not exceed/);
  await form.getByLabel("Hard gate at (fraction)").fill("1");
  ctx.allowedStatuses = new Set();
  await soft.fill("0.8");
  await form.getByRole("button", { name: "Create plan" }).click();
  await page.getByText("Plan team created.").waitFor();
  await page.getByRole("table", { name: "Plans" }).getByRole("cell", { name: "team", exact: true }).waitFor();
  const created = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "team");
  assert.is(created.max_spend_per_period, 5);
  assert.is(created.default_tool_cost, 0.02);
  // Edit: only the changed field is sent; the API keeps the others.
  await page.getByRole("button", { name: "Edit plan team" }).click();
  const edit = page.getByRole("form", { name: "Edit plan team" });
  await edit.getByLabel("Session timeout (minutes)").fill("45");
  await edit.getByRole("button", { name: "Save changes" }).click();
  await page.getByText("Plan team saved (1 field).").waitFor();
  const edited = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "team");
  assert.is(edited.session_timeout_minutes, 45);
  assert.is(edited.max_spend_per_period, 5);
  // An emptied field: a map is cleared ({}), a number that has no "none" is asked for, not left as it was under "saved".
  const team = async () => (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "team");
  await edit.getByLabel("Model token limits (JSON)").fill('{"gpt-4.1": {"max_tokens_per_period": 1000}}');
  await edit.getByRole("button", { name: "Save changes" }).click();
  await eventually(async () => (await team()).model_limits["gpt-4.1"] !== undefined, 10_000, "the model limit saved");
  await edit.getByLabel("Model token limits (JSON)").fill("");
  await edit.getByLabel("Session timeout (minutes)").fill("");
  await edit.getByRole("button", { name: "Save changes" }).click();
  await markedInvalid(edit.getByLabel("Session timeout (minutes)"), "the emptied timeout marked");
  assert.match(await fieldError(page, edit.getByLabel("Session timeout (minutes)")), /Required: type a value \(the default is 30\)/);
  await edit.getByLabel("Session timeout (minutes)").fill("45");
  await edit.getByRole("button", { name: "Save changes" }).click();
  await eventually(async () => Object.keys((await team()).model_limits).length === 0, 10_000, "the model limits cleared");
  assert.is((await team()).session_timeout_minutes, 45);
  await check(ctx, "plans");
});

t("a plan's windows through the form: refused with the service's word beside the limit, then created and read as sentences", async (ctx) => {
  const { page } = ctx;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Plans" }).click();
  const form = page.getByRole("form", { name: "Create a plan" });
  await form.getByLabel("Name", { exact: true }).fill("windows");
  await form.getByLabel("Max spend per period ($)").fill("10");
  await form.getByLabel("Cost rates per 1K tokens (JSON)").fill('{"gpt-4.1": {"input": 0.002, "output": 0.008}}');
  const rows: [name: string, metric: string, max: string, window: string, duration?: string][] = [
    ["daily", "spend", "1", "day"],
    ["daily", "spend", "2", "rolling", "300"],
    ["burst", "requests", "60", "minute"],
  ];
  for (const [i, [name, metric, max, window, duration]] of rows.entries()) {
    await form.getByRole("button", { name: "Add a limit" }).click();
    const row = form.getByRole("group", { name: `Limit ${i + 1}` });
    await row.getByLabel("Name").fill(name);
    await row.getByLabel("Metric").selectOption(metric);
    await row.getByLabel("Window").selectOption(window);
    // The duration is asked for a rolling window only.
    assert.is(await row.getByLabel("Minutes").count(), duration ? 1 : 0, `duration field of limit ${i + 1}`);
    if (duration) await row.getByLabel("Minutes").fill(duration);
    await row.getByLabel(/^Max/).fill(max);
  }
  await form.getByRole("group", { name: "Limit 2" }).getByText("$2 in any 5 hours").waitFor();
  // A time zone the browser does not know is refused before anything is sent.
  const zone = form.getByLabel("Time zone");
  await zone.fill("Mars/Olympus_Mons");
  let sent = 0;
  const count = (r: { url(): string; method(): string }) => void (r.method() === "POST" && r.url().endsWith("/config/plans") && sent++);
  page.on("request", count);
  await form.getByRole("button", { name: "Create plan" }).click();
  await form.getByText('"Mars/Olympus_Mons" is not a time zone').waitFor();
  assert.is(await zone.getAttribute("aria-invalid"), "true");
  assert.is(sent, 0, "no request with an unknown time zone");
  // A limit's max that is not a number: the 422 names the third row's max, and the form marks it until it is edited.
  ctx.allowedStatuses = new Set([422]);
  await zone.fill("Europe/Paris");
  const thirdMax = form.getByRole("group", { name: "Limit 3" }).getByLabel(/^Max/);
  await thirdMax.fill("sixty");
  await form.getByRole("button", { name: "Create plan" }).click();
  await markedInvalid(thirdMax, "the third limit's max marked invalid");
  await form.getByRole("alert").filter({ hasText: "fix the fields marked above" }).waitFor();
  await thirdMax.fill("60");
  await eventually(async () => (await thirdMax.getAttribute("aria-invalid")) === "false", 10_000, "the edited max no longer marked");
  await form.getByRole("alert").filter({ hasText: "fix the fields marked above" }).waitFor({ state: "detached" });
  // Two limits named "daily": the service's 400 names the second and its name, and the form puts it there.
  ctx.allowedStatuses = new Set([400]);
  await form.getByRole("button", { name: "Create plan" }).click();
  const secondName = form.getByRole("group", { name: "Limit 2" }).getByLabel("Name");
  await markedInvalid(secondName, "the second limit's name marked invalid");
  page.off("request", count);
  assert.is(sent, 2);
  assert.match(await fieldError(page, secondName), /duplicate of limit 1\b/);
  assert.is(await form.getByRole("group", { name: "Limit 1" }).getByLabel("Name").getAttribute("aria-invalid"), "false");
  await form.getByRole("alert").filter({ hasText: "fix the fields marked above" }).waitFor();
  await check(ctx, "plan-windows-refused");
  ctx.allowedStatuses = new Set();
  await secondName.fill("five-hour");
  // Edited, the name is no longer the one refused: its message goes, and with no field marked the alert too.
  await eventually(async () => (await secondName.getAttribute("aria-invalid")) === "false", 10_000, "the edited limit name no longer marked");
  await form.getByRole("alert").filter({ hasText: "fix the fields marked above" }).waitFor({ state: "detached" });
  await form.getByRole("button", { name: "Create plan" }).click();
  await page.getByText("Plan windows created.").waitFor();
  const created = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "windows");
  assert.is(created.time_zone, "Europe/Paris");
  assert.equal(created.limits, [
    { name: "daily", metric: "spend", max: 1, window: "day", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, scope: "team" },
    { name: "five-hour", metric: "spend", max: 2, window: "rolling", duration_minutes: 300, model: null, soft_gate_at: null, hard_gate_at: null, scope: "team" },
    { name: "burst", metric: "requests", max: 60, window: "minute", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, scope: "team" },
  ]);
  const windows = page.getByRole("list", { name: "Windows of windows" });
  for (const line of ["daily: $1 a day", "five-hour: $2 in any 5 hours", "burst: 60 requests a minute", "days in Europe/Paris"]) await windows.getByText(line).waitFor();
  // Editing: a limit removed and one added are one PATCH of `limits` whole; the rows come back as saved.
  await page.getByRole("button", { name: "Edit plan windows" }).click();
  const edit = page.getByRole("form", { name: "Edit plan windows" });
  assert.is(await edit.getByRole("group", { name: "Limit 2" }).getByLabel("Minutes").inputValue(), "300");
  await edit.getByRole("button", { name: "Remove limit 3 (burst)" }).click();
  await edit.getByRole("button", { name: "Add a limit" }).click();
  const added = edit.getByRole("group", { name: "Limit 3" });
  await added.getByLabel("Name").fill("calls");
  await added.getByLabel("Metric").selectOption("requests");
  await added.getByLabel("Window").selectOption("hour");
  await added.getByLabel(/^Max/).fill("100");
  await edit.getByRole("button", { name: "Save changes" }).click();
  await page.getByText("Plan windows saved (1 field).").waitFor();
  const edited = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "windows");
  assert.equal(edited.limits.map((l: { name: string }) => l.name), ["daily", "five-hour", "calls"]);
  assert.is(edited.time_zone, "Europe/Paris");
  await windows.getByText("burst: 60 requests a minute").waitFor({ state: "detached" });
  await windows.getByText("calls: 100 requests an hour").waitFor();
  await check(ctx, "plans-windows");
  await edit.getByRole("button", { name: "Close" }).click();
});

t("a user on a plan with windows: every dimension a bar with its reset, the blocking one marked", async (ctx) => {
  const { page } = ctx;
  const plan = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "windows");
  const [start, end] = monthBounds();
  await must(ctx.api.post("/users", { external_user_id: "erin", name: "Erin" }), 201);
  await must(ctx.api.post("/users/erin/subscription", { plan_id: plan.id, period_start: start, period_end: end }), 200);
  // $1.80 over three calls: past the $1 day (hard), 90% of the $2 in 5 hours (soft), 3 of 100 calls an hour.
  await must(ctx.api.post("/events/batch", [usage("erin", "gpt-4.1", 0.6, 1_000), usage("erin", "gpt-4.1", 0.6, 1_000), usage("erin", "gpt-4.1", 0.6, 1_000)]), 200);
  type Dim = { reason: string; used: number; resets_at: string | null };
  let dims: Dim[] = [];
  await eventually(
    async () => {
      dims = (await ctx.api.get("/users/erin/limits")).body.limits;
      return dims.find((d) => d.reason === "limit:daily")?.used === 1.8;
    },
    30_000,
    "the events counted in the day window",
  );
  await page.goto(`${ctx.base}/console/users/erin`);
  const meter = (name: string) => page.getByRole("meter", { name, exact: true });
  const expected: [string, RegExp][] = [
    ["Period spend", /^\$1\.80 of \$10\.00 \(18%\)$/],
    ["daily: $1 a day", /^\$1\.80 of \$1\.00 \(180%\)$/],
    ["five-hour: $2 in any 5 hours", /^\$1\.80 of \$2\.00 \(90%\)$/],
    ["calls: 100 requests an hour", /^3 of 100 \(3%\)$/],
  ];
  for (const [name, text] of expected) {
    await meter(name).waitFor();
    assert.match((await meter(name).getAttribute("aria-valuetext"))!, text, name);
  }
  // The day cap blocks: its bar is marked and the card says so; the 5-hour window only warns.
  const gauge = (name: string) => page.locator(".gauge", { has: meter(name) });
  await gauge("daily: $1 a day").getByText("Hard gate · blocks calls").waitFor();
  assert.is(await page.locator(".gauge-blocking").count(), 1);
  await gauge("five-hour: $2 in any 5 hours").getByText("Soft gate", { exact: true }).waitFor();
  await page.getByText(/^Calls are blocked by daily \(limit:daily\): resets in /).waitFor();
  // Each reset: "resets in …" from the API's resets_at, the exact time in the viewer's locale and zone on hover.
  for (const [name, reason] of [["daily: $1 a day", "limit:daily"], ["five-hour: $2 in any 5 hours", "limit:five-hour"], ["Period spend", "total_spend"]] as const) {
    const at = dims.find((d) => d.reason === reason)!.resets_at!;
    const time = gauge(name).locator(`time[datetime="${at}"]`);
    assert.match((await time.textContent())!, /^(resets|oldest usage ages out) in (\d+ d( \d+ h)?|\d+ h( \d+ min)?|\d+ min|under a minute)$/, name);
    const local = new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeStyle: "short", timeZone: "Europe/Paris" }).format(new Date(at));
    assert.ok((await time.getAttribute("title"))!.startsWith(local), `${name}: title in the viewer's zone`);
  }
  // The day resets at midnight in the plan's zone (Europe/Paris), not UTC's.
  const dayEnds = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Paris", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(dims.find((d) => d.reason === "limit:daily")!.resets_at!));
  assert.is(dayEnds, "00:00");
  await check(ctx, "user-windows");
});

t("create a user, subscribe them, ingest events: the gauges and the overview move", async (ctx) => {
  const { page } = ctx;
  const before = (await ctx.api.get("/analytics/summary?days=30")).body.total_cost;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Users" }).click();
  const create = page.getByRole("form", { name: "Create a user" });
  await create.getByLabel("External user id").fill("dave");
  await create.getByLabel("Display name (optional)").fill("Dave");
  await create.getByRole("button", { name: "Create user" }).click();
  await page.getByRole("heading", { name: "dave", level: 1 }).waitFor();
  const sub = page.getByRole("form", { name: "Change the subscription" });
  await sub.getByLabel("Plan").selectOption({ label: "team ($5.00 per period)" });
  // The period is prefilled with this calendar month (UTC).
  const [start] = monthBounds();
  assert.is(await sub.getByLabel(/Period start/).inputValue(), start!.slice(0, 10));
  await sub.getByRole("button", { name: "Save subscription" }).click();
  await page.getByText("Subscription saved: team.").waitFor();
  assert.is((await ctx.api.get("/users/dave")).body.plan_name, "team");
  const gauge = page.getByRole("meter", { name: "Period spend" });
  await eventually(async () => /\$0\.00 of \$5\.00/.test((await gauge.getAttribute("aria-valuetext")) ?? ""), 10_000, "an empty gauge");

  await must(ctx.api.post("/events/batch", [usage("dave", "gpt-4.1", 3, 30_000)]), 200);
  await page.reload();
  await eventually(async () => /\$3\.00 of \$5\.00/.test((await gauge.getAttribute("aria-valuetext")) ?? ""), 15_000, "the gauge at $3 of $5");
  await page.getByRole("table", { name: "Usage per model" }).getByRole("cell", { name: "30,000" }).waitFor();
  await check(ctx, "user");
  ctx.allowedStatuses = new Set();

  // A leaked portal token is cut off from the user's page, after a confirmation.
  const token = (await must(ctx.api.post("/users/dave/portal-tokens", {}), 201)).token as string;
  const portal = () => fetch(`${ctx.base}/api/v1/portal/me`, { headers: { authorization: `Bearer ${token}` } });
  assert.is((await portal()).status, 200);
  const tokens = page.getByRole("region", { name: "Portal tokens" });
  await tokens.getByRole("button", { name: "Revoke portal tokens…" }).click();
  const revoking = tokens.getByRole("group", { name: "Confirm revoking the portal tokens" });
  await revoking.getByRole("button", { name: "Keep them" }).click();
  assert.is((await portal()).status, 200);
  await tokens.getByRole("button", { name: "Revoke portal tokens…" }).click();
  await revoking.getByRole("button", { name: "Yes, revoke" }).click();
  await focusLandsOn(page, "1 token revoked.");
  assert.is((await portal()).status, 401);

  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Overview" }).click();
  const cost = page.getByRole("region", { name: "Cost", exact: true });
  await eventually(
    async () => {
      await page.reload();
      await cost.getByText(/\$/).waitFor();
      return (await cost.textContent())!.includes(usd(before + 3));
    },
    30_000,
    "the overview's cost to include the new events",
  );
});

/** An instant as the subscription form says it: "2025-01-15 10:32:11 UTC". */
const exactUtc = (d: Date) => d.toISOString().replace("T", " ").replace(".000Z", "Z").replace("Z", " UTC");

t("the subscription form keeps the stored billing subscription id and the period's exact instants", async (ctx) => {
  const { page } = ctx;
  const plans = (await ctx.api.get("/config/plans")).body.plans as { id: string; name: string }[];
  const planId = (name: string) => plans.find((p) => p.name === name)!.id;
  // A period anchored mid-day (a payment processor's), not at midnight.
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 1, 10, 32, 11));
  const end = new Date(start.getTime() + 30 * 86_400_000);
  await must(ctx.api.post("/users", { external_user_id: "frank" }), 201);
  await must(ctx.api.post("/users/frank/subscription", { plan_id: planId("unlimited"), period_start: start.toISOString(), period_end: end.toISOString(), billing_subscription_id: "sub_frank_1" }), 200);
  await must(ctx.api.post("/events/batch", [usage("frank", "gpt-4.1", 1, 1_000)]), 200);

  await page.goto(`${ctx.base}/console/users/frank`);
  const sub = page.getByRole("form", { name: "Change the subscription" });
  const billing = sub.getByLabel("Billing subscription id (optional)");
  await eventually(async () => (await billing.inputValue()) === "sub_frank_1", 10_000, "the stored billing subscription id in its field");
  assert.is(await sub.getByLabel(/Period start/).inputValue(), start.toISOString().slice(0, 10));
  assert.is(await sub.getByLabel(/Period end/).inputValue(), end.toISOString().slice(0, 10));
  // Not at midnight: the exact period is said beside the dates, and on the plan's card in UTC.
  await sub.getByText(`Current period: ${exactUtc(start)} → ${exactUtc(end)}.`, { exact: false }).waitFor();
  const utc = new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeStyle: "medium", timeZone: "UTC" });
  await page.getByRole("region", { name: "Plan and billing period" }).getByText(`${utc.format(start)} → ${utc.format(end)} (UTC)`).waitFor();
  await check(ctx, "user-subscription-exact");

  // A plan change with the dates as they are: the same period, to the second, and the same id.
  const sent: Record<string, unknown>[] = [];
  const listen = (r: { url(): string; method(): string; postDataJSON(): Record<string, unknown> }) => void (r.method() === "POST" && r.url().endsWith("/users/frank/subscription") && sent.push(r.postDataJSON()));
  page.on("request", listen);
  await sub.getByLabel("Plan").selectOption({ label: "starter ($10.00 per period)" });
  await sub.getByRole("button", { name: "Save subscription" }).click();
  await page.getByText("Subscription saved: starter.").waitFor();
  assert.equal(sent, [{ plan_id: planId("starter"), period_start: start.toISOString(), period_end: end.toISOString(), billing_subscription_id: "sub_frank_1" }]);
  assert.is((await ctx.api.get("/users/frank")).body.billing_subscription_id, "sub_frank_1");
  const period = (await ctx.api.get("/users/frank/session")).body.billing_period;
  assert.equal([Date.parse(period.start), Date.parse(period.end)], [start.getTime(), end.getTime()], "the period's exact instants");
  // The same period keeps its spend under the new plan.
  const gauge = page.getByRole("meter", { name: "Period spend" });
  await eventually(async () => ((await gauge.getAttribute("aria-valuetext")) ?? "").startsWith("$1.00 of $10.00"), 10_000, "the period's $1 under the $10 cap");

  // The field emptied removes the stored id; a new start day starts at that day's midnight.
  await billing.fill("");
  await sub.getByLabel(/Period start/).fill(now.toISOString().slice(0, 10));
  const saved = page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith("/users/frank/subscription"));
  await sub.getByRole("button", { name: "Save subscription" }).click();
  assert.is((await saved).status(), 200);
  page.off("request", listen);
  assert.equal(sent[1], { plan_id: planId("starter"), period_start: `${now.toISOString().slice(0, 10)}T00:00:00Z`, period_end: end.toISOString(), billing_subscription_id: null });
  assert.is((await ctx.api.get("/users/frank")).body.billing_subscription_id, null);
});

t("gate events: a filtered page with nothing on it keeps the pager, and the reason filter suggests the user's own reasons", async (ctx) => {
  const { page } = ctx;
  const HOUR = 3_600_000;
  const starter = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "starter");
  const [start, end] = monthBounds();
  await must(ctx.api.post("/users", { external_user_id: "gina" }), 201);
  await must(ctx.api.post("/users/gina/subscription", { plan_id: starter.id, period_start: start, period_end: end }), 200);
  const gate = (at: number, status: string, reason: string) => ({ id: randomUUID(), user_id: "gina", timestamp: new Date(at).toISOString(), status, gate_reason: reason, usage_pct: 0.9, current_value: 9, limit_value: 10, blocked: status === "hard_gate" });
  // 48 hours of soft gates, a hard gate before them: a page reads at most 48 hours.
  const now = Date.now();
  const gates = Array.from({ length: 48 }, (_, i) => gate(now - (i + 1) * HOUR, "soft_gate", "total_spend"));
  gates.push(gate(now - 60 * HOUR, "hard_gate", "model_limit:gpt-4.1"));
  await must(ctx.api.post("/gate-events/batch", gates), 200);
  const first = (await ctx.api.get("/users/gina/gate-events?status=hard_gate&limit=25")).body;
  assert.is(first.events.length, 0);
  assert.ok(first.next_cursor, "an empty first page with pages after it");

  await page.goto(`${ctx.base}/console/users/gina`);
  const card = page.getByRole("region", { name: "Gate events" });
  await card.getByRole("table", { name: "Gate events, newest first" }).waitFor();
  await card.getByLabel("Status").selectOption("hard_gate");
  await card.getByText("Nothing on this page; older pages may hold more.").waitFor();
  await check(ctx, "user-gate-events-empty-page");
  await card.getByRole("button", { name: "Next →" }).click();
  await page.waitForURL(/gcursor=/);
  const table = card.getByRole("table", { name: "Gate events, newest first" });
  await table.getByRole("cell", { name: "model_limit:gpt-4.1", exact: true }).waitFor();
  assert.is(await table.getByRole("row").count(), 2);
  await card.getByRole("button", { name: "← Previous" }).click();
  await card.getByText("Nothing on this page; older pages may hold more.").waitFor();

  // The API compares gate_reason exactly: the suggestions are the reasons this user can have.
  const suggested = await card.getByLabel("Gate reason").evaluate((el) => [...(el as HTMLInputElement).list!.options].map((o) => o.value));
  assert.ok(suggested.includes("total_spend") && suggested.includes("model_limit:gpt-4.1"), JSON.stringify(suggested));
  for (const prefix of ["model_limit:", "limit:"]) assert.not.ok(suggested.includes(prefix), `no bare ${prefix} in ${JSON.stringify(suggested)}`);
  assert.not.ok(suggested.includes("session_spend"), "the starter plan caps no session");
});

t("period dates read in UTC west of Greenwich, as the subscription form says them", async (ctx) => {
  const context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: "en-US", timezoneId: "America/Los_Angeles" });
  try {
    const page = await context.newPage();
    await signIn(page, ctx.base, ctx.key);
    const [start, end] = monthBounds();
    const day = (iso: string) => new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeZone: "UTC" }).format(new Date(iso));
    await page.goto(`${ctx.base}/console/users?prefix=alice`);
    await page.getByRole("table", { name: "Users" }).getByRole("row", { name: /alice/ }).getByRole("cell", { name: `${day(start!)} – ${day(end!)}`, exact: true }).waitFor();
    await page.goto(`${ctx.base}/console/users/alice`);
    await page.getByRole("region", { name: "Plan and billing period" }).getByText(`${day(start!)} → ${day(end!)} (UTC)`).waitFor();
    assert.is(await page.getByRole("form", { name: "Change the subscription" }).getByLabel(/Period start/).inputValue(), start!.slice(0, 10));
    // The daily charts' days are UTC days (uPlot's axis is drawn on a canvas: seen in the screenshot).
    await page.goto(`${ctx.base}/console/?days=7`);
    await page.getByRole("img", { name: /^Cost per day/ }).waitFor();
    await page.screenshot({ path: "console/screenshots/overview-los-angeles.png", fullPage: true });
  } finally {
    await context.close();
  }
});

t("a webhook test against a local receiver reports success", async (ctx) => {
  const { page } = ctx;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Webhooks" }).click();
  await page.getByRole("link", { name: ctx.receiverUrl }).click();
  await page.getByRole("button", { name: "Send a test event" }).click();
  await page.getByText(/Test succeeded: status 200 in \d+ ms/).waitFor();
  assert.ok(ctx.received.length >= 1, "the receiver got the test delivery");
  await page.getByRole("button", { name: "Reveal secret" }).click();
  await page.getByRole("region", { name: "Signing secret" }).waitFor();
  await check(ctx, "webhooks");
  // Rotating is asked first: the old secret stops signing at once.
  const id = new URL(page.url()).pathname.split("/").pop()!;
  const secret = async () => (await ctx.api.get(`/webhooks/endpoints/${id}/secret`)).body.secret as string;
  const before = await secret();
  let rotations = 0;
  const count = (r: { url(): string; method(): string }) => void (r.method() === "POST" && r.url().endsWith("/rotate-secret") && rotations++);
  page.on("request", count);
  await page.getByRole("button", { name: "Rotate secret…" }).click();
  const confirm = page.getByRole("group", { name: "Confirm the rotation" });
  await confirm.getByText(/^Rotate the signing secret\? The current one stops verifying deliveries at once/).waitFor();
  await check(ctx, "webhooks-rotate-confirm");
  await confirm.getByRole("button", { name: "Keep the current secret" }).click();
  await confirm.waitFor({ state: "detached" });
  assert.is(rotations, 0, "stepping back sends nothing");
  assert.is(await secret(), before);
  await page.getByRole("button", { name: "Rotate secret…" }).click();
  await confirm.getByRole("button", { name: "Yes, rotate" }).click();
  await page.getByText("New secret: the previous one no longer verifies.").waitFor();
  await focusLandsOn(page, "Signing secret");
  page.off("request", count);
  assert.is(rotations, 1);
  const after = await secret();
  assert.is.not(after, before);
  await page.getByRole("region", { name: "Signing secret" }).getByText(after, { exact: true }).waitFor();
  // Disabling ends the deliveries waiting for a retry: asked first, and stepping back changes nothing.
  const endpoint = async () => (await ctx.api.get("/webhooks/endpoints")).body.find((e: { id: string }) => e.id === id) as { enabled: boolean; subscribed_events: string[] };
  await page.getByRole("button", { name: "Disable…" }).click();
  const disabling = page.getByRole("group", { name: "Confirm disabling" });
  await disabling.getByText(/deliveries waiting for a retry end as failed/).waitFor();
  await check(ctx, "webhooks-disable-confirm");
  await disabling.getByRole("button", { name: "Keep it enabled" }).click();
  await disabling.waitFor({ state: "detached" });
  assert.is((await endpoint()).enabled, true);
  await page.getByRole("button", { name: "Disable…" }).click();
  await disabling.getByRole("button", { name: "Yes, disable" }).click();
  // Exact: until the answer comes, the box's "Keep it enabled" is on the page too.
  await page.getByRole("button", { name: "Enable", exact: true }).waitFor();
  assert.is((await endpoint()).enabled, false);
  await page.getByRole("button", { name: "Enable" }).click();
  await page.getByRole("button", { name: "Disable…" }).waitFor();
  // So is unsubscribing from a type, for the same reason.
  const edit = page.getByRole("form", { name: "Edit the endpoint" });
  await edit.getByLabel("gate_event.soft_gate").check();
  await edit.getByLabel("gate_event.hard_gate").uncheck();
  await edit.getByRole("button", { name: "Save endpoint" }).click();
  const unsubscribing = page.getByRole("group", { name: "Confirm the unsubscription" });
  await unsubscribing.getByText(/^Stop delivering gate_event\.hard_gate\?/).waitFor();
  await check(ctx, "webhooks-unsubscribe-confirm");
  await unsubscribing.getByRole("button", { name: "Keep editing" }).click();
  await edit.getByLabel("gate_event.hard_gate").check();
  await edit.getByRole("button", { name: "Save endpoint" }).click();
  await edit.getByText("Saved.").waitFor();
  assert.equal((await endpoint()).subscribed_events.sort(), ["gate_event.hard_gate", "gate_event.soft_gate"]);
  // Deleting is asked too; the list it returns to says what went, where the focus lands.
  const listed = async () => (await ctx.api.get("/webhooks/endpoints")).body as { id: string; url: string }[];
  const url = (await listed()).find((e) => e.id === id)!.url;
  await page.getByRole("button", { name: "Delete…" }).click();
  await focusLandsOn(page, "Confirm deletion");
  await page.getByRole("group", { name: "Confirm deletion" }).getByRole("button", { name: "Yes, delete" }).click();
  await focusLandsOn(page, `Endpoint ${url} deleted, with its delivery log.`);
  await page.waitForURL(/\/console\/webhooks$/);
  assert.not.ok((await listed()).some((e) => e.id === id), "the endpoint is gone");
});

t("API keys: list, create one shown once, and a revoked key returns to sign-in", async (ctx) => {
  const { page } = ctx;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "API keys" }).click();
  const form = page.getByRole("form", { name: "Create a key" });
  await form.getByLabel("Key name").fill("console admin");
  await form.getByLabel("Scope").selectOption("admin");
  await form.getByRole("button", { name: "Create key" }).click();
  const secret = (await page.getByLabel("Key console admin value").textContent())!;
  assert.match(secret, /^mk_/);
  await page.getByRole("table", { name: "API keys" }).getByRole("cell", { name: "console admin", exact: true }).waitFor();
  // The key this console signed in with says so, and revoking it warns that it signs this browser out.
  const mine = page.getByRole("table", { name: "API keys" }).getByRole("row").filter({ hasText: "this console's key" });
  assert.is(await mine.count(), 1);
  await mine.getByRole("button", { name: /^Revoke key/ }).click();
  await mine.getByText("revoking it signs you out").waitFor();
  await mine.getByRole("button", { name: "Keep" }).click();
  await check(ctx, "keys");
  // Another key revoked here: its row goes, and the word that it went takes the focus.
  await must(ctx.api.post("/keys", { name: "old ci", scope: "ingest" }), 201);
  await page.goto(`${ctx.base}/console/keys`);
  const old = page.getByRole("table", { name: "API keys" }).getByRole("row").filter({ has: page.getByRole("cell", { name: "old ci", exact: true }) });
  await old.getByRole("button", { name: "Revoke key old ci" }).click();
  await old.getByRole("button", { name: "Yes, revoke" }).click();
  await focusLandsOn(page, "Key old ci revoked: requests with it are refused within seconds.");
  await old.waitFor({ state: "detached" });

  // Sign in with the new key, revoke it through the API: the next request returns to sign-in.
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, ctx.base, secret);
  // The overview's calls answered first: one of them refused would return to sign-in before the click.
  await page.waitForLoadState("networkidle");
  const id = (await ctx.api.get("/keys")).body.keys.find((k: { name: string }) => k.name === "console admin").id;
  assert.is((await ctx.api.delete(`/keys/${id}`)).status, 204);
  ctx.allowedStatuses = new Set([401]);
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Plans" }).click();
  await page.getByText("Your key was refused").waitFor();
  await page.getByLabel("Product API key").waitFor();
  ctx.allowedStatuses = new Set();
});

t("a fresh document asks for its screen's data once, and a key refused on arrival returns to sign-in", async (ctx) => {
  const { page } = ctx;
  const asked: string[] = [];
  const listen = (r: { url(): string; method(): string }) => {
    if (r.method() === "GET" && r.url().includes("/api/v1/")) asked.push(r.url().replace(`${ctx.base}/api/v1`, ""));
  };
  page.on("request", listen);
  await signIn(page, ctx.base, ctx.key);
  // The overview's own calls start as it renders, after its heading: every one asked before counting.
  const overview = ["summary", "timeseries", "gate-timeseries", "breakdown", "top-users", "top-teams", "plan-subscribers"].map((r) => `/analytics/${r}`);
  await eventually(async () => overview.every((r) => asked.some((a) => a.startsWith(r))), 10_000, "the overview's calls");
  asked.length = 0;
  // Reloads: each a fresh document of the screen, the key still held in the tab.
  await page.goto(`${ctx.base}/console/keys`);
  await page.getByRole("table", { name: "API keys" }).getByRole("cell").first().waitFor();
  assert.equal(asked, ["/keys"]);
  asked.length = 0;
  await page.goto(`${ctx.base}/console/users/bob`);
  await page.getByRole("table", { name: "Gate events, newest first" }).getByText("period budget spent").waitFor();
  await page.getByRole("region", { name: "Usage by model" }).getByText("gpt-4.1").first().waitFor();
  // Also the reads the screen makes only once others answered (the ledger, the last session's
  // spend, the plans): asked on arrival under the screen's own keys, so never asked twice.
  const userCalls = [
    "/users/bob",
    "/users/bob/session",
    "/users/bob/limits",
    "/users/bob/credits",
    "/users/bob/credits/ledger?limit=25",
    "/users/bob/usage?period=current_period&breakdown=model",
    "/users/bob/gate-events?gate_reason=session_spend&limit=1&blocked_only=false",
    "/config/plans",
  ];
  await eventually(async () => userCalls.every((c) => asked.includes(c)), 10_000, "the user screen's reads");
  for (const call of userCalls) assert.is(asked.filter((a) => a === call).length, 1, `${call} once in ${JSON.stringify(asked)}`);
  page.off("request", listen);
  await check(ctx, "user-fresh");

  // A key revoked while the tab was away: the screen's first call is refused before the app has
  // rendered, and the app still returns to sign-in with the reason.
  const created = await must(ctx.api.post("/keys", { name: "revoked on arrival", scope: "admin" }), 201);
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, ctx.base, created.key);
  await page.waitForLoadState("networkidle");
  assert.is((await ctx.api.delete(`/keys/${created.id}`)).status, 204);
  await eventually(async () => (await ctx.aio.api.withKey(created.key).get("/keys")).status === 401, 30_000, "the revoked key refused");
  ctx.allowedStatuses = new Set([401]);
  await page.goto(`${ctx.base}/console/keys`);
  await page.getByText("Your key was refused").waitFor();
  await page.getByLabel("Product API key").waitFor();
  ctx.allowedStatuses = new Set();
});

t.run();
