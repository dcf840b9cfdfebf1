import { Writable } from "node:stream";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { createLogger } from "@meter/lib/logger";
import { startTestStack } from "./support/stack.ts";

test("the gateway's request id reaches the service's log lines over gRPC", async () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  const stack = await startTestStack({ logger: createLogger("test", "info", sink) });
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

test.run();
