// `npm run bench:chaos`: parts of the service killed under load, and one product's trouble
// beside another's traffic. Runs every module of bench/chaos/ in name order; each module's
// default export sets up what it needs and prints its figures.
//   BENCH_CHAOS=database-kill npm run bench:chaos     # only modules whose name contains this
// Each fault scenario prints: time from the kill until a read answers 200 again, requests
// refused meanwhile and how, acknowledged events lost and counted twice (targets 0).
import { readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "chaos");
const filter = process.env.BENCH_CHAOS;
const modules = (await readdir(dir)).filter((f) => f.endsWith(".ts") && (!filter || f.includes(filter))).sort();
if (modules.length === 0) {
  console.error(`no module of bench/chaos matches ${filter}`);
  process.exit(1);
}
console.log(`bench:chaos: ${modules.join(", ")} (shared machine: figures are noisy)`);
for (const file of modules) {
  const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as { default: () => Promise<void> };
  console.log(`\n== ${file.replace(/\.ts$/, "")}`);
  await mod.default();
}
process.exit(0);
