// Debian's Chromium driven by playwright-core, and axe-core run in a page: what the browser tests
// share. Chromium: CHROMIUM_PATH, default /usr/bin/chromium.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Throws when there is no Chromium, saying how to get it (uvu drops a before hook's error silently: it is printed too). */
export function requireChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const message = `no Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`;
  console.error(`\n${message}`);
  throw new Error(message);
}

/** Chromium, or the error of requireChromium. */
export async function launchChromium(): Promise<Browser> {
  requireChromium();
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

let axeSource: string | undefined;

/**
 * Every axe-core violation on the page as it stands (shadow roots included), as "id (impact) at
 * targets"; `impacts` keeps only those of these impacts.
 */
export async function axeViolations(page: Page, impacts?: readonly string[]): Promise<string[]> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  await page.evaluate(axeSource);
  const violations: { id: string; impact: string; nodes: { target: unknown[] }[] }[] = await page.evaluate(async () => {
    const r = await (window as unknown as { axe: { run: (o: object) => Promise<{ violations: [] }> } }).axe.run({ resultTypes: ["violations"] });
    return r.violations;
  });
  return violations
    .filter((v) => !impacts || impacts.includes(v.impact))
    .map((v) => `${v.id} (${v.impact}) at ${v.nodes.map((n) => JSON.stringify(n.target)).slice(0, 3).join(", ")}`);
}
