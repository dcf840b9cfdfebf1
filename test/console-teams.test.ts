// Teams in the console, in a real browser against a real all-in-one process (the harness of
// test/console.test.ts): the list with prefix search and paging, a team created through the
// form, its subscription, a member added and removed, the links between a team and its
// members' pages. Each screen passes axe-core and is saved at 1280x800 and 390 px in
// console/screenshots/.
import { randomBytes } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { buildConsoleIfStale } from "../console/scripts/build.ts";
import { check, openConsoleBrowser, requireChromium, signIn, type ConsoleBrowser } from "./support/console-browser.ts";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import type { Api } from "./support/http.ts";
import { startAllInOne, type AllInOne } from "./support/processes.ts";

interface Ctx extends ConsoleBrowser {
  aio: AllInOne;
  base: string;
  api: Api;
}
const t = suite<Ctx>("console teams");

async function must(api: Api, method: "POST" | "GET" | "PUT", route: string, body?: unknown, status = method === "POST" ? 201 : 200) {
  const res = await api.request(method, route, { body });
  if (res.status !== status) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

t.before(async (ctx) => {
  requireChromium();
  await buildConsoleIfStale(() => {});
  ctx.aio = await startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `ct${randomBytes(4).toString("hex")}`,
    AUTH_CACHE_TTL_MS: "0",
    AUTH_NEGATIVE_CACHE_TTL_MS: "0",
  });
  ctx.base = ctx.aio.base;
  const product = await must(ctx.aio.api, "POST", "/products", { name: "Teams console test" });
  ctx.api = ctx.aio.api.withKey(product.api_key);
  await must(ctx.api, "POST", "/config/plans", {
    plans: [{ name: "team-500", max_spend_per_period: 500, limits: [{ name: "seat", metric: "spend", max: 50, window: "period", scope: "member" }] }],
  });
  for (const u of ["ann", "bob"]) await must(ctx.api, "POST", "/users", { external_user_id: u, name: u.toUpperCase() });
  // 51 teams of one prefix: the list pages at 50.
  for (let i = 0; i < 51; i++) await must(ctx.api, "POST", "/teams", { external_team_id: `org-${String(i).padStart(2, "0")}`, name: `Org ${i}` });
  await openConsoleBrowser(ctx.base, ctx);
  await signIn(ctx.page, ctx.base, product.api_key);
});

t.after(async (ctx) => {
  await ctx.browser?.close();
  await ctx.aio?.proc.stop();
});

t("the teams list: prefix search and paging", async (ctx) => {
  const { page } = ctx;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Teams" }).click();
  await page.getByRole("heading", { name: "Teams", level: 1 }).waitFor();
  const table = page.getByRole("table", { name: "Teams" });
  await table.getByRole("link", { name: "org-00" }).waitFor();
  assert.is(await table.getByRole("row").count(), 51, "50 rows and the header");
  await page.getByRole("navigation", { name: "Pages" }).getByRole("button", { name: /Next/ }).click();
  await table.getByRole("link", { name: "org-50" }).waitFor();
  assert.is(await table.getByRole("row").count(), 2);
  await page.getByLabel("Team id starts with").fill("org-1");
  await page.getByRole("search", { name: "Filter teams" }).getByRole("button", { name: "Search" }).click();
  await eventually(async () => (await table.getByRole("row").count()) === 11, 10_000, "org-10 to org-19");
  assert.match(page.url(), /prefix=org-1/);
  await check(ctx, "teams");
});

t("a team created through the form, subscribed, a member added, linked both ways, then removed", async (ctx) => {
  const { page } = ctx;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Teams" }).click();
  const create = page.getByRole("form", { name: "Create a team" });
  await create.getByLabel("External team id").fill("acme");
  await create.getByLabel("Name").fill("Acme Inc.");
  await create.getByRole("button", { name: "Create team" }).click();
  await page.getByRole("heading", { name: "acme", level: 1 }).waitFor();
  await page.getByText("Acme Inc.").waitFor();

  const sub = page.getByRole("form", { name: "Change the subscription" });
  await sub.getByLabel("Plan").selectOption({ label: "team-500 ($500.00 per period)" });
  await sub.getByRole("button", { name: "Save subscription" }).click();
  await sub.getByText("Subscription saved: team-500.").waitFor();
  await page.getByRole("region", { name: "Plan" }).getByText("team-500", { exact: true }).waitFor();
  await page.getByText("$500.00 a billing period for the team").waitFor();
  await page.getByText("seat: $50 a billing period for each member").waitFor();
  assert.is((await ctx.api.get("/teams/acme")).body.plan_name, "team-500");

  const add = page.getByRole("region", { name: "Add a member" });
  ctx.allowedStatuses = new Set([404]);
  await add.getByLabel("External user id").fill("nobody");
  await add.getByRole("button", { name: "Add member" }).click();
  await add.getByText(/not found.*Create the user first/).waitFor();
  ctx.allowedStatuses = new Set();
  for (const u of ["ann", "bob"]) {
    await add.getByLabel("External user id").fill(u);
    await add.getByRole("button", { name: "Add member" }).click();
    await page.getByRole("table", { name: "Members" }).getByRole("link", { name: u }).waitFor();
  }
  await page.getByRole("region", { name: "Plan" }).getByText("2", { exact: true }).waitFor();
  await check(ctx, "team");

  await page.getByRole("table", { name: "Members" }).getByRole("link", { name: "ann" }).click();
  await page.getByRole("heading", { name: "ann", level: 1 }).waitFor();
  const teamLink = page.getByRole("region", { name: "Plan and billing period" }).getByRole("link", { name: "acme" });
  await teamLink.waitFor();
  await check(ctx, "user-in-team");
  await teamLink.click();
  await page.getByRole("heading", { name: "acme", level: 1 }).waitFor();

  await page.getByRole("button", { name: "Remove bob from the team" }).click();
  await eventually(async () => (await page.getByRole("table", { name: "Members" }).getByRole("link").count()) === 1, 10_000, "bob gone from the members");
  assert.is((await ctx.api.get("/users/bob")).body.team_id, null);
  assert.is((await ctx.api.get("/teams/acme")).body.member_count, 1);
});

t.run();
