// The <meter-usage> widget in a real browser (Debian's chromium driven by playwright-core) on a
// page of another origin, served by this test on a port of its own, against the whole stack:
// it shows the user's bars and credit balance, resets in the viewer's locale and time zone, follows the host's CSS
// custom properties, refreshes on refresh() and every minute, says when its token is revoked,
// and axe-core finds nothing. The screenshot: console/screenshots/portal-widget.png (not committed;
// docs/portal-widget.png is a copy of one).
import { mkdir } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import path from "node:path";
import type { MongoClient } from "mongodb";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { buildWidgetIfStale } from "../gateway/widget/build.ts";
import { axeViolations, launchChromium } from "./support/browser.ts";
import { eventually } from "./support/eventually.ts";
import type { Api } from "./support/http.ts";
import { must, tokenUsageJson } from "./support/rest.ts";
import { repoRoot } from "./support/processes.ts";
import { withTestStack, type TestStack } from "./support/stack.ts";

const SCREENSHOT = path.join(repoRoot, "console", "screenshots", "portal-widget.png");
const LOCALE = "de-DE";
const TIME_ZONE = "Asia/Tokyo";
const DAY = 86_400_000;

interface Ctx {
  stack: TestStack;
  mongo: MongoClient;
  api: Api;
  host: Server;
  hostUrl: string;
  token: string;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  problems: string[];
}
const t = suite<Ctx>("portal widget in Chromium");
withTestStack(t);

/** The product's page: another origin than the API's, the widget's script from the API. */
function hostPage(apiUrl: string, token: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Your account</title>
<style>body{font-family:sans-serif;margin:24px;background:#f9fafb} meter-usage{--meter-usage-bar:rgb(21, 128, 61)}</style></head>
<body><main><h1>Your account</h1>
<meter-usage token="${token}"></meter-usage>
</main>
<script src="${apiUrl}/portal/widget.js"></script>
</body></html>`;
}

t.before(async (ctx) => {
  await buildWidgetIfStale();
  const { api } = await ctx.stack.newProduct("Widget");
  ctx.api = api;
  const { plans } = await must(
    api.post("/config/plans", {
      plans: [{ name: "pro", max_spend_per_period: 10, credits_enabled: true, model_limits: { "gpt-4.1": { max_tokens_per_period: 100_000 } }, limits: [{ name: "daily", metric: "spend", max: 2, window: "day" }] }],
    }),
    201,
  );
  await must(api.post("/users", { external_user_id: "alice" }), 201);
  await must(
    api.post("/users/alice/subscription", { plan_id: plans[0].id, period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() }),
    200,
  );
  await must(api.post("/users/alice/credits", { id: "top-up-1", amount: 3.2 }), 201);
  await must(api.post("/events/batch", [tokenUsageJson("alice", "gpt-4.1", 1.5, 20_000), tokenUsageJson("alice", "gpt-4o-mini", 0.25, 5_000)]), 200);
  await eventually(async () => (await api.get("/users/alice/usage")).body.total_cost === 1.75, 20_000, "alice's usage counted");
  ctx.token = (await must(api.post("/users/alice/portal-tokens", { ttl_seconds: 3_600 }), 201)).token;

  ctx.host = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(hostPage(ctx.stack.apiUrl, ctx.token)));
  await new Promise<void>((r) => ctx.host.listen(0, "127.0.0.1", r));
  // localhost rather than 127.0.0.1: another origin than the API's even on the same machine.
  ctx.hostUrl = `http://localhost:${(ctx.host.address() as { port: number }).port}/`;

  await mkdir(path.dirname(SCREENSHOT), { recursive: true });
  ctx.browser = await launchChromium();
  ctx.context = await ctx.browser.newContext({ viewport: { width: 900, height: 700 }, locale: LOCALE, timezoneId: TIME_ZONE });
  ctx.page = await ctx.context.newPage();
  ctx.problems = [];
  ctx.page.on("pageerror", (e) => ctx.problems.push(`page error: ${e.message}`));
  ctx.page.on("console", (m) => {
    // The revoked token's 401 is expected (the last test); anything else is a problem.
    if (m.type() === "error" && !/status of 401/.test(m.text())) ctx.problems.push(`console error: ${m.text()}`);
  });
});

t.after(async (ctx) => {
  await ctx.browser?.close();
  ctx.host?.close();
});

const shadowText = (page: Page) => page.locator("meter-usage").evaluate((el) => el.shadowRoot!.textContent ?? "");

t("a page of another origin loads the widget, which shows the user's bars and resets in the viewer's locale and zone", async ({ page, api, hostUrl, problems, stack }) => {
  assert.is.not(new URL(hostUrl).origin, new URL(stack.apiUrl).origin);
  await page.clock.install();
  await page.goto(hostUrl);
  const bars = page.locator("meter-usage").getByRole("progressbar");
  await bars.first().waitFor();
  const limits = (await must(api.get("/users/alice/limits"), 200)).limits as { reason: string; pct: number; resets_at: string | null; used: number; max: number }[];
  assert.is(await bars.count(), limits.length);
  const money = new Intl.NumberFormat(LOCALE, { style: "currency", currency: "USD" });
  const when = new Intl.DateTimeFormat(LOCALE, { dateStyle: "medium", timeStyle: "short", timeZone: TIME_ZONE });
  const total = limits.find((d) => d.reason === "total_spend")!;
  const bar = page.locator("meter-usage").getByRole("progressbar", { name: "Spend this billing period" });
  assert.is(await bar.getAttribute("aria-valuenow"), String(Math.round(total.pct * 100)));
  assert.match((await bar.getAttribute("aria-valuetext")) ?? "", `${money.format(total.used)} of ${money.format(total.max)}`);
  const text = await shadowText(page);
  assert.ok(text.includes("Your usage: pro plan"), text);
  for (const d of limits) {
    if (d.resets_at) assert.ok(text.includes(`Resets ${when.format(new Date(d.resets_at))}`), `${d.reason}'s reset in ${LOCALE}, ${TIME_ZONE}: ${text}`);
  }
  assert.ok(text.includes(money.format(1.75)), text);
  // The balance: $3.20 of credits, none drawn (the spend is within the plan's allowance).
  const balance = page.locator("meter-usage").locator("[data-part=balance]");
  assert.is(await balance.textContent(), `Credit balance${money.format(3.2)}`);
  // The host's custom property colours the bars.
  const colour = await page.locator("meter-usage").evaluate((el) => getComputedStyle(el.shadowRoot!.querySelector(".fill")!).backgroundColor);
  assert.is(colour, "rgb(21, 128, 61)");
  assert.equal(await axeViolations(page), []);
  await page.locator("meter-usage").screenshot({ path: SCREENSHOT });
  assert.equal(problems.splice(0), []);
});

