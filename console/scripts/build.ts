// Builds the console into console/dist when its sources changed since the last build: run by
// `npm ci` (prepare), `npm start` (prestart) and the console's browser test, so a fresh machine
// never serves a missing or stale console. A hash of every input is kept in dist/.source-hash.
import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const HASH_FILE = path.join(root, "dist", ".source-hash");
/** The shared rules module (@meter/rules) is bundled into the console too. */
const RULES = path.join(root, "../rules");

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await files(full)));
    else out.push(full);
  }
  return out;
}

/** A digest of everything the build reads: sources, config and the locked dependency versions. */
export async function sourceHash(): Promise<string> {
  const inputs = [...(await files(path.join(root, "src"))), ...(await files(RULES)), path.join(root, "index.html"), path.join(root, "vite.config.ts"), path.join(root, "package.json"), path.join(root, "../package-lock.json")].sort();
  const hash = createHash("sha256");
  for (const f of inputs) hash.update(path.relative(root, f)).update("\0").update(await readFile(f)).update("\0");
  return hash.digest("hex");
}

/** Builds unless dist holds a build of exactly these sources; says which it did. */
export async function buildConsoleIfStale(log: (m: string) => void = console.log): Promise<"built" | "fresh"> {
  const hash = await sourceHash();
  const previous = await readFile(HASH_FILE, "utf8").catch(() => "");
  if (previous.trim() === hash) return "fresh";
  log("building the console (console/dist) ...");
  const { build } = await import("vite");
  await build({ configFile: path.join(root, "vite.config.ts"), logLevel: "warn" });
  await writeFile(HASH_FILE, hash + "\n");
  log("console built");
  return "built";
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const result = await buildConsoleIfStale();
    if (result === "fresh") console.log("console build is up to date");
  } catch (err) {
    // A machine without the build tools (a production image installed with --omit=dev) keeps
    // whatever build it was given; the API never depends on the console.
    console.error(`the console could not be built: ${(err as Error).message}`);
    process.exitCode = process.env.CONSOLE_BUILD_REQUIRED === "1" ? 1 : 0;
  }
}
