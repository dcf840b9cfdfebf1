import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "uvu";
import * as assert from "uvu/assert";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Every server process's entry point: the all-in-one, the gateway's and each service's main. */
const entries = [
  "cmd/all-in-one.ts",
  "gateway/main.ts",
  ...readdirSync(path.join(root, "services")).map((s) => `services/${s}/main.ts`),
];

test("every server entry point applies the V8 settings before anything else it imports", () => {
  assert.ok(entries.length >= 7, `entry points found: ${entries.join(", ")}`);
  for (const entry of entries) {
    const firstImport = readFileSync(path.join(root, entry), "utf8")
      .split("\n")
      .find((line) => line.startsWith("import "));
    assert.is(firstImport, 'import "@meter/lib/v8-flags";', entry);
  }
});

test.run();
