// Runs every *.test.ts file of the repository with uvu in one process, then prints the
// plain summary line "N passed, N failed". Arguments filter files by substring:
//   npm test -- tenancy gateway/routes
import { readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { stopTestDatabase } from "./support/database.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SEARCH = ["lib", "services", "gateway", "cmd", "test", "sdk"];
const WATCHDOG_MS = Number(process.env.TEST_WATCHDOG_MS ?? 45 * 60_000);

async function findTests(dir: string, out: string[] = []): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.name === "node_modules" || e.name.startsWith(".")) continue;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) await findTests(full, out);
    else if (e.name.endsWith(".test.ts")) out.push(full);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = (await Promise.all(SEARCH.map((d) => findTests(path.join(root, d)))))
  .flat()
  .map((f) => path.relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

if (files.length === 0) {
  console.error(`no test files match ${filters.join(" ")}`);
  process.exit(1);
}

// A hung test must not hang CI: fail loudly instead.
setTimeout(() => {
  console.error(`\ntest run exceeded ${WATCHDOG_MS} ms; aborting`);
  process.exit(1);
}, WATCHDOG_MS).unref();

// Tee uvu's output to read its totals for the summary line.
let output = "";
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  output += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
  return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stdout.write;

(globalThis as Record<string, unknown>).UVU_DEFER = 1;
const uvu = await import("uvu");
const queue = (globalThis as unknown as { UVU_QUEUE: unknown[][] }).UVU_QUEUE;
for (const [i, file] of files.entries()) {
  (globalThis as Record<string, unknown>).UVU_INDEX = i;
  queue.push([file]);
  await import(pathToFileURL(path.join(root, file)).href);
}
await uvu.exec(false);

process.stdout.write = write;
const plain = output.replace(/\x1b\[[0-9;]*m/g, "");
const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1] ?? 0);
const passed = Number(/Passed:\s+(\d+)/.exec(plain)?.[1] ?? 0);
const failed = total - passed;
console.log(`${passed} passed, ${failed} failed`);
await stopTestDatabase();
process.exit(failed > 0 || total === 0 || process.exitCode ? 1 : 0);
