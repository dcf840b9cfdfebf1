import { createConfig, lintFromString } from "@redocly/openapi-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startTestStack, type TestStack } from "../test/support/stack.ts";

// The served document feeds generated clients (the console's types among them): it must pass
// Redocly's recommended rules, errors and warnings alike, and name every operation.
const t = suite<{ stack: TestStack; doc: any }>("OpenAPI document");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  ctx.doc = (await ctx.stack.api.get("/openapi.json")).body;
});
t.after(async ({ stack }) => stack.close());

t("is clean under Redocly's recommended rules", async ({ doc }) => {
  const problems = await lintFromString({
    source: JSON.stringify(doc),
    absoluteRef: "openapi.json",
    config: await createConfig({ extends: ["recommended"] }),
  });
  const found = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
  assert.equal(found, []);
});

t("every operation has a unique camelCase operationId", ({ doc }) => {
  const ids: string[] = [];
  for (const [route, ops] of Object.entries<Record<string, { operationId?: string }>>(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      assert.ok(op.operationId, `${method.toUpperCase()} ${route} has an operationId`);
      assert.match(op.operationId!, /^[a-z][A-Za-z]+$/, `${op.operationId} is camelCase`);
      ids.push(op.operationId!);
    }
  }
  assert.is(new Set(ids).size, ids.length, "operationIds are unique");
});

t.run();
