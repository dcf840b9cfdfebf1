import { test } from "uvu";
import * as assert from "uvu/assert";
import { capturingLogger } from "./support/log-lines.ts";
import { startTestStack } from "./support/stack.ts";

for (const [way, inProcessRpc] of [["over gRPC", false], ["in-process", true]] as const) {
  test(`the gateway's request id reaches the service's log lines ${way}`, async () => {
    const { logger, lines } = capturingLogger("info");
    const stack = await startTestStack({ logger, inProcessRpc });
    try {
      const res = await stack.api.post("/products", { name: "Traced" }, { headers: { "x-request-id": "trace-7f3a" } });
      assert.is(res.status, 201);
      assert.is(res.headers.get("x-request-id"), "trace-7f3a");
      const serviceLine = lines.find((l) => l.msg === "product created");
      assert.ok(serviceLine, "the tenancy service logged the creation");
      assert.is(serviceLine.requestId, "trace-7f3a");
      assert.is(serviceLine.service, "tenancy");
      const gatewayLine = lines.find((l) => l.service === "gateway" && l.requestId === "trace-7f3a");
      assert.ok(gatewayLine, "the gateway logged the request under the same id");
      assert.not.ok(JSON.stringify(lines).includes(res.body.api_key), "the API key never reaches the logs");
      // The kubelet's readiness asks (every few seconds) are not logged: a request after them is, and theirs are not.
      const base = stack.apiUrl.replace(/\/api\/v1\/?$/, "");
      assert.is((await fetch(`${base}/readyz`, { headers: { "x-request-id": "probe-1" } })).status, 200);
      assert.is((await fetch(`${base}/api/v1/health`, { headers: { "x-request-id": "after-probe" } })).status, 200);
      assert.ok(lines.some((l) => l.service === "gateway" && l.requestId === "after-probe"), "the request after the probe is logged");
      assert.not.ok(lines.some((l) => l.requestId === "probe-1"), "the readiness probe is not");
    } finally {
      await stack.close();
    }
  });
}

test.run();
