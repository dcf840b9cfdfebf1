// The console's browser tests' harness: Debian's chromium (CHROMIUM_PATH, default
// /usr/bin/chromium) driven by playwright-core, a page that records console errors and requests
// to another origin, and `check`: axe-core (no serious or critical violation), a screenshot at
// 1280x800 and at 390 px into console/screenshots/ (not committed), and no problem so far.
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import type { Test } from "uvu";
import * as assert from "uvu/assert";
import { buildConsoleIfStale } from "../../console/scripts/build.ts";
import { axeViolations, launchChromium, requireChromium } from "./browser.ts";
import { testMongoUrl } from "./database.ts";
import { eventually } from "./eventually.ts";
import type { Api } from "./http.ts";
import { repoRoot, startAllInOne, type AllInOne } from "./processes.ts";
import { must } from "./rest.ts";

export { requireChromium };

const SHOTS = path.join(repoRoot, "console", "screenshots");

/**
 * The console built (when its sources changed) and served by `npm start`'s all-in-one process
 * on the test database, under a fresh database prefix, checking every key at once (no
 * authentication cache), with `env` on top. Fails first when there is no Chromium to test with.
 */
export async function startConsoleAllInOne(env: Record<string, string> = {}): Promise<AllInOne> {
  requireChromium();
  await buildConsoleIfStale(() => {});
  return startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `c${randomBytes(4).toString("hex")}`,
    AUTH_CACHE_TTL_MS: "0",
    AUTH_NEGATIVE_CACHE_TTL_MS: "0",
    ...env,
  });
}

export interface ConsoleBrowser {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Console errors, page errors and requests to another origin since the last `check`. */
  problems: string[];
  /** Statuses whose console error ("… status of 404") a test expects for now. */
  allowedStatuses: Set<number>;
  /** Resources whose failing status a test expects whenever it comes (answers to requests still on their way when it moved on). */
  allowedUrls: RegExp | null;
}

/**
 * A browser on a 1280x800 page in en-US and Europe/Paris (figures and times are compared),
 * watching for problems against `base`'s origin; its fields are set on `into` (a test's context,
 * whose `allowedStatuses` the test replaces as it goes).
 */
export async function openConsoleBrowser<T extends object>(base: string, into: T): Promise<T & ConsoleBrowser> {
  await mkdir(SHOTS, { recursive: true });
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: "en-US", timezoneId: "Europe/Paris" });
  const page = await context.newPage();
  const b = Object.assign(into, { browser, context, page, problems: [] as string[], allowedStatuses: new Set<number>(), allowedUrls: null as RegExp | null });
  const origin = new URL(base).origin;
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const status = /status of (\d{3})/.exec(m.text())?.[1];
    if (status && (b.allowedStatuses.has(Number(status)) || b.allowedUrls?.test(m.location().url))) return;
    b.problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => b.problems.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    const url = new URL(r.url());
    if (url.protocol !== "data:" && url.origin !== origin) b.problems.push(`request to another origin: ${r.url()}`);
  });
  return b;
}

/** Axe on the page as it stands, a screenshot at 1280x800 and at 390 px, and no problem so far. */
export async function check(b: ConsoleBrowser, name: string) {
  const { page } = b;
  assert.equal(await axeViolations(page, ["serious", "critical"]), [], `accessibility of ${name}`);
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: path.join(SHOTS, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  const problems = b.problems.splice(0);
  assert.equal(problems, [], `console errors or foreign requests on ${name}`);
}

export async function signIn(page: Page, base: string, key: string) {
  await page.goto(`${base}/console/`);
  await page.getByLabel("Product API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
}

/** Waits until the focus is on the element named `name` (its aria-label, else its text): where a keyboard user lands. */
export async function focusLandsOn(page: Page, name: string): Promise<void> {
  const focused = () => page.evaluate(() => document.activeElement?.getAttribute("aria-label") ?? document.activeElement?.textContent?.trim() ?? "");
  await eventually(async () => (await focused()) === name, 10_000, `the focus on ${JSON.stringify(name)} (it is on ${JSON.stringify(await focused())})`);
}

/** Waits until the console marks `field` invalid (aria-invalid), as it does a field the API refused. */
export async function markedInvalid(field: Locator, what: string): Promise<void> {
  await eventually(async () => (await field.getAttribute("aria-invalid")) === "true", 10_000, what);
}

/** The error the console shows beside `field`: the element its aria-describedby names with an "-err" id. */
export async function fieldError(page: Page, field: Locator): Promise<string> {
  const id = (await field.getAttribute("aria-describedby"))!.split(" ").find((d) => d.endsWith("-err"))!;
  return (await page.locator(`#${id}`).textContent())!;
}

/** A console suite's context: the all-in-one process at `base`, its product's API (`api`, `key`) and the browser. */
export interface ConsoleSuite extends ConsoleBrowser {
  aio: AllInOne;
  base: string;
  api: Api;
  key: string;
}

/**
 * Before a suite's tests: the console's all-in-one process (startConsoleAllInOne with `env`), a
 * product named `product`, `seed` with its API (plans, users, usage), then a browser, signed in
 * with the product's key when `signedIn`. After them: the browser closed, the process stopped.
 */
export function withConsole<C extends ConsoleSuite>(
  t: Test<C>,
  product: string,
  opts: { env?: Record<string, string>; seed?: (ctx: C) => Promise<void>; signedIn?: boolean } = {},
): void {
  t.before(async (ctx) => {
    ctx.aio = await startConsoleAllInOne(opts.env);
    ctx.base = ctx.aio.base;
    ctx.key = (await must(ctx.aio.api.post("/products", { name: product }), 201)).api_key;
    ctx.api = ctx.aio.api.withKey(ctx.key);
    await opts.seed?.(ctx);
    await openConsoleBrowser(ctx.base, ctx);
    if (opts.signedIn) await signIn(ctx.page, ctx.base, ctx.key);
  });
  t.after(async (ctx) => {
    await ctx.browser?.close();
    await ctx.aio?.proc.stop();
  });
}
