// Every relative link of the repository's Markdown resolves: the file (or folder) it names
// exists, and a `#fragment` into a Markdown file names one of its headings (GitHub's anchors).
// Links to the web are not followed; links inside code are not links.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "uvu";
import * as assert from "uvu/assert";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SKIP = new Set(["node_modules", ".git", ".venv", "dist", ".cache", "screenshots", "data", "gen", "build"]);
// Folders the root .gitignore names (e.g. tools/embedded-db/bin/, the FerretDB sources a build
// unpacks there): their Markdown is not the repository's.
const IGNORED = readFileSync(path.join(root, ".gitignore"), "utf8")
  .split("\n")
  .filter((l) => l.endsWith("/") && l.slice(0, -1).includes("/"))
  .map((l) => path.join(root, l.slice(0, -1)));

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith(".") || SKIP.has(e.name)) return [];
    const p = path.join(dir, e.name);
    if (IGNORED.includes(p)) return [];
    if (e.isDirectory()) return markdownFiles(p);
    return e.name.endsWith(".md") ? [p] : [];
  });
}

/** The text without fenced blocks and inline code, where `](...)` is not a link. */
function prose(md: string): string {
  return md.replace(/^(```|~~~)[\s\S]*?^\1/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/ /g, "-");
}

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const md = readFileSync(file, "utf8").replace(/^(```|~~~)[\s\S]*?^\1/gm, "");
  for (const m of md.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = anchor(m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1"));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

test("anchors follow GitHub's rule", () => {
  assert.is(anchor("Soak: a year, then late facts over two years (`npm run bench:soak`)"), "soak-a-year-then-late-facts-over-two-years-npm-run-benchsoak");
  assert.is(anchor("No noisy neighbours"), "no-noisy-neighbours");
});

test("every relative link in the Markdown files resolves, fragment included", () => {
  const broken: string[] = [];
  const files = markdownFiles(root);
  assert.ok(files.length > 10, "found the Markdown files");
  for (const file of files) {
    for (const m of prose(readFileSync(file, "utf8")).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [rel, fragment] = target.split("#", 2) as [string, string | undefined];
      const dest = rel === "" ? file : path.resolve(path.dirname(file), decodeURIComponent(rel));
      const where = `${path.relative(root, file)}: ${target}`;
      if (!existsSync(dest)) {
        broken.push(`${where} (no such file)`);
        continue;
      }
      if (fragment && dest.endsWith(".md") && statSync(dest).isFile() && !anchorsOf(dest).has(fragment)) {
        broken.push(`${where} (no such heading)`);
      }
    }
  }
  assert.equal(broken, [], `broken links:\n${broken.join("\n")}`);
});

test.run();
