import { execFile } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { repoRoot } from "./support/processes.ts";

const run = promisify(execFile);
const bin = (name: string) => path.join(repoRoot, "node_modules", ".bin", name);
const env = { ...process.env, PATH: `${path.join(repoRoot, "node_modules", ".bin")}:${process.env.PATH}` };

async function listFiles(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(full, base)));
    else out.push(path.relative(base, full));
  }
  return out.sort();
}

test("buf lint is clean", async () => {
  // A finding is a line of output and a non-zero exit (which rejects).
  const { stdout } = await run(bin("buf"), ["lint"], { cwd: repoRoot, env });
  assert.is(stdout.trim(), "", "buf lint findings");
});

test("generated code is what buf generate produces from proto/ (not stale)", async () => {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "meter-gen-"));
  try {
    await run(bin("buf"), ["generate", "--output", tmp], { cwd: repoRoot, env });
    const fresh = path.join(tmp, "proto", "gen");
    const committed = path.join(repoRoot, "proto", "gen");
    const files = await listFiles(fresh);
    assert.equal(await listFiles(committed), files, "generated file set differs; run `npm run generate`");
    for (const f of files) {
      const a = await readFile(path.join(fresh, f), "utf8");
      const b = await readFile(path.join(committed, f), "utf8");
      assert.ok(a === b, `${f} is stale; run \`npm run generate\``);
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
});

test.run();
