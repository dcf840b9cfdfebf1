// Builds the <meter-usage> widget (gateway/widget/meter-usage.ts) into gateway/widget/dist/widget.js,
// which the gateway serves at /api/v1/portal/widget.js. Run by `npm ci` (prepare), `npm start`
// (prestart) and the tests that load it; rebuilt only when its source changed (a hash in dist).
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const SOURCE = path.join(here, "meter-usage.ts");
export const WIDGET_FILE = path.join(here, "dist", "widget.js");
const HASH_FILE = path.join(here, "dist", ".source-hash");

/** Builds unless dist holds a build of exactly this source; says which it did. */
export async function buildWidgetIfStale(): Promise<"built" | "fresh"> {
  const source = await readFile(SOURCE);
  const hash = createHash("sha256").update(source).update(await readFile(fileURLToPath(import.meta.url))).digest("hex");
  if ((await readFile(HASH_FILE, "utf8").catch(() => "")).trim() === hash) return "fresh";
  const { build } = await import("esbuild");
  await mkdir(path.dirname(WIDGET_FILE), { recursive: true });
  await build({
    entryPoints: [SOURCE],
    outfile: WIDGET_FILE,
    bundle: true,
    minify: true,
    format: "iife",
    target: "es2020",
    legalComments: "none",
    logLevel: "warning",
  });
  await writeFile(HASH_FILE, hash + "\n");
  return "built";
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(`portal widget: ${await buildWidgetIfStale()}`);
  } catch (err) {
    // A machine without the build tools keeps what it has; the API never depends on the widget.
    console.error(`the portal widget could not be built: ${(err as Error).message}`);
  }
}
