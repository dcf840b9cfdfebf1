import { gzipSync } from "node:zlib";
import { readFile } from "node:fs/promises";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { WIDGET_FILE, buildWidgetIfStale } from "./build.ts";

/** What a host page downloads for the widget, at most. */
const GZIP_BUDGET = 15 * 1024;

test("the widget builds into one script under 15 kB gzipped that defines <meter-usage>", async () => {
  await buildWidgetIfStale();
  const js = await readFile(WIDGET_FILE);
  const gzipped = gzipSync(js, { level: 9 }).length;
  assert.ok(gzipped < GZIP_BUDGET, `${gzipped} bytes gzipped`);
  assert.match(js.toString(), /customElements\.define\("meter-usage"/);
  assert.not.match(js.toString(), /^\s*(import|export)\s/m, "a classic script: no module syntax left");
});

test.run();
