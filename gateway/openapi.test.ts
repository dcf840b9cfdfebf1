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

t("routes an ingest key may not call list 403; those it may call, and public ones, do not", ({ doc }) => {
  const op = (path: string, method: string) => {
    const item = doc.paths[`/api/v1${path}`];
    assert.ok(item, `${path} is in the document`);
    return item[method];
  };
  for (const [path, method] of [["/config/plans", "post"], ["/users", "post"], ["/teams/{team_id}", "get"], ["/products", "get"]] as const) {
    assert.ok(op(path, method)?.responses?.["403"], `${method.toUpperCase()} ${path} lists 403`);
  }
  for (const [path, method] of [["/events/batch", "post"], ["/health", "get"]] as const) {
    assert.not.ok(op(path, method)?.responses?.["403"], `${method.toUpperCase()} ${path} lists no 403`);
  }
});

t.run();
