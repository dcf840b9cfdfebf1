// A process started with an invalid environment says every problem in one structured log line
// (what a log pipeline reads) and exits 1, before reaching for a database or a port.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { spawnEntry } from "./support/processes.ts";

for (const entry of ["services/tenancy/main.ts", "gateway/main.ts", "cmd/all-in-one.ts"]) {
  test(`${entry}: an invalid environment is one fatal JSON line naming every problem, and exit 1`, async () => {
    const proc = spawnEntry(entry, { PORT: "eighty", LOG_LEVEL: "loud", MONGODB_URL: "mongodb://127.0.0.1:1/" });
    const code = await new Promise<number | null>((resolve) => proc.child.once("exit", resolve));
    assert.is(code, 1, proc.output());
    const line = proc
      .output()
      .split("\n")
      .map((l) => {
        try {
          return JSON.parse(l) as { level: number; msg: string };
        } catch {
          return undefined;
        }
      })
      .find((l) => l?.level === 60);
    assert.ok(line, `a fatal JSON line in:\n${proc.output()}`);
    assert.match(line!.msg, /invalid configuration/);
    assert.match(line!.msg, /PORT/);
    assert.match(line!.msg, /LOG_LEVEL/);
  });
}

test.run();
