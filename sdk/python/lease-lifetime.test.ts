// The Python client's lease under a call longer than its lifetime: an all-in-one process whose
// leases lapse 200 ms after their lifetime (LEASE_GRACE_MS), so that a one-second lease outlived
// twice makes a short test; pytest runs tests/test_lease_lifetime_stack.py against it
// (python.test.ts leaves it out).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { AllInOne } from "../../test/support/processes.ts";
import { pytest, withPythonStack } from "./all-in-one.ts";

const t = suite<{ stack?: AllInOne }>("sdk/python: a lease kept under a call longer than its lifetime");
withPythonStack(t, "pyl", { LEASE_GRACE_MS: "200" });

t("pytest tests/test_lease_lifetime_stack.py", async (ctx) => {
  const r = await pytest(["tests/test_lease_lifetime_stack.py"], { METER_TEST_API_URL: `${ctx.stack!.base}/api/v1` });
  assert.ok(r.ok, r.output);
});

t.run();
