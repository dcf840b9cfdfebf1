// The browser the console benches measure screens in: Debian's Chromium, the product's key in the
// console's session storage, and `window.__shown(selectors)`, which resolves with the page's own
// clock once every selector has an element (with its text, when given) in the DOM, watched by a
// MutationObserver set up before the page runs.
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { CHROMIUM } from "../../test/support/browser.ts";

export type Shown = { css: string; text?: string }[];

export async function consolePage(key: string): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript({
    content: `sessionStorage.setItem("meter.console.key", ${JSON.stringify(key)});
      window.__shown = (selectors) => new Promise((resolve) => {
        const seen = () => selectors.every((s) => [...document.querySelectorAll(s.css)].some((e) => !s.text || e.textContent.includes(s.text)));
        if (seen()) return resolve(performance.now());
        const o = new MutationObserver(() => { if (seen()) { o.disconnect(); resolve(performance.now()); } });
        o.observe(document, { childList: true, subtree: true, characterData: true });
      });`,
  });
  return { browser, context, page: await context.newPage() };
}
