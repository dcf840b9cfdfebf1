// Prepaid credits in the console, in a real browser against a real all-in-one process (the
// harness of test/console.test.ts): a plan that draws credits made through the form; credits
// granted through the user's page after a confirmation (an existing id with other fields
// refused as the API says it); the balance and the period spend bar whose max includes it;
// usage drawing the balance and the ledger newest first, paged; a void after a confirmation.
// Each screen passes axe-core and is saved at 1280x800 and 390 px in console/screenshots/.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { check, fieldError, focusLandsOn, markedInvalid, withConsole, type ConsoleSuite } from "./support/console-browser.ts";
import { eventually } from "./support/eventually.ts";
import { must } from "./support/rest.ts";

interface Ctx extends ConsoleSuite {
  firstGrant: string;
}
const t = suite<Ctx>("console credits");

const USER = "pat";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

withConsole(t, "Credits console test", { signedIn: true });

t("a plan that draws credits through the form: a bad low mark refused beside its field, then created, shown and edited", async (ctx) => {
  const { page } = ctx;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Plans" }).click();
  const form = page.getByRole("form", { name: "Create a plan" });
  await form.getByLabel("Name", { exact: true }).fill("prepaid");
  await form.getByLabel("Max spend per period ($)").fill("1");
  const toggle = form.getByRole("checkbox", { name: /Draw prepaid credits/ });
  assert.is(await toggle.isChecked(), false, "credits are off by default");
  await toggle.check();
  const low = form.getByLabel("Credits low below ($)");
  await low.fill("-1");
  ctx.allowedStatuses = new Set([400, 422]);
  await form.getByRole("button", { name: "Create plan" }).click();
  await markedInvalid(low, "the low mark marked invalid");
  assert.match(await fieldError(page, low), /0/);
  await check(ctx, "plans-credits-refused");
  ctx.allowedStatuses = new Set();
  await low.fill("2");
  await form.getByRole("button", { name: "Create plan" }).click();
  await page.getByText("Plan prepaid created.").waitFor();
  const created = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "prepaid");
  assert.is(created.credits_enabled, true);
  assert.is(created.credits_low_at, 2);
  const row = page.getByRole("table", { name: "Plans" }).getByRole("row", { name: /prepaid/ });
  await row.getByRole("cell", { name: "on · low below $2.00", exact: true }).waitFor();
  // Edit: only the low mark changes.
  await page.getByRole("button", { name: "Edit plan prepaid" }).click();
  const edit = page.getByRole("form", { name: "Edit plan prepaid" });
  assert.is(await edit.getByRole("checkbox", { name: /Draw prepaid credits/ }).isChecked(), true);
  await edit.getByLabel("Credits low below ($)").fill("1.5");
  await edit.getByRole("button", { name: "Save changes" }).click();
  await page.getByText("Plan prepaid saved (1 field).").waitFor();
  await row.getByRole("cell", { name: "on · low below $1.50", exact: true }).waitFor();
  const edited = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "prepaid");
  assert.is(edited.credits_low_at, 1.5);
  assert.is(edited.credits_enabled, true);
  await check(ctx, "plans-credits");
  await edit.getByRole("button", { name: "Close" }).click();
});

