// The Python client against a busy service: an all-in-one process holding at most one batch of 100
// events (INGESTION_MAX_EVENTS_IN_FLIGHT from its env), so that clients flushing together meet 429s
// with Retry-After; pytest runs tests/test_busy_stack.py against it (python.test.ts leaves it out).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { AllInOne } from "../../test/support/processes.ts";
import { pytest, withPythonStack } from "./all-in-one.ts";

const t = suite<{ stack?: AllInOne }>("sdk/python: a busy service, 429 with Retry-After, clients back off");
withPythonStack(t, "pyb", { INGESTION_MAX_EVENTS_IN_FLIGHT: "100" });

t("pytest tests/test_busy_stack.py", async (ctx) => {
  const r = await pytest(["tests/test_busy_stack.py"], { METER_TEST_API_URL: `${ctx.stack!.base}/api/v1` });
  assert.ok(r.ok, r.output);
});

t.run();
