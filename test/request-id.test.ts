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
    } finally {
      await stack.close();
    }
  });
}

test.run();