t("credits granted after a confirmation: the balance, the grants and the period spend bar's max", async (ctx) => {
  const { page } = ctx;
  const plan = (await ctx.api.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === "prepaid");
  const now = new Date();
  const [start, end] = [new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)), new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))];
  await must(ctx.api.post("/users", { external_user_id: USER, name: "Pat" }), 201);
  // Without a plan, nothing draws credits: the page says so.
  await page.goto(`${ctx.base}/console/users/${USER}`);
  const credits = page.getByRole("region", { name: "Credits", exact: true });
  const noPlan = credits.getByText("This user has no plan: grants are kept, and drawn once the user is on a plan that draws credits.");
  await noPlan.waitFor();
  // Nothing drawn and nothing held: one line; the grant form opens on asking.
  assert.is(await page.getByRole("form", { name: "Grant credits" }).count(), 0);
  await credits.getByRole("button", { name: "Grant credits anyway…" }).click();
  await page.getByRole("form", { name: "Grant credits" }).waitFor();
  await must(ctx.api.post(`/users/${USER}/subscription`, { plan_id: plan.id, period_start: start.toISOString(), period_end: end.toISOString() }), 200);
  await page.reload();
  await credits.getByText("No grants yet.").waitFor();
  await page.getByRole("meter", { name: "Period spend", exact: true }).waitFor();
  assert.is(await noPlan.count(), 0, "a plan that draws credits: no notice");
  const ledger = page.getByRole("region", { name: "Credit ledger" });
  await ledger.getByText("No credit movements yet.").waitFor();

  // The id is a fresh one; nothing is sent before the confirmation.
  const form = page.getByRole("form", { name: "Grant credits" });
  const id = form.getByLabel("Grant id");
  ctx.firstGrant = await id.inputValue();
  assert.match(ctx.firstGrant, UUID);
  let posts = 0;
  const count = (r: { url(): string; method(): string }) => void (r.method() === "POST" && r.url().endsWith(`/users/${USER}/credits`) && posts++);
  page.on("request", count);
  // No amount: said beside the field, and no question asked.
  await form.getByRole("button", { name: "Grant credits…" }).click();
  assert.match(await fieldError(page, form.getByLabel("Amount ($)")), /an amount in dollars, more than 0/);
  assert.is(await form.getByRole("group", { name: "Confirm the grant" }).count(), 0);
  await form.getByLabel("Amount ($)").fill("5");
  await form.getByLabel("Kind").selectOption("promotional");
  await form.getByLabel("Priority").fill("10");
  await form.getByLabel("Description (optional)").fill("welcome credit");
  await form.getByRole("button", { name: "Grant credits…" }).click();
  const confirm = form.getByRole("group", { name: "Confirm the grant" });
  await confirm.getByText(`Grant $5.00 of promotional credits to ${USER}, priority 10, from now, never expiring, as grant ${ctx.firstGrant}.`).waitFor();
  assert.is(posts, 0, "nothing sent before the confirmation");
  await check(ctx, "user-credits-grant-confirm");
  await confirm.getByRole("button", { name: "Yes, grant" }).click();
  await form.getByText(`Granted $5.00 as grant ${ctx.firstGrant}.`).waitFor();
  assert.is(posts, 1);
  // A fresh id for the next grant.
  const next = await id.inputValue();
  assert.match(next, UUID);
  assert.is.not(next, ctx.firstGrant);

  // A paid grant with the payment's id and an expiry.
  const expires = new Date(Date.now() + 30 * 86_400_000);
  const local = new Intl.DateTimeFormat("sv-SE", { timeZone: "Europe/Paris", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" }).format(expires).replace(" ", "T");
  await id.fill("pay_123");
  await form.getByLabel("Amount ($)").fill("2.5");
  await form.getByLabel("Expires at (optional)").fill(local);
  await form.getByRole("button", { name: "Grant credits…" }).click();
  await confirm.getByRole("button", { name: "Yes, grant" }).click();
  await form.getByText("Granted $2.50 as grant pay_123.").waitFor();
  const paid = (await ctx.api.get(`/users/${USER}/credits`)).body.grants.find((g: { id: string }) => g.id === "pay_123");
  assert.is(paid.kind, "paid");
  assert.is(paid.priority, 50);
  assert.is(new Date(paid.expires_at).getTime() % 60_000, 0, "the expiry to the minute typed");
  assert.ok(Math.abs(new Date(paid.expires_at).getTime() - expires.getTime()) < 60_000, "the expiry typed in the viewer's zone");

  // The same id with other fields: the API's 409, as it says it.
  ctx.allowedStatuses = new Set([409]);
  await id.fill("pay_123");
  await form.getByLabel("Amount ($)").fill("3");
  await form.getByRole("button", { name: "Grant credits…" }).click();
  await confirm.getByRole("button", { name: "Yes, grant" }).click();
  const refusal = await ctx.api.post(`/users/${USER}/credits`, { id: "pay_123", amount: 3 });
  assert.is(refusal.status, 409);
  await form.getByRole("alert").getByText(`The API refused the grant (409): ${refusal.body.detail}`).waitFor();
  // An amount the API refuses (past its $1,000,000 a grant): beside its field.
  ctx.allowedStatuses = new Set([400, 422]);
  await id.fill(randomUUID());
  await form.getByLabel("Amount ($)").fill("2000000");
  await form.getByRole("button", { name: "Grant credits…" }).click();
  await confirm.getByRole("button", { name: "Yes, grant" }).click();
  await markedInvalid(form.getByLabel("Amount ($)"), "the amount marked invalid");
  page.off("request", count);
  ctx.allowedStatuses = new Set();
  // Edited, the amount is no longer the one refused: its message goes.
  await form.getByLabel("Amount ($)").fill("20");
  await eventually(async () => (await form.getByLabel("Amount ($)").getAttribute("aria-invalid")) === "false", 10_000, "the edited amount no longer marked");
  assert.is(await form.getByText("must be <= 1000000").count(), 0);
  await form.getByLabel("Amount ($)").fill("");

  // The balance, each grant with its status, and the period spend bar: $1 allowance + $7.50 of credits.
  await credits.getByText("$7.50", { exact: true }).waitFor();
  const grants = credits.getByRole("table", { name: "Credit grants, newest first" });
  const promo = grants.getByRole("row", { name: new RegExp(ctx.firstGrant) });
  await promo.waitFor();
  const cells = await promo.getByRole("cell").allTextContents();
  // Grant, status, kind, priority, amount, remaining, effective, expires, description, the void button.
  assert.equal([...cells.slice(0, 6), cells[7], cells[8]], [ctx.firstGrant, "active", "promotional", "10", "$5.00", "$5.00", "never", "welcome credit"]);
  const rows = await grants.getByRole("row").allTextContents();
  assert.match(rows[1]!, /pay_123/, "newest first");
  const meter = page.getByRole("meter", { name: "Period spend", exact: true });
  await eventually(async () => (await meter.getAttribute("aria-valuetext")) === "$0.00 of $8.50 (0%)", 10_000, "the cap with the balance");
  const note = page.locator(`#${await meter.getAttribute("aria-describedby")}`);
  assert.is(await note.textContent(), "Max includes credits: $1.00 allowance + $7.50 balance.");
  await check(ctx, "user-credits");
});