t("refresh() and the minute's timer read /portal/me again and show new usage", async ({ page, api, problems }) => {
  await must(api.post("/events/batch", [tokenUsageJson("alice", "gpt-4.1", 2, 1_000)]), 200);
  await eventually(async () => (await api.get("/users/alice/usage")).body.total_cost === 3.75, 20_000, "the new usage counted");
  const money = new Intl.NumberFormat(LOCALE, { style: "currency", currency: "USD" });
  await page.locator("meter-usage").evaluate((el) => (el as HTMLElement & { refresh(): Promise<void> }).refresh());
  assert.ok((await shadowText(page)).includes(`${money.format(3.75)} of ${money.format(13.2)}`));

  await must(api.post("/events/batch", [tokenUsageJson("alice", "gpt-4.1", 1, 1_000)]), 200);
  await eventually(async () => (await api.get("/users/alice/usage")).body.total_cost === 4.75, 20_000, "more usage counted");
  // A minute passes on the page's clock: the widget asks again by itself.
  const asked = page.waitForResponse((r) => r.url().endsWith("/portal/me") && r.status() === 200);
  await page.clock.runFor(60_000);
  await asked;
  await eventually(async () => (await shadowText(page)).includes(`${money.format(4.75)} of ${money.format(13.2)}`), 10_000, "the refreshed figures shown");
  assert.equal(problems.splice(0), []);
});

t("a team member's team bars say so, a session cap is not drawn, and a token set after the element was placed is read at once", async ({ context, api, hostUrl, problems }) => {
  const { plans } = await must(
    api.post("/config/plans", { plans: [{ name: "seat", max_spend_per_period: 5, max_spend_per_session: 1 }, { name: "team", max_spend_per_period: 100 }] }),
    201,
  );
  const [seat, team] = plans as { id: string }[];
  await must(api.post("/teams", { external_team_id: "acme", name: "Acme" }), 201);
  const period = { period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() };
  await must(api.post("/teams/acme/subscription", { plan_id: team!.id, ...period }), 200);
  await must(api.post("/users", { external_user_id: "bob" }), 201);
  await must(api.post("/users/bob/subscription", { plan_id: seat!.id, ...period }), 200);
  await must(api.put("/users/bob/team", { team_id: "acme" }), 200);
  const token = (await must(api.post("/users/bob/portal-tokens", {}), 201)).token as string;
  const page = await context.newPage();
  try {
    // The host's page as before, its element without a token: the host sets it once it has one.
    await page.goto(hostUrl);
    const alert = page.locator("meter-usage").getByRole("alert");
    await page.locator("meter-usage").evaluate((el) => el.setAttribute("token", ""));
    await alert.waitFor();
    await page.locator("meter-usage").evaluate((el, t) => el.setAttribute("token", t), token);
    const bars = page.locator("meter-usage").getByRole("progressbar");
    await page.locator("meter-usage").getByRole("progressbar", { name: "Team · Spend this billing period" }).waitFor();
    const names = await bars.evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")));
    assert.equal(names.sort(), ["Spend this billing period", "Team · Spend this billing period"]);
    assert.equal(problems.splice(0), []);
  } finally {
    await page.close();
  }
});

t("a revoked token: the widget says the view expired, and axe still finds nothing", async ({ page, api }) => {
  await must(api.delete("/users/alice/portal-tokens"), 200);
  await eventually(
    async () => {
      await page.locator("meter-usage").evaluate((el) => (el as HTMLElement & { refresh(): Promise<void> }).refresh());
      return (await page.locator("meter-usage").getByRole("alert").count()) === 1;
    },
    5_000,
    "the widget showing the token expired",
  );
  assert.match((await page.locator("meter-usage").getByRole("alert").textContent()) ?? "", /expired/);
  assert.equal(await axeViolations(page), []);
  // An expired view stops asking: minutes pass without a read, and a new token is read at once.
  const asked: string[] = [];
  page.on("request", (r) => r.url().endsWith("/portal/me") && asked.push(r.headers().authorization ?? ""));
  await page.clock.runFor(180_000);
  const fresh = (await must(api.post("/users/alice/portal-tokens", {}), 201)).token as string;
  const answered = page.waitForResponse((r) => r.url().endsWith("/portal/me") && r.status() === 200);
  await page.locator("meter-usage").evaluate((el, t) => el.setAttribute("token", t), fresh);
  await answered;
  assert.equal(asked, [`Bearer ${fresh}`], "no read between the expiry and the new token");
  await page.locator("meter-usage").getByRole("progressbar").first().waitFor();
});

t.run();
