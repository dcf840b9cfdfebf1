// The Python client against a busy service: an all-in-one process holding at most one batch of 100
// events (INGESTION_MAX_EVENTS_IN_FLIGHT from its env), so that clients flushing together meet 429s
// with Retry-After; pytest runs tests/test_busy_stack.py against it (python.test.ts leaves it out).
import { randomBytes } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "../../test/support/database.ts";
import { startAllInOne, type AllInOne } from "../../test/support/processes.ts";
import { ensureVenv, runAsync, venvBin } from "./venv.ts";

const t = suite<{ stack?: AllInOne }>("sdk/python: a busy service, 429 with Retry-After, clients back off");

t.before(async (ctx) => {
  await ensureVenv();
  ctx.stack = await startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `pyb${randomBytes(4).toString("hex")}`,
    INGESTION_MAX_EVENTS_IN_FLIGHT: "100",
  });
});

t.after(async (ctx) => {
  await ctx.stack?.proc.stop();
});

t("pytest tests/test_busy_stack.py", async (ctx) => {
  const r = await runAsync(venvBin("python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_busy_stack.py"], {
    METER_TEST_API_URL: `${ctx.stack!.base}/api/v1`,
  });
  assert.ok(r.ok, r.output);
});

t.run();