t("usage beyond the allowance draws the balance: shown to the nano-dollar, and the ledger newest first, paged", async (ctx) => {
  const { page } = ctx;
  // $1.750000123 against a $1 allowance: $0.750000123 drawn from the promotional grant (priority 10).
  const event = (cost: number) => ({ id: randomUUID(), user_id: USER, timestamp: new Date().toISOString(), model: "gpt-4.1", input_tokens: 100, output_tokens: 50, total_tokens: 150, cost_tokens: cost, cost_total: cost });
  await must(ctx.api.post("/events/batch", [event(1), event(0.750000123)]), 200);
  await eventually(async () => (await ctx.api.get(`/users/${USER}/credits`)).body.balance === 6.749999877, 30_000, "the draw in the balance");
  // Nine small grants more: twelve ledger entries, two pages of ten.
  for (let i = 1; i <= 9; i++) await must(ctx.api.post(`/users/${USER}/credits`, { id: `small-${i}`, amount: 0.01 }), 201);
  await page.reload();
  const credits = page.getByRole("region", { name: "Credits", exact: true });
  await credits.getByText("$6.839999877", { exact: true }).waitFor();
  const promo = credits.getByRole("table", { name: "Credit grants, newest first" }).getByRole("row", { name: new RegExp(ctx.firstGrant) });
  await promo.getByRole("cell", { name: "$4.249999877", exact: true }).waitFor();

  const ledger = page.getByRole("region", { name: "Credit ledger" });
  await ledger.getByLabel("Per page").selectOption("10");
  const table = ledger.getByRole("table", { name: "Credit ledger, newest first" });
  // Each page as the API answers it, in its order: two pages, ten entries and two.
  const pages = [(await ctx.api.get(`/users/${USER}/credits/ledger?limit=10`)).body];
  pages.push((await ctx.api.get(`/users/${USER}/credits/ledger?limit=10&cursor=${encodeURIComponent(pages[0].next_cursor)}`)).body);
  assert.equal(pages.map((p) => p.entries.length), [10, 2]);
  type Entry = { type: string; amount: number; grant_id: string | null };
  const shows = async (entries: Entry[]) => {
    await eventually(async () => (await table.getByRole("row").count()) === entries.length + 1, 10_000, `${entries.length} entries on the page`);
    const rows = await table.getByRole("row").allTextContents();
    for (const [i, e] of entries.entries()) assert.ok(rows[i + 1]!.includes(e.grant_id ?? "—") && rows[i + 1]!.includes(e.type === "usage" ? "Usage (hour)" : "Grant"), `row ${i + 1}: ${rows[i + 1]} for ${JSON.stringify(e)}`);
    // The usage, drawn from the promotional grant, to the nano-dollar.
    if (entries.some((e) => e.type === "usage")) {
      const usage = table.getByRole("row", { name: /Usage \(hour\)/ });
      await usage.getByRole("cell", { name: "-$0.750000123", exact: true }).waitFor();
      await usage.getByRole("cell", { name: ctx.firstGrant, exact: true }).waitFor();
    }
  };
  await shows(pages[0].entries);
  assert.ok([...pages[0].entries, ...pages[1].entries].some((e: Entry) => e.type === "usage" && e.amount === -0.750000123 && e.grant_id === ctx.firstGrant), "the draw in the ledger");
  await check(ctx, "user-credits-ledger");
  await ledger.getByRole("button", { name: "Next →" }).click();
  await page.waitForURL(/lcursor=/);
  await shows(pages[1].entries);
  await ledger.getByRole("button", { name: "← Previous" }).click();
  await shows(pages[0].entries);
});

t("a void after a confirmation: kept when the operator steps back, then voided with its remainder out of the balance", async (ctx) => {
  const { page } = ctx;
  const credits = page.getByRole("region", { name: "Credits", exact: true });
  let voids = 0;
  const count = (r: { url(): string; method(): string }) => void (r.method() === "POST" && r.url().endsWith("/void") && voids++);
  page.on("request", count);
  await credits.getByRole("button", { name: "Void grant pay_123" }).click();
  const confirm = credits.getByRole("group", { name: "Confirm the void" });
  await confirm.getByText("Void grant pay_123? Its remaining $2.50 leaves the balance for good.").waitFor();
  await check(ctx, "user-credits-void-confirm");
  await confirm.getByRole("button", { name: "Keep it" }).click();
  await confirm.waitFor({ state: "detached" });
  assert.is(voids, 0, "stepping back sends nothing");
  await credits.getByRole("button", { name: "Void grant pay_123" }).click();
  await confirm.getByRole("button", { name: "Yes, void it" }).click();
  await credits.getByText("Grant pay_123 voided: $2.50 left the balance.").waitFor();
  await focusLandsOn(page, "Grant pay_123 voided: $2.50 left the balance.");
  page.off("request", count);
  assert.is(voids, 1);
  const row = credits.getByRole("table", { name: "Credit grants, newest first" }).getByRole("row", { name: /pay_123/ });
  await row.getByRole("cell", { name: "voided", exact: true }).waitFor();
  assert.is(await credits.getByRole("button", { name: "Void grant pay_123" }).count(), 0, "a voided grant has nothing left to void");
  await credits.getByText("$4.339999877", { exact: true }).waitFor();
  assert.is((await ctx.api.get(`/users/${USER}/credits`)).body.balance, 4.339999877);
  const ledger = page.getByRole("region", { name: "Credit ledger" }).getByRole("table", { name: "Credit ledger, newest first" });
  const newest = ledger.getByRole("row").nth(1);
  await eventually(async () => /Void/.test((await newest.textContent()) ?? ""), 10_000, "the void on top of the ledger");
  await newest.getByRole("cell", { name: "-$2.50", exact: true }).waitFor();
  await newest.getByRole("cell", { name: "$4.339999877", exact: true }).waitFor();
  await check(ctx, "user-credits-voided");
});

t("a manual event beyond the allowance moves the balance on the page at once", async (ctx) => {
  const { page } = ctx;
  const credits = page.getByRole("region", { name: "Credits", exact: true });
  await credits.getByText("$4.339999877", { exact: true }).waitFor();
  const form = page.getByRole("form", { name: "Record a manual event" });
  await form.getByLabel("Cost in dollars (optional)").fill("0.5");
  await form.getByRole("button", { name: "Record event…" }).click();
  // A charge counts at once: asked first, with what it charges.
  const confirm = form.getByRole("group", { name: "Confirm the manual event" });
  await confirm.getByText(`Record a charge of $0.50 for ${USER}?`, { exact: false }).waitFor();
  // The question takes the focus: a keyboard user lands on what is asked.
  await eventually(async () => (await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))) === "Confirm the manual event", 5_000, "the question focused");
  await confirm.getByRole("button", { name: "Yes, record" }).click();
  await form.getByText(/^Recorded evt_/).waitFor();
  // The connection drops after the service recorded the event: confirmed again, the same form is
  // the same event (its idempotency key), not a second charge.
  let dropped = false;
  await page.route("**/api/v1/events", async (route) => {
    if (dropped) return route.continue();
    dropped = true;
    await route.fetch();
    await route.abort("connectionreset");
  });
  await form.getByLabel("Cost in dollars (optional)").fill("0.25");
  await form.getByRole("button", { name: "Record event…" }).click();
  await confirm.getByRole("button", { name: "Yes, record" }).click();
  await form.getByText("the service cannot be reached; try again when it answers").waitFor();
  // The browser logs the reset connection: this test's doing, not the console's.
  const reset = await eventually(async () => {
    const i = ctx.problems.findIndex((p) => p.includes("ERR_CONNECTION_RESET"));
    return i >= 0 ? i + 1 : 0;
  }, 5_000, "the reset logged");
  ctx.problems.splice(reset - 1, 1);
  await form.getByRole("button", { name: "Record event…" }).click();
  await confirm.getByRole("button", { name: "Yes, record" }).click();
  await form.getByText(/^Recorded evt_/).waitFor();
  await page.unroute("**/api/v1/events");
  // Tokens of a model the plan does not price: the question says they cost $0 before anything is sent.
  await form.getByLabel("Model (optional)").fill("no-such-model");
  await form.getByLabel("Input tokens").fill("1000");
  await form.getByRole("button", { name: "Record event…" }).click();
  await confirm.getByText(/priced by the plan's rates at \$0\.00 for .*The plan has no rate for no-such-model \(nor a default_cost_rate\): these tokens cost \$0\./).waitFor();
  await confirm.getByRole("button", { name: "Back to the form" }).click();
  await form.getByLabel("Model (optional)").fill("");
  await form.getByLabel("Input tokens").fill("");
  // No reload: the event's answer makes the credits stale with the bars.
  await credits.getByText("$3.589999877", { exact: true }).waitFor({ timeout: 10_000 });
  assert.is((await ctx.api.get(`/users/${USER}/credits`)).body.balance, 3.589999877);
});

t("a plan that draws credits but has no period cap: the page says nothing is drawn", async (ctx) => {
  const { page } = ctx;
  const [open] = (await must(ctx.api.post("/config/plans", { plans: [{ name: "prepaid-open", credits_enabled: true }] }), 201)).plans;
  await must(ctx.api.post("/users", { external_user_id: "quinn" }), 201);
  await must(ctx.api.post("/users/quinn/subscription", { plan_id: open.id }), 200);
  await page.goto(`${ctx.base}/console/users/quinn`);
  const credits = page.getByRole("region", { name: "Credits", exact: true });
  await credits.getByText(/^This user's plan has credits_enabled but no period cap \(max_spend_per_period\): with no allowance to go beyond, nothing is ever drawn\./).waitFor();
  await check(ctx, "user-credits-no-cap");
});

t("a user whose id holds a \"%\" opens as that user, not a decoded other one", async (ctx) => {
  const { page } = ctx;
  for (const id of ["50%off", "ext%40acme"]) await must(ctx.api.post("/users", { external_user_id: id }), 201);
  for (const id of ["50%off", "ext%40acme"]) {
    await page.goto(`${ctx.base}/console/users/${encodeURIComponent(id)}`);
    await page.getByRole("heading", { name: id, exact: true }).waitFor();
    // The user's record answered: the page read this user, not a decoded other one (404).
    await page.getByText("no plan (every call passes)").waitFor();
  }
});

t.run();
